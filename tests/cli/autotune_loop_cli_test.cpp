// The real autotune-loop and bench-best executables, end to end on the replay backend
// (no GPU): usage and exit codes, a run with the offline proposer, a run with an LLM
// served by a loopback server, the history command, bench-best on a run's results, config
// files, a run seeded with an earlier one's winners (--warm-start), signals. bench-best over
// many results and its paired rounds: bench_best_cli_test.cpp.

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/replay/recording.h"
#include "tests/cli/history_reader.h"
#include "tests/cli/process.h"
#include "tests/llm/loopback_server.h"
#include "tests/llm/test_support.h"
#include "tests/test_paths.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace tilesmith::testing;

std::vector<std::string> loop_args(const fs::path& results, std::vector<std::string> extra) {
  std::vector<std::string> a{autotune_loop_exe().string(), "--backend", "replay", "--replay-file",
                             rtx3090_recording().string(), "--results", results.string(), "--progress", "plain"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

double num(const CsvRow& r, const std::string& col) { return std::stod(r.at(col)); }

// ---------------------------------------------------------------- usage and exit codes

TEST(CliUsage, HelpExitsZeroAndExplainsTheFlags) {
  const fs::path dir = fresh_dir("cli_help");
  auto r = run_process({autotune_loop_exe().string(), "--help"}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* flag : {"--max-evals", "--hours", "--patience", "--generations", "--candidates", "--llm-url",
                           "--llm-model", "--llm-api-key-env", "--provider", "--proposer", "--results", "--seed",
                           "--config", "--backend", "--replay-file", "--log-file", "--warm-start PATH", "Examples:",
                           "Exit codes"})
    EXPECT_TRUE(contains(r.out, flag)) << flag;
  auto b = run_process({bench_best_exe().string(), "--help"}, dir);
  EXPECT_EQ(b.exit_code, 0) << b.err;
  for (const char* flag : {"--best-config", "--results", "--drift-tolerance", "--config", "Exit codes"})
    EXPECT_TRUE(contains(b.out, flag)) << flag;
  // No arguments at all: the help, and exit code 2 (nothing to run).
  auto none = run_process({autotune_loop_exe().string()}, dir);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(contains(none.out, "Usage")) << none.out;
  auto h = run_process({autotune_loop_exe().string(), "history", "--help"}, dir);
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_TRUE(contains(h.out, "--top"));
}

TEST(CliUsage, ListDevicesSaysWhenThereIsNoGpu) {
  const fs::path dir = fresh_dir("cli_list");
  auto r = run_process({autotune_loop_exe().string(), "--list-devices"}, dir);
  if (r.exit_code == 0) {
    EXPECT_TRUE(contains(r.out, "[0]")) << "exit 0 means a GPU was listed:\n" << r.out;
  } else {
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "No GPU found")) << r.out;
  }
}

// Bad input, flag by flag and file by file, is tests/cli/bad_input_test.cpp's table.

TEST(CliUsage, GpuBackendWithoutAGpuExitsThree) {
  const fs::path dir = fresh_dir("cli_nogpu");
  auto probe = run_process({autotune_loop_exe().string(), "--list-devices"}, dir);
  if (probe.exit_code == 0) GTEST_SKIP() << "this machine has a GPU";
  auto r = run_process({autotune_loop_exe().string(), "--m", "256", "--n", "256", "--k", "256", "--results",
                        (dir / "r").string(), "--max-evals", "2"},
                       dir);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "no GPU found")) << r.err;
  auto b = run_process({bench_best_exe().string(), "--m", "256", "--n", "256", "--k", "256", "--config",
                        "{\"BLOCK_M\":64,\"BLOCK_N\":64,\"BLOCK_K\":8,\"THREAD_M\":4,\"THREAD_N\":4}"},
                       dir);
  EXPECT_EQ(b.exit_code, 3) << b.err;
}

// ---------------------------------------------------------------- runs

