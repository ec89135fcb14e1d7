// bench-best's executable end to end on the replay backend (no GPU): many results and a
// problem set in one process, entries of one problem compared in a contest, and the
// rounds that pair ours with the vendor (a recording with a vendor time stands in for the
// GPU). A run's own results reproduced by bench-best are in autotune_loop_cli_test.cpp.

#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "registry/template_library.h"
#include "runtime/backend.h"
#include "runtime/replay/compressed_file.h"
#include "runtime/replay/kernel_tuner_cache.h"
#include "tests/cli/history_reader.h"
#include "tests/cli/process.h"
#include "tests/test_paths.h"
#include "tuner/records/best_config.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace tilesmith::testing;

// bench-best over many results in one process: a problem set's folder stands for its
// problems' folders (one not tuned yet is listed, not dropped), --results and
// --best-config repeat, --fastest-only keeps one entry per problem, and every entry says
// which file it came from, its read floor (or why there is none: replay) and the peak.
TEST(CliBenchBest, ManyFoldersAndAProblemSetInOneProcess) {
  const fs::path dir = fresh_dir("cli_bench_many");
  const fs::path rec = source_dir() / "data" / "recordings";
  const std::string r128 = (rec / "gemm_wgmma_half_bf16_128x4096x4096_H200.json.gz").string();
  const std::string r4096 = (rec / "gemm_wgmma_half_bf16_4096x4096x4096_H200.json.gz").string();
  std::ofstream(dir / "set.json") << R"({"name": "two", "problems": [
    {"name": "m128", "m": 128, "n": 4096, "k": 4096, "dtype": "bf16"},
    {"name": "m4096", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"}]})";
  auto run = run_process({autotune_loop_exe().string(), "--backend", "replay", "--replay-file", r128, "--replay-file",
                          r4096, "--problems", (dir / "set.json").string(), "--results", (dir / "set").string(),
                          "--max-evals", "24", "--progress", "none", "-q"},
                         dir);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  ASSERT_TRUE(fs::exists(dir / "set" / "m128" / "best_config.json"));
  const std::vector<std::string> replay{"--backend", "replay", "--replay-file", r128, "--replay-file", r4096};
  auto bench = [&](std::vector<std::string> extra) {
    std::vector<std::string> a{bench_best_exe().string()};
    a.insert(a.end(), replay.begin(), replay.end());
    a.insert(a.end(), extra.begin(), extra.end());
    a.push_back("--json");
    return run_process(a, dir);
  };
  auto all = bench({"--results", (dir / "set").string()});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  json j = json::parse(all.out);
  ASSERT_EQ(j["best_configs"].size(), 2u);
  ASSERT_EQ(j["entries"].size(), 2u);
  std::set<std::string> from;
  for (const auto& e : j["entries"]) {
    from.insert(fs::path(e["best_config"].get<std::string>()).parent_path().filename().string());
    EXPECT_TRUE(contains(e["read_floor_unavailable"].get<std::string>(), "replay")) << e.dump();
    EXPECT_TRUE(e["floor_beaten_by"].empty());
    EXPECT_TRUE(e.contains("peak_tflops"));
    EXPECT_EQ(e["problem_json"]["dtype"], "bf16");
  }
  EXPECT_EQ(from, (std::set<std::string>{"m128", "m4096"}));
  EXPECT_TRUE(j["not_tuned"].empty());

  // A problem without a result yet is listed as such.
  fs::rename(dir / "set" / "m4096" / "best_config.json", dir / "m4096_best.json");
  auto partial = bench({"--results", (dir / "set").string()});
  ASSERT_EQ(partial.exit_code, 0) << partial.err;
  j = json::parse(partial.out);
  EXPECT_EQ(j["entries"].size(), 1u);
  ASSERT_EQ(j["not_tuned"].size(), 1u);
  EXPECT_TRUE(contains(j["not_tuned"][0].get<std::string>(), "m4096")) << j["not_tuned"].dump();

  // Several --results and --best-config in one process; the same file twice gives each
  // problem twice, and --fastest-only one per problem.
  const std::string m128 = (dir / "set" / "m128").string(), best4096 = (dir / "m4096_best.json").string();
  auto twice = bench({"--results", m128, "--best-config", best4096, "--best-config", best4096});
  ASSERT_EQ(twice.exit_code, 0) << twice.err;
  EXPECT_EQ(json::parse(twice.out)["entries"].size(), 3u);
  // Entries of one problem are measured against each other in the rounds: the same config
  // twice cannot be told apart.
  j = json::parse(twice.out);
  ASSERT_EQ(j["contests"].size(), 1u) << j.dump(2);
  EXPECT_EQ(j["contests"][0]["verdict"], "tie");
  EXPECT_EQ(j["contests"][0]["rounds"], 8);
  for (const auto& st : j["contests"][0]["standings"]) EXPECT_TRUE(st["tied"].get<bool>()) << st.dump();
  // A slower config of the same problem loses to the winner in every round: certified.
  {
    json slower = json::parse(slurp(dir / "m4096_best.json"));
    const auto rows = read_csv_rows(dir / "set" / "m4096" / "history.csv");
    const CsvRow* slowest = nullptr;
    for (const auto& r : rows)
      if (r.at("outcome") == "ok" &&
          (!slowest || std::stod(r.at("median_ms")) > std::stod(slowest->at("median_ms"))))
        slowest = &r;
    ASSERT_NE(slowest, nullptr);
    slower["entries"][0]["config"] = json::parse(slowest->at("config"));
    std::ofstream(dir / "slower.json") << slower.dump(2);
    auto contest = bench({"--best-config", best4096, "--best-config", (dir / "slower.json").string()});
    ASSERT_EQ(contest.exit_code, 0) << contest.err;
    json c = json::parse(contest.out)["contests"][0];
    EXPECT_EQ(c["verdict"], "certified") << c.dump(2);
    EXPECT_EQ(c["winner"], 1);
    EXPECT_GT(c["standings"][1]["ratio_to_fastest"].get<double>(), 1.0);
    auto words = run_process({bench_best_exe().string(), "--backend", "replay", "--replay-file", r128,
                              "--replay-file", r4096, "--best-config", best4096, "--best-config",
                              (dir / "slower.json").string(), "--no-read-floor"},
                             dir);
    EXPECT_TRUE(contains(words.out, "contest  4096x4096x4096 bf16 NN: [1] certified faster than the others after 8 "
                                    "rounds; [2]/[1] "))
        << words.out;
  }
  auto fastest = bench({"--results", m128, "--best-config", best4096, "--best-config", best4096, "--fastest-only"});
  ASSERT_EQ(fastest.exit_code, 0) << fastest.err;
  j = json::parse(fastest.out);
  EXPECT_EQ(j["entries"].size(), 2u);
  EXPECT_EQ(j["slower_entries_left_out"], 1);

  // The text form lists the floor column and where each entry came from.
  auto text = run_process({bench_best_exe().string(), "--backend", "replay", "--replay-file", r128, "--replay-file",
                           r4096, "--results", m128, "--best-config", best4096, "--no-read-floor"},
                          dir);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* part : {"2 best_config.json files", "read_floor_ms", "%_of_floor", "from    ",
                           "read floor: not measured (--no-read-floor)"})
    EXPECT_TRUE(contains(text.out, part)) << part << "\n" << text.out;

  // Nothing tuned at all is a usage error that says so.
  fs::remove(dir / "set" / "m128" / "best_config.json");
  auto none = bench({"--results", (dir / "set").string()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(contains(none.err, "not tuned yet")) << none.err;
}

// bench-best --rounds: ours and the vendor measured again alternately, the ratio given
// round by round with its interval. A recording with a vendor time stands in for the GPU:
// its kernel time is one number, so every round's ratio is the recorded one exactly.
// --vendor-only: the vendor library alone on the flags' problem (a recording's vendor time
// stands in for the GPU), its usage mistakes named before anything is opened.
TEST(CliBenchBest, VendorOnlyMeasuresTheVendorAloneOnTheFlagsProblem) {
  const fs::path dir = fresh_dir("bench_vendor_only");
  const fs::path source = source_dir() / "data" / "recordings" / "gemm_wgmma_half_bf16_128x4096x4096_H200.json.gz";
  auto text = replay::read_maybe_gzip(source);
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  auto cache = replay::parse_kernel_tuner_cache(*text, source.string());
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  auto c = *cache;
  c.vendor_median_ms = 0.0123;
  c.vendor_name = "cuBLASLt (recorded)";
  const fs::path rec = dir / "with_vendor.json";
  std::ofstream(rec) << replay::kernel_tuner_cache_to_json_text(c);
  const std::vector<std::string> problem{"--m", "128", "--n", "4096", "--k", "4096", "--dtype", "bf16", "--layout",
                                         c.problem ? c.problem->layout_code() : std::string("NN")};
  auto run = [&](std::vector<std::string> extra, bool with_problem = true) {
    std::vector<std::string> argv{bench_best_exe().string(), "--backend", "replay", "--replay-file", rec.string(),
                                  "--vendor-only"};
    if (with_problem) argv.insert(argv.end(), problem.begin(), problem.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv, dir);
  };
  auto ok = run({"--rounds", "3"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("0.0123"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("rounds   3 more"), std::string::npos) << ok.out;
  auto j = run({"--json", "--rounds", "2"});
  ASSERT_EQ(j.exit_code, 0) << j.out << j.err;
  const json doc = json::parse(j.out);
  EXPECT_DOUBLE_EQ(doc["vendor"]["timing"]["median_ms"].get<double>(), 0.0123);
  EXPECT_EQ(doc["vendor_rounds_ms"].size(), 2u);

  auto no_problem = run({}, false);
  EXPECT_EQ(no_problem.exit_code, 2);
  EXPECT_NE(no_problem.err.find("--vendor-only needs the problem"), std::string::npos) << no_problem.err;
  auto with_config = run({"--config", "{}"});
  EXPECT_EQ(with_config.exit_code, 2);
  EXPECT_NE(with_config.err.find("no --config"), std::string::npos) << with_config.err;
  auto nothing = run({"--no-vendor"});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_NE(nothing.err.find("leave nothing to measure"), std::string::npos) << nothing.err;
  auto widen = run({"--rounds-max", "16"});
  EXPECT_EQ(widen.exit_code, 2);
  EXPECT_NE(widen.err.find("--vendor-only takes the problem flags"), std::string::npos) << widen.err;
}

TEST(CliBenchBest, PairedRoundsGiveTheRatioWithItsIntervalAndVerdict) {
  const fs::path dir = fresh_dir("bench_paired");
  const fs::path source = source_dir() / "data" / "recordings" /
                          "gemm_wgmma_half_bf16_128x4096x4096_H200.json.gz";
  auto text = replay::read_maybe_gzip(source);
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  auto cache = replay::parse_kernel_tuner_cache(*text, source.string());
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  // The first recorded config and its time.
  auto cfg_json = json::parse(*text)["cache"].begin().value();
  const double ours_ms = cfg_json["time"].get<double>();
  json config = json::object();
  for (const auto& [k, v] : cfg_json.items())
    if (k != "time" && k != "compile_time" && v.is_number_integer()) config[k] = v;

  auto bench = [&](double vendor_factor, const std::vector<std::string>& extra) {
    auto c = *cache;
    c.vendor_median_ms = ours_ms * vendor_factor;
    c.vendor_name = "cuBLASLt (recorded)";
    const fs::path rec = dir / "with_vendor.json";
    std::ofstream(rec) << replay::kernel_tuner_cache_to_json_text(c);
    std::vector<std::string> argv{bench_best_exe().string(), "--backend", "replay", "--replay-file", rec.string(),
                                  "--config", config.dump()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv, dir);
  };

  auto faster = bench(1.05, {"--json", "--rounds", "8"});
  ASSERT_EQ(faster.exit_code, 0) << faster.out << faster.err;
  json j = json::parse(faster.out);
  ASSERT_TRUE(j["paired"].is_object()) << j.dump(2);
  EXPECT_EQ(j["paired"]["rounds"], 8);
  EXPECT_NEAR(j["paired"]["ratio"].get<double>(), 1.05, 1e-9);
  EXPECT_NEAR(j["paired"]["interval"][0].get<double>(), 1.05, 1e-9);
  EXPECT_NEAR(j["paired"]["ours_median_ms"].get<double>(), ours_ms, 1e-9);
  EXPECT_EQ(j["paired"]["verdict"], "ours faster");

  auto slower = bench(0.95, {"--rounds", "6"});
  ASSERT_EQ(slower.exit_code, 0) << slower.out << slower.err;
  EXPECT_TRUE(contains(slower.out, "paired   ratio 0.950 [0.950, 0.950]")) << slower.out;
  EXPECT_TRUE(contains(slower.out, "6 rounds alternating ours and the vendor")) << slower.out;
  EXPECT_TRUE(contains(slower.out, "vendor faster")) << slower.out;

  auto few = bench(1.0, {"--rounds", "3"});
  EXPECT_TRUE(contains(few.out, "too few rounds")) << few.out;
  // Too few rounds for an interval: --rounds-max adds pairs until there is one (a replayed
  // ratio is steady, so the first interval is narrow enough).
  auto widened = bench(1.0, {"--json", "--rounds", "3", "--rounds-max", "16"});
  ASSERT_EQ(widened.exit_code, 0) << widened.out << widened.err;
  const int rounds = json::parse(widened.out)["paired"]["rounds"].get<int>();
  EXPECT_GT(rounds, 3);
  EXPECT_LE(rounds, 16);
  auto unpaired = bench(1.0, {"--no-vendor", "--rounds-max", "16"});
  EXPECT_EQ(unpaired.exit_code, 2);
  EXPECT_TRUE(contains(unpaired.err, "not with --no-vendor")) << unpaired.err;

  auto none = bench(1.0, {"--json", "--rounds", "0"});
  json n = json::parse(none.out);
  EXPECT_TRUE(n["paired"].is_null());
  EXPECT_EQ(n["paired_unavailable"], "not measured (--rounds 0)");

  // A config the recording never timed does not run: there is nothing to pair, and the
  // line says why.
  {
    auto c = *cache;
    c.vendor_median_ms = ours_ms;
    const fs::path rec = dir / "with_vendor.json";
    std::ofstream(rec) << replay::kernel_tuner_cache_to_json_text(c);
    json unknown = config;
    unknown.begin().value() = 999983;
    auto r = run_process({bench_best_exe().string(), "--backend", "replay", "--replay-file", rec.string(), "--config",
                          unknown.dump(), "--json"},
                         dir);
    json u = json::parse(r.out);
    EXPECT_TRUE(u["paired"].is_null()) << u.dump(2);
    EXPECT_EQ(u["paired_unavailable"], "ours did not run");
  }

  auto bad = bench(1.0, {"--rounds", "-1"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_TRUE(contains(bad.err, "--rounds")) << bad.err;
}


// --record-code-hashes, without a GPU: an entry whose template is unchanged gets its
// kernel's code hash written into its file; after a change that leaves the kernel as it
// was (a comment) the entry is the same kernel, after one that changes the arithmetic it
// is CHANGED (exit 4); an entry of a changed template with no hash cannot be told.
// --versus-kernels-dir: another version of the --config template, measured beside it. What
// the flags can be wrong about is said before a GPU is opened: no --config, replay, a folder
// without the template, the same source. Valid flags get to the GPU: without one, exit 3;
// with one, both versions run and the versus line compares them.
TEST(CliBenchBest, VersusKernelsDirIsCheckedBeforeAGpuIsOpened) {
  const fs::path dir = fresh_dir("bench_versus");
  const fs::path edited = dir / "edited", other = dir / "other";
  fs::copy(source_dir() / "kernels", edited);
  {
    std::ifstream in(edited / "gemm_tiled.hip");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const auto at = text.find("#include");
    ASSERT_NE(at, std::string::npos);
    text.insert(at, "// a note on the schedule\n");
    std::ofstream(edited / "gemm_tiled.hip") << text;
  }
  fs::create_directories(other);
  for (const char* f : {"gemm_tma_half.hip", "gemm_tma_half.json"}) fs::copy(source_dir() / "kernels" / f, other / f);
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv{bench_best_exe().string(), "--m", "256", "--n", "256", "--k", "256", "--template",
                                  "gemm_tiled", "--config", "{}", "--rounds", "6"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv, dir);
  };
  auto valid = run({"--versus-kernels-dir", edited.string()});
  if (valid.exit_code == 3) {
    EXPECT_TRUE(contains(valid.err, "no GPU found")) << valid.err;
  } else {
    EXPECT_EQ(valid.exit_code, 0) << valid.out << valid.err;
    EXPECT_TRUE(contains(valid.out, "versus   " + edited.string() + " against built-in: ratio ")) << valid.out;
  }
  auto same = run({"--versus-kernels-dir", (source_dir() / "kernels").string()});
  EXPECT_EQ(same.exit_code, 2) << same.err;
  EXPECT_TRUE(contains(same.err, "the same source") && contains(same.err, "nothing to compare")) << same.err;
  auto missing = run({"--versus-kernels-dir", other.string()});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_TRUE(contains(missing.err, "has no template 'gemm_tiled'")) << missing.err;
  auto replay = run({"--versus-kernels-dir", edited.string(), "--backend", "replay", "--replay-file", "x.json"});
  EXPECT_EQ(replay.exit_code, 2) << replay.err;
  EXPECT_TRUE(contains(replay.err, "not with --backend replay")) << replay.err;
  auto from_file = run_process({bench_best_exe().string(), "--best-config", (dir / "best_config.json").string(),
                                "--versus-kernels-dir", edited.string()},
                               dir);
  EXPECT_EQ(from_file.exit_code, 2) << from_file.err;
  EXPECT_TRUE(contains(from_file.err, "it goes with --config")) << from_file.err;
}

TEST(CliBenchBest, RecordsCodeHashesAndTellsAnEditedTemplatesSameKernelFromAChangedOne) {
  auto backend = make_backend("cuda");
  if (!backend.ok() || !(*backend)->compiler().ok()) GTEST_SKIP() << "NVRTC unavailable";
  const fs::path dir = fresh_dir("cli_bench_code_hashes");
  const fs::path kernels = dir / "kernels";
  fs::copy(source_dir() / "kernels", kernels);
  auto lib = TemplateLibrary::from_directory(kernels);
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  const KernelTemplate& t = *lib->find("gemm_tiled");
  BestEntry e;
  const DeviceFacts dev = nominal_facts_for_arch("sm_80");
  e.device_fingerprint = dev.fingerprint();
  to_json(e.device, dev);
  e.template_name = t.name();
  e.template_hash = t.source_hash();
  e.problem.m = e.problem.n = e.problem.k = 512;
  e.config = t.defaults();
  e.metrics = json{{"median_ms", 0.05}};
  const fs::path file = dir / "best_config.json";
  ASSERT_TRUE(write_best_config(file, {e}).ok());
  auto stamp = [&] {
    return run_process({bench_best_exe().string(), "--best-config", file.string(), "--kernels-dir", kernels.string(),
                        "--record-code-hashes"},
                       dir);
  };
  auto first = stamp();
  EXPECT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_TRUE(contains(first.out, "recorded  gemm_tiled")) << first.out;
  auto stamped = read_best_config(file);
  ASSERT_TRUE(stamped.ok());
  const std::string hash = stamped->front().code_hash;
  EXPECT_EQ(hash.size(), 16u);
  EXPECT_EQ(stamped->front().template_hash, e.template_hash) << "the rest of the entry as it was";

  auto edit = [&](const std::string& from, const std::string& to) {
    std::ifstream in(kernels / "gemm_tiled.hip");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::ofstream(kernels / "gemm_tiled.hip") << text;
  };
  edit("#include", "// a note on the schedule\n\n#include");
  auto same = stamp();
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_TRUE(contains(same.out, "same kernel  gemm_tiled")) << same.out;
  EXPECT_EQ(read_best_config(file)->front().code_hash, hash);

  edit("float v = alpha * acc[i][j];", "float v = alpha * acc[i][j] * 0.5f;");
  auto changed = stamp();
  EXPECT_EQ(changed.exit_code, 4) << changed.out << changed.err;
  EXPECT_TRUE(contains(changed.out, "CHANGED  gemm_tiled")) << changed.out;
  EXPECT_TRUE(contains(changed.out, "code hash " + hash + " then")) << changed.out;

  // Recorded by an earlier version (no code hash) against today's edited template: unknown.
  ASSERT_TRUE(write_best_config(file, {e}).ok());
  auto unknown = stamp();
  EXPECT_EQ(unknown.exit_code, 4) << unknown.out << unknown.err;
  EXPECT_TRUE(contains(unknown.out, "UNKNOWN  gemm_tiled")) << unknown.out;
  EXPECT_TRUE(read_best_config(file)->front().code_hash.empty()) << "nothing is written for it";

  // --fastest-only and the problem flags narrow the entries as for a measurement: of two
  // templates' entries for the problem, the faster one.
  BestEntry slower = e;
  const KernelTemplate& other = *lib->find("gemm_async");
  slower.template_name = other.name();
  slower.template_hash = other.source_hash();
  slower.config = other.defaults();
  slower.metrics = json{{"median_ms", 0.08}};
  ASSERT_TRUE(write_best_config(file, {e, slower}).ok());
  auto fastest = run_process({bench_best_exe().string(), "--best-config", file.string(), "--kernels-dir",
                              kernels.string(), "--record-code-hashes", "--fastest-only", "--m", "512", "--n", "512",
                              "--k", "512"},
                             dir);
  EXPECT_TRUE(contains(fastest.out, "1 entry checked")) << fastest.out << fastest.err;
  EXPECT_FALSE(contains(fastest.out, "gemm_async")) << fastest.out;
  auto other_problem = run_process({bench_best_exe().string(), "--best-config", file.string(), "--kernels-dir",
                                    kernels.string(), "--record-code-hashes", "--m", "256", "--n", "512", "--k", "512"},
                                   dir);
  EXPECT_TRUE(contains(other_problem.out, "0 entries checked")) << other_problem.out << other_problem.err;

  auto usage = run_process({bench_best_exe().string(), "--record-code-hashes", "--m", "512", "--n", "512", "--k", "512",
                            "--config", "{}"},
                           dir);
  EXPECT_EQ(usage.exit_code, 2) << usage.out << usage.err;
  EXPECT_TRUE(contains(usage.err, "--record-code-hashes")) << usage.err;
  auto json_too = run_process({bench_best_exe().string(), "--best-config", file.string(), "--kernels-dir",
                               kernels.string(), "--record-code-hashes", "--json"},
                              dir);
  EXPECT_EQ(json_too.exit_code, 2) << json_too.out << json_too.err;
  EXPECT_TRUE(contains(json_too.err, "no --json")) << json_too.err;
}

}  // namespace
}  // namespace tilesmith