// --objective energy on a device without an energy counter (the replay backend has
// none): the run stops at its first measurement, exit code 2, saying why and what to do;
// the folder keeps its row and, tuned for energy now, refuses a run for time. The config
// file takes the same key; a value not offered is refused.
TEST(CliRun, AnObjectiveTheDeviceCannotMeasureExitsTwoAndSaysWhatToDo) {
  REQUIRE_RECORDING();
  const fs::path dir = fresh_dir("cli_objective");
  auto help = run_process({autotune_loop_exe().string(), "--help"}, dir);
  EXPECT_TRUE(contains(help.out, "--objective")) << help.out;
  EXPECT_TRUE(contains(help.out, "edp (joules x seconds)")) << help.out;

  const fs::path results = dir / "results";
  auto r = run_process(loop_args(results, {"--objective", "energy", "--max-evals", "8", "--candidates", "4"}), dir);
  const std::string said = r.out + r.err;
  EXPECT_EQ(r.exit_code, 2) << said;
  EXPECT_TRUE(contains(said, "--objective energy needs the energy of each launch")) << said;
  EXPECT_TRUE(contains(said, "Tune for --objective time instead")) << said;
  EXPECT_FALSE(contains(said, "run the same command again")) << "resuming would stop again: " << said;
  const auto rows = read_csv_rows(results / "history.csv");
  EXPECT_EQ(std::count_if(rows.begin(), rows.end(), [](const CsvRow& row) { return row.at("outcome") == "ok"; }), 1);

  auto time = run_process(loop_args(results, {"--objective", "time", "--max-evals", "8"}), dir);
  EXPECT_EQ(time.exit_code, 2) << time.out << time.err;
  EXPECT_TRUE(contains(time.err, "was tuned for --objective energy")) << time.err;
  EXPECT_EQ(read_csv_rows(results / "history.csv").size(), rows.size()) << "a refused run measures nothing";

  const fs::path file = dir / "edp.toml";
  std::ofstream(file) << "objective = \"edp\"\nmax-evals = 4\n";
  auto c = run_process(loop_args(dir / "edp", {"--config", file.string()}), dir);
  EXPECT_EQ(c.exit_code, 2) << c.out << c.err;
  EXPECT_TRUE(contains(c.out + c.err, "--objective edp needs the energy of each launch")) << c.out << c.err;

  auto bad = run_process(loop_args(dir / "bad", {"--objective", "power"}), dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(contains(bad.err, "power not in {time,energy,edp}")) << bad.err;
}

TEST(CliRun, ReplayWithTheOfflineProposerThenHistoryAndBenchBest) {
  REQUIRE_RECORDING();
  const fs::path dir = fresh_dir("cli_offline");
  const fs::path results = dir / "results";
  auto r = run_process(loop_args(results, {"--generations", "6", "--candidates", "8", "--seed", "3"}), dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "stopped, generation budget reached")) << r.out;
  EXPECT_TRUE(contains(r.out, "Top 5 configs")) << r.out;
  EXPECT_TRUE(contains(r.out, "Outcomes by proposer")) << r.out;
  EXPECT_TRUE(contains(r.out, "measuring")) << r.out;
  EXPECT_TRUE(contains(r.out, "Re-timed finalists")) << r.out;
  EXPECT_TRUE(contains(r.err, "progress: gen")) << "plain progress lines when not a terminal\n" << r.err;
  EXPECT_TRUE(fs::exists(results / "autotune-loop.log"));

  auto rows = read_csv_rows(results / "history.csv");
  ASSERT_EQ(rows.size(), 48u);
  std::set<std::string> keys;
  std::map<int, double> best_by_generation;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const CsvRow& row = rows[i];
    EXPECT_EQ(row.at("schema_version"), "5");
    EXPECT_FALSE(row.at("host").empty()) << "every row names its host";
    EXPECT_EQ(row.at("power_w") + row.at("sm_clock_mhz") + row.at("throttle_reasons") +
                  row.at("joules_per_launch"),
              "")
        << "a replayed recording has no telemetry";
    EXPECT_EQ(row.at("device"), "replay:0") << "in-process replay: one device";
    EXPECT_EQ(row.at("row"), std::to_string(i + 1));
    EXPECT_EQ(row.at("stage"), "evaluation");
    EXPECT_EQ(row.at("proposer"), "evolve");
    EXPECT_EQ(row.at("template"), "gemm_RTX_3090");
    EXPECT_EQ(row.at("m"), "4096");
    EXPECT_EQ(row.at("device_name"), "NVIDIA GeForce RTX 3090");
    EXPECT_EQ(row.at("backend"), "replay");
    EXPECT_FALSE(row.at("timestamp").empty());
    EXPECT_EQ(row.at("timestamp").back(), 'Z');
    EXPECT_TRUE(keys.insert(row.at("template") + "/" + row.at("config_hash")).second) << "row " << i + 1;
    EXPECT_TRUE(json::parse(row.at("config"), nullptr, false).is_object()) << row.at("config");
    const int gen = std::stoi(row.at("generation"));
    EXPECT_EQ(gen, static_cast<int>(i / 8));
    if (row.at("outcome") == "ok") {
      const double ms = num(row, "median_ms");
      EXPECT_GT(num(row, "tflops"), 0);
      EXPECT_LE(num(row, "min_ms"), ms);
      EXPECT_LE(num(row, "p20_ms"), num(row, "p80_ms"));
      if (!best_by_generation.count(gen) || ms < best_by_generation[gen]) best_by_generation[gen] = ms;
    } else {
      EXPECT_EQ(row.at("median_ms"), "");
    }
  }
  double running = 1e9, first = 0;
  for (const auto& [gen, ms] : best_by_generation) {
    if (first == 0) first = ms;
    running = std::min(running, ms);
  }
  EXPECT_LT(running, first) << "the best improves over the generations";

  // best_config.json: one entry, the re-timed winner, pointing at its history row.
  json best = json::parse(slurp(results / "best_config.json"));
  EXPECT_EQ(best["schema"], "tilesmith.best_config/1");
  ASSERT_EQ(best["entries"].size(), 1u);
  const json& e = best["entries"][0];
  EXPECT_EQ(e["template"]["name"], "gemm_RTX_3090");
  EXPECT_EQ(e["metrics"]["source"], "retime");
  EXPECT_EQ(e["retime"].size(), 3u);
  // The re-timing's verdict: the recording's finalists either separate or tie.
  ASSERT_TRUE(e["certification"].is_object()) << e.dump(2);
  const std::string verdict = e["certification"]["verdict"];
  EXPECT_TRUE(verdict == "certified" || verdict == "tie") << verdict;
  EXPECT_TRUE(contains(r.out, std::string("winner (") + verdict + ")")) << r.out;
  const auto hrow = e["provenance"]["history_row"].get<std::size_t>();
  ASSERT_GE(hrow, 1u);
  ASSERT_LE(hrow, rows.size());
  EXPECT_EQ(json::parse(rows[hrow - 1].at("config")), e["config"]);
  EXPECT_LE(num(rows[hrow - 1], "median_ms"), running * 1.05) << "the winner is one of the fastest";

  // The history command.
  auto h = run_process({autotune_loop_exe().string(), "history", "--results", results.string(), "--top", "3"}, dir);
  ASSERT_EQ(h.exit_code, 0) << h.err;
  for (const char* part : {"48 rows", "Top 3 configs", "Outcomes by proposer", "Outcomes by generation", "Best so far"})
    EXPECT_TRUE(contains(h.out, part)) << part << "\n" << h.out;
  auto hj = run_process({autotune_loop_exe().string(), "history", "--results", results.string(), "--top", "3", "--json"}, dir);
  ASSERT_EQ(hj.exit_code, 0);
  json report = json::parse(hj.out);
  ASSERT_EQ(report["top"].size(), 3u);
  EXPECT_LE(report["top"][0]["median_ms"].get<double>(), report["top"][1]["median_ms"].get<double>());
  EXPECT_DOUBLE_EQ(report["top"][0]["median_ms"].get<double>(), running);
  EXPECT_EQ(report["outcomes_by_generation"].size(), 6u);
  EXPECT_DOUBLE_EQ(report["best_so_far"].back()["median_ms"].get<double>(), running);

  // bench-best reproduces the entry on the same (replayed) device.
  const std::vector<std::string> bench{bench_best_exe().string(), "--backend", "replay", "--replay-file",
                                       rtx3090_recording().string(), "--results", results.string()};
  auto b = run_process(bench, dir);
  EXPECT_EQ(b.exit_code, 0) << b.out << b.err;
  EXPECT_TRUE(contains(b.out, "recorded")) << b.out;
  EXPECT_TRUE(contains(b.out, "now")) << b.out;
  EXPECT_TRUE(contains(b.out, "status    ok")) << b.out;
  EXPECT_TRUE(contains(b.out, "re-timed  " + verdict + " after")) << b.out;
  auto bj_args = bench;
  bj_args.push_back("--json");
  auto bj = run_process(bj_args, dir);
  ASSERT_EQ(bj.exit_code, 0) << bj.err;
  json bjson = json::parse(bj.out);
  ASSERT_EQ(bjson["entries"].size(), 1u);
  EXPECT_EQ(bjson["entries"][0]["status"], "ok");
  EXPECT_LT(std::fabs(bjson["entries"][0]["drift"].get<double>()), 0.10);
  EXPECT_EQ(bjson["entries"][0]["certification"], e["certification"]);
  EXPECT_TRUE(bjson["entries"][0]["within_recorded_interval"].is_boolean()) << bj.out;
  EXPECT_TRUE(bjson["entries"][0]["within_recorded_range"].is_boolean()) << bj.out;

  // Drift beyond a zero tolerance is flagged, and fails only with --fail-on-drift.
  auto strict = bench;
  strict.insert(strict.end(), {"--drift-tolerance", "0", "--fail-on-drift"});
  auto s = run_process(strict, dir);
  if (bjson["entries"][0]["drift"].get<double>() != 0) {
    EXPECT_EQ(s.exit_code, 1) << s.out;
    EXPECT_TRUE(contains(s.out, "DRIFT")) << s.out;
  }

  // A template that changed since the entry was recorded, and a device with no entry.
  json changed = best;
  changed["entries"][0]["template"]["source_hash"] = "0000000000000000";
  std::ofstream(dir / "changed.json") << changed.dump(2);
  auto c = run_process({bench_best_exe().string(), "--backend", "replay", "--replay-file", rtx3090_recording().string(),
                        "--best-config", (dir / "changed.json").string()},
                       dir);
  EXPECT_EQ(c.exit_code, 4) << c.out << c.err;
  EXPECT_TRUE(contains(c.out, "changed since it was recorded")) << c.out;
  json other = best;
  other["entries"][0]["device"]["name"] = "AMD Instinct MI300X";
  std::ofstream(dir / "other.json") << other.dump(2);
  auto o = run_process({bench_best_exe().string(), "--backend", "replay", "--replay-file", rtx3090_recording().string(),
                        "--best-config", (dir / "other.json").string()},
                       dir);
  EXPECT_EQ(o.exit_code, 4) << o.out << o.err;
  EXPECT_TRUE(contains(o.err, "no entry for this device")) << o.err;
  EXPECT_TRUE(contains(o.err, "AMD Instinct MI300X")) << o.err;

  // A folder recorded on another device is refused, with nothing changed.
  const fs::path titan = recordings_dir() / "gemm_RTX_Titan.json.gz";
  if (fs::exists(titan)) {
    const std::string before = slurp(results / "history.csv");
    auto t = run_process({autotune_loop_exe().string(), "--backend", "replay", "--replay-file", titan.string(),
                          "--results", results.string(), "--max-evals", "100"},
                         dir);
    EXPECT_EQ(t.exit_code, 2) << t.err;
    EXPECT_TRUE(contains(t.err, "was recorded on NVIDIA GeForce RTX 3090")) << t.err;
    EXPECT_EQ(slurp(results / "history.csv"), before);
  }
}

// An OpenAI-compatible server on loopback that answers with candidates from the replayed
// space: mostly recorded configurations, plus two a real model might send by mistake.
class FakeLlmServer {
 public:
  explicit FakeLlmServer(const replay::Recording& rec) : rec_(rec) {
    server_.set_handler([this](const httplib::Request& req, httplib::Response& res) {
      json body = json::parse(req.body, nullptr, false);
      if (body.is_discarded() || !body.contains("messages")) {
        res.status = 400;
        return;
      }
      json candidates = json::array();
      std::mt19937_64 rng(++calls_);
      std::uniform_int_distribution<std::size_t> pick(0, rec_.records().size() - 1);
      const auto& params = rec_.space().parameters();
      for (int added = 0; added < 6;) {
        const auto& record = rec_.records()[pick(rng)];
        if (record.outcome != Outcome::kOk) continue;
        json c{{"rationale", "wide tiles, vector loads"}};
        for (std::size_t i = 0; i < params.size(); ++i) c[params[i].name] = record.point[i];
        candidates.push_back(c);
        ++added;
      }
      json out_of_domain = candidates[0];
      out_of_domain["VWM"] = 3;
      json a_string = candidates[1];
      a_string["MWG"] = "64";
      candidates.push_back(out_of_domain);
      candidates.push_back(a_string);
      res.set_content(openai_reply(json{{"candidates", candidates}}.dump()), "application/json");
    });
  }
  std::string url() const { return server_.url() + "/v1"; }
  std::size_t requests() const { return server_.request_count(); }
  bool ok() const { return server_.ok(); }

 private:
  const replay::Recording& rec_;
  LoopbackServer server_;
  std::atomic<int> calls_{0};
};

TEST(CliRun, ReplayWithAnLlmOnLoopback) {
  REQUIRE_RECORDING();
  auto rec = replay::Recording::load(rtx3090_recording());
  ASSERT_TRUE(rec.ok()) << rec.status().to_string();
  FakeLlmServer server(**rec);
  ASSERT_TRUE(server.ok());
  const fs::path dir = fresh_dir("cli_llm");
  const fs::path results = dir / "results";
  auto r = run_process(loop_args(results, {"--generations", "4", "--candidates", "6", "--llm-url", server.url(),
                                           "--llm-model", "test-model", "--llm-api-key-env", "TILESMITH_TEST_NO_KEY"}),
                       dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_GE(server.requests(), 3u) << "generations 1-3 ask the LLM";
  EXPECT_TRUE(fs::exists(results / "llm_log.jsonl"));

  auto rows = read_csv_rows(results / "history.csv");
  int llm_ok = 0, llm_rejected = 0, offline = 0;
  std::set<std::string> keys;
  for (const auto& row : rows) {
    const int gen = std::stoi(row.at("generation"));
    if (row.at("stage") == "evaluation") {
      EXPECT_TRUE(keys.insert(row.at("config_hash")).second) << "evaluated twice: " << row.at("config");
    }
    if (gen == 0) {
      EXPECT_EQ(row.at("proposer"), "evolve") << "generation 0 is seeded offline";
      ++offline;
      continue;
    }
    if (row.at("proposer") != "llm") continue;
    EXPECT_EQ(row.at("model"), "test-model");
    if (row.at("stage") == "evaluation" && row.at("outcome") == "ok") {
      ++llm_ok;
      EXPECT_EQ(row.at("rationale"), "wide tiles, vector loads");
    }
    if (row.at("stage") == "proposal") {
      ++llm_rejected;
      EXPECT_EQ(row.at("outcome"), "invalid");
      EXPECT_FALSE(row.at("message").empty());
    }
  }
  EXPECT_EQ(offline, 6);
  EXPECT_GE(llm_ok, 12) << "the LLM's candidates are evaluated in generations 1-3";
  EXPECT_GE(llm_rejected, 3) << "its out-of-domain and string values are recorded with the reason";
  json best = json::parse(slurp(results / "best_config.json"));
  ASSERT_EQ(best["entries"].size(), 1u);
  EXPECT_TRUE(contains(r.out, "llm:test-model")) << r.out;
}

TEST(CliRun, SettingsFromAConfigFileAndTheCommandLineWins) {
  REQUIRE_RECORDING();
  const fs::path dir = fresh_dir("cli_config");
  {
    std::ofstream toml(dir / "tune.toml");
    toml << "# settings a user repeats\n"
         << "backend = \"replay\"\n"
         << "replay-file = \"" << rtx3090_recording().string() << "\"\n"
         << "candidates = 4\n"
         << "generations = 2\n"
         << "seed = 5\n"
         << "retime = 0\n"
         << "results = \"" << (dir / "a").string() << "\"\n";
  }
  auto r = run_process({autotune_loop_exe().string(), "--config", (dir / "tune.toml").string()}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_csv_rows(dir / "a" / "history.csv").size(), 8u);
  auto r2 = run_process({autotune_loop_exe().string(), "--config", (dir / "tune.toml").string(), "--generations", "3",
                         "--results", (dir / "b").string()},
                        dir);
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_EQ(read_csv_rows(dir / "b" / "history.csv").size(), 12u);
  json best = json::parse(slurp(dir / "b" / "best_config.json"));
  EXPECT_EQ(best["entries"][0]["metrics"]["source"], "search") << "retime = 0 keeps the search's measurement";
}

// ---------------------------------------------------------------- --warm-start
// A second run measures the first run's winner before searching, skips seeds that do not
// fit, resumes as if never stopped; a missing or garbage file is refused before anything
// starts.

json config_of(const CsvRow& row) { return json::parse(row.at("config")); }

// The earlier run's folder, shared by the --warm-start tests (each run takes a few seconds).
const fs::path& earlier_run() {
  static const fs::path results = [] {
    const fs::path dir = fresh_dir("cli_warm_first");
    auto r = run_process(loop_args(dir / "results", {"--generations", "3", "--candidates", "8", "--seed", "3"}), dir);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return dir / "results";
  }();
  return results;
}

TEST(CliWarmStart, TheSecondRunMeasuresTheFirstRunsWinnerFirst) {
  REQUIRE_RECORDING();
  const json first_best = json::parse(slurp(earlier_run() / "best_config.json"));
  ASSERT_EQ(first_best["entries"].size(), 1u);
  const json winner = first_best["entries"][0]["config"];

  const fs::path dir = fresh_dir("cli_warm_second");
  auto r = run_process(loop_args(dir / "results", {"--generations", "3", "--candidates", "4", "--seed", "9",
                                                   "--warm-start", earlier_run().string()}),
                       dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "stopped, generation budget reached")) << r.out;
  EXPECT_TRUE(contains(r.err, "warm start: 1 seed(s) for gemm_RTX_3090")) << r.err;

  auto rows = read_csv_rows(dir / "results" / "history.csv");
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("proposer"), "warm-start");
  EXPECT_EQ(rows[0].at("model"), "");
  EXPECT_EQ(rows[0].at("generation"), "0") << "a generation of the seed alone";
  EXPECT_EQ(rows[0].at("stage"), "evaluation");
  EXPECT_EQ(rows[0].at("outcome"), "ok");
  EXPECT_EQ(config_of(rows[0]), winner);
  EXPECT_EQ(rows[0].at("rationale"),
            "warm start: winner for 4096x4096x4096 fp32 NN in " + (earlier_run() / "best_config.json").string());
  for (std::size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].at("proposer"), "evolve") << "row " << i + 1;
    EXPECT_NE(config_of(rows[i]), winner) << "row " << i + 1 << ": the seed is not measured twice";
  }
  EXPECT_EQ(rows.size(), 1u + 2 * 4);
  // The summary's outcome table names the seed's source.
  const auto table = r.out.find("Outcomes by proposer");
  ASSERT_NE(table, std::string::npos) << r.out;
  EXPECT_TRUE(contains(r.out.substr(table), "warm-start")) << r.out;
  json best = json::parse(slurp(dir / "results" / "best_config.json"));
  ASSERT_EQ(best["entries"].size(), 1u);
  const std::string journal = slurp(dir / "results" / "journal.jsonl");
  EXPECT_TRUE(contains(journal, "\"warm_start\":[\"" + earlier_run().string() + "\"]")) << "the session records it";
}

// A problem set on replay with recordings of the same kernels at each problem (the Llama-3-8B
// decode recordings): the templates are named after the kernels, as on a GPU, so a later
// problem's search starts from the winners its tuned neighbours found for the same kernel
// (warm-start rows), each answered by the later problem's own recording.
TEST(CliWarmStart, AProblemSetOnReplayCarriesWinnersToTheSameKernelAtTheNextProblem) {
  const fs::path rec = source_dir() / "data" / "recordings" / "llama3_8b_bf16_decode";
  const fs::path set = source_dir() / "data" / "problems" / "llama3_8b_bf16_decode.json";
  const fs::path dir = fresh_dir("cli_set_replay_warm");
  auto r = run_process({autotune_loop_exe().string(), "--backend", "replay", "--replay-file", rec.string(),
                        "--problems", set.string(), "--max-evals", "240", "--retime", "0", "--seed", "3",
                        "--results", (dir / "results").string(), "--progress", "none"},
                       dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  int warm_rows = 0, problems_warmed = 0, winner_rows = 0, prior_rows = 0, carried_rows = 0;
  std::set<std::string> kernels{"gemm_decode", "gemm_gemv", "gemm_hmma", "gemm_tma_half", "gemm_wgmma_half"};
  for (const char* problem : {"qkv_t16", "attn_out_t16", "gate_up_t16", "down_t16", "qkv_t128", "attn_out_t128",
                              "gate_up_t128", "down_t128"}) {
    auto rows = read_csv_rows(dir / "results" / problem / "history.csv");
    int here = 0;
    for (const auto& row : rows) {
      EXPECT_TRUE(kernels.count(row.at("template"))) << problem << ": " << row.at("template");
      if (row.at("proposer") != "warm-start") continue;
      ++here;
      EXPECT_EQ(row.at("outcome"), "ok") << problem << ": " << row.at("message");
      // A neighbour's winner, or one of the fastest of its history (tuner/search/prior.h).
      const bool winner = contains(row.at("rationale"), "warm start: winner for");
      const bool prior = contains(row.at("rationale"), "warm start: prior: ") &&
                         contains(row.at("rationale"), "history.csv");
      EXPECT_TRUE(winner || prior) << row.at("rationale");
      winner_rows += winner;
      prior_rows += prior;
      // Carried to this problem by their blocks' waves, by the geometry of the kernel of the
      // recordings' name on the GPU they recorded (as a set on that GPU does).
      carried_rows += prior && contains(row.at("rationale"), "by its blocks' waves");
    }
    warm_rows += here;
    problems_warmed += here > 0;
  }
  EXPECT_GE(problems_warmed, 4) << "later problems start from their neighbours' winners";
  EXPECT_GE(warm_rows, 8);
  EXPECT_GE(winner_rows, 4);
  EXPECT_GE(prior_rows, 4) << "and from more of their neighbours' histories than the winners";
  EXPECT_EQ(carried_rows, prior_rows);

  // bench-best over the set's folder answers each entry from its own problem's recording,
  // though several problems' templates share a name.
  auto bench = run_process({bench_best_exe().string(), "--backend", "replay", "--replay-file", rec.string(),
                            "--results", (dir / "results").string(), "--fastest-only", "--rounds", "0", "--json"},
                           dir);
  ASSERT_EQ(bench.exit_code, 0) << bench.out << bench.err;
  const json b = json::parse(bench.out);
  ASSERT_EQ(b["entries"].size(), 8u) << bench.out;
  for (const auto& e : b["entries"]) {
    EXPECT_EQ(e.value("status", ""), "ok") << e.dump();
    EXPECT_TRUE(kernels.count(e.value("template", ""))) << e.dump();
  }

  // The same folder as an earlier version wrote it (each recording's template named after its
  // file): resuming says so instead of leaving those rows behind under the old names.
  for (const auto& problem_dir : fs::directory_iterator(dir / "results")) {
    if (!problem_dir.is_directory()) continue;
    const std::string problem = problem_dir.path().filename().string();
    for (const auto& file : fs::directory_iterator(problem_dir.path())) {
      if (!file.is_regular_file()) continue;
      std::string text = slurp(file.path());
      for (const std::string& k : kernels)
        text = std::regex_replace(text, std::regex("\\b" + k + "\\b"), k + "_" + problem + "_H200");
      std::ofstream(file.path(), std::ios::trunc) << text;
    }
  }
  auto again = run_process({autotune_loop_exe().string(), "--backend", "replay", "--replay-file", rec.string(),
                            "--problems", set.string(), "--max-evals", "300", "--retime", "0", "--seed", "3",
                            "--results", (dir / "results").string(), "--progress", "none"},
                           dir);
  EXPECT_EQ(again.exit_code, 2) << again.out << again.err;
  EXPECT_TRUE(contains(again.out + again.err, "which this run names gemm_")) << again.out << again.err;
  EXPECT_TRUE(contains(again.out + again.err, "Give this run its own --results folder")) << again.err;
}

// Seeds of another device come after this one's, invalid ones are skipped with a warning,
// and a run stopped after the first seed resumes with the second, as if never stopped.
TEST(CliWarmStart, OrderSkipsAndResume) {
  REQUIRE_RECORDING();
  const json first_best = json::parse(slurp(earlier_run() / "best_config.json"));
  const json& same_device = first_best["entries"][0];
  auto first_rows = read_csv_rows(earlier_run() / "history.csv");
  json other_config;
  for (const auto& row : first_rows)
    if (row.at("outcome") == "ok" && config_of(row) != same_device["config"]) other_config = config_of(row);
  ASSERT_FALSE(other_config.is_null());

  const fs::path dir = fresh_dir("cli_warm_resume");
  json file = first_best;
  json other = same_device;
  other["device"]["name"] = "AMD Instinct MI300X";
  other["device_fingerprint"] = "AMD Instinct MI300X|gfx942";
  other["problem"]["m"] = 8192;
  other["config"] = other_config;
  json invalid = same_device;
  invalid["problem"]["m"] = 1024;
  invalid["config"]["VWM"] = 3;
  // Other device first in the file: the order of the seeds is this device's first anyway.
  file["entries"] = json::array({other, invalid, same_device});
  std::ofstream(dir / "winners.json") << file.dump(2);

  const std::vector<std::string> warm{"--candidates", "1", "--seed", "4", "--retime", "0", "--warm-start",
                                      (dir / "winners.json").string()};
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  auto whole = run_process(loop_args(dir / "whole", with(warm, {"--generations", "3"})), dir);
  ASSERT_EQ(whole.exit_code, 0) << whole.out << whole.err;
  EXPECT_TRUE(contains(whole.err, "warm start: 1 of 3 seed(s) skipped, not valid for this problem (first: winner "
                                  "for 1024x4096x4096 fp32 NN in"))
      << whole.err;
  auto rows = read_csv_rows(dir / "whole" / "history.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(config_of(rows[0]), same_device["config"]);
  EXPECT_EQ(rows[0].at("proposer"), "warm-start");
  EXPECT_EQ(config_of(rows[1]), other_config);
  EXPECT_EQ(rows[1].at("proposer"), "warm-start");
  EXPECT_TRUE(contains(rows[1].at("rationale"), "8192x4096x4096 fp32 NN on AMD Instinct MI300X in"))
      << rows[1].at("rationale");
  EXPECT_EQ(rows[2].at("proposer"), "evolve");

  // The same run in two sessions: one generation, then the rest.
  auto part = run_process(loop_args(dir / "parts", with(warm, {"--generations", "1"})), dir);
  ASSERT_EQ(part.exit_code, 0) << part.out << part.err;
  ASSERT_EQ(read_csv_rows(dir / "parts" / "history.csv").size(), 1u);
  auto rest = run_process(loop_args(dir / "parts", with(warm, {"--generations", "3"})), dir);
  ASSERT_EQ(rest.exit_code, 0) << rest.out << rest.err;
  auto resumed = read_csv_rows(dir / "parts" / "history.csv");
  ASSERT_EQ(resumed.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(resumed[i].at("config"), rows[i].at("config")) << "row " << i + 1;
    EXPECT_EQ(resumed[i].at("proposer"), rows[i].at("proposer")) << "row " << i + 1;
    EXPECT_EQ(resumed[i].at("generation"), rows[i].at("generation")) << "row " << i + 1;
  }
}

TEST(CliWarmStart, AMissingOrGarbageFileIsAUsageErrorBeforeAnythingStarts) {
  const fs::path dir = fresh_dir("cli_warm_usage");
  const std::string exe = autotune_loop_exe().string();
  auto r = run_process({exe, "--m", "64", "--n", "64", "--k", "64", "--results", (dir / "r").string(), "--warm-start",
                        "/nonexistent"},
                       dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "--warm-start: /nonexistent: no such file or folder; give the best_config.json")) << r.err;
  EXPECT_FALSE(fs::exists(dir / "r")) << "nothing was started: not even the results folder";

  std::ofstream(dir / "garbage.json") << "not json at all";
  auto g = run_process({exe, "--m", "64", "--n", "64", "--k", "64", "--results", (dir / "r").string(), "--warm-start",
                        (dir / "garbage.json").string()},
                       dir);
  EXPECT_EQ(g.exit_code, 2) << g.out << g.err;
  EXPECT_TRUE(contains(g.err, (dir / "garbage.json").string() + " is not valid JSON")) << g.err;
  EXPECT_FALSE(fs::exists(dir / "r"));
}

// ---------------------------------------------------------------- signals

void wait_for_rows(const fs::path& history, std::size_t n) {
  for (int i = 0; i < 6000; ++i) {
    if (fs::exists(history)) {
      auto parsed = csv::parse(slurp(history));
      if (parsed.ok() && parsed->records.size() > n) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  FAIL() << "the run never reached " << n << " rows";
}

TEST(CliSignals, CtrlCFinishesTheCandidateSummarisesAndExits130) {
  REQUIRE_RECORDING();
  for (int sig : {SIGINT, SIGTERM}) {
    const fs::path dir = fresh_dir(std::string("cli_signal_") + std::to_string(sig));
    Child child(loop_args(dir / "results", {"--max-evals", "5000", "--candidates", "8"}), dir);
    wait_for_rows(dir / "results" / "history.csv", 12);
    child.signal(sig);
    auto r = child.wait(60);
    EXPECT_EQ(r.exit_code, sig == SIGINT ? 130 : 143) << r.err;
    EXPECT_TRUE(contains(r.out, "stopped, interrupted")) << r.out;
    EXPECT_TRUE(contains(r.err, sig == SIGINT ? "Ctrl-C" : "SIGTERM")) << r.err;
    auto rows = read_csv_rows(dir / "results" / "history.csv");  // whole, not torn
    EXPECT_GE(rows.size(), 12u);
    EXPECT_LT(rows.size(), 5000u);
    json best = json::parse(slurp(dir / "results" / "best_config.json"));
    EXPECT_EQ(best["entries"][0]["metrics"]["source"], "search") << "no re-timing after a stop";
    const std::string journal = slurp(dir / "results" / "journal.jsonl");
    EXPECT_TRUE(contains(journal.substr(journal.rfind('{')), "\"event\":\"end\"")) << "the session ends cleanly";
  }
}

TEST(CliSignals, SecondCtrlCExitsAtOnceLosingNoRow) {
  REQUIRE_RECORDING();
  const fs::path dir = fresh_dir("cli_signal_twice");
  Child child(loop_args(dir / "results", {"--max-evals", "5000"}), dir);
  wait_for_rows(dir / "results" / "history.csv", 8);
  child.signal(SIGINT);
  child.signal(SIGINT);
  auto r = child.wait(60);
  EXPECT_EQ(r.exit_code, 130) << r.err;
  auto rows = read_csv_rows(dir / "results" / "history.csv");
  EXPECT_GE(rows.size(), 8u);
  // And the run resumes from there.
  auto again = run_process(loop_args(dir / "results", {"--max-evals", std::to_string(rows.size() + 8)}), dir);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  auto after = read_csv_rows(dir / "results" / "history.csv");
  EXPECT_EQ(after.size(), rows.size() + 8);
  for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(after[i], rows[i]) << "row " << i + 1 << " changed";
}

}  // namespace
}  // namespace tilesmith
