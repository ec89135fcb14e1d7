// autotune-loop and bench-best through worker processes, end to end and without a GPU:
//  - the replay backend in 1 and 3 tilesmith-worker processes (--replay-workers)
//    evaluates exactly what the in-process replay does;
//  - the test-only fault worker (tests/worker/fault_worker.cpp, started as the GPU
//    worker with --backend cuda --worker-exe) stands in for GPUs: several devices, kill -9
//    of the orchestrator mid-run with several candidates in flight, a worker killed from
//    outside, and candidates that crash or hang on command.
// The test process makes itself the subreaper of what its children leave behind, so a
// worker that outlives its orchestrator becomes its child and is found.

#include <signal.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "registry/config.h"
#include "tests/cli/history_reader.h"
#include "tests/cli/process.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace tilesmith::testing;

// ---------------------------------------------------------------- processes

struct ProcInfo {
  long pid = 0, ppid = 0;
  char state = '?';
  std::string cmdline;  // arguments joined by spaces
};

std::optional<ProcInfo> proc_info(long pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t close = stat.rfind(')');
  if (stat.empty() || close == std::string::npos || close + 4 >= stat.size()) return std::nullopt;
  ProcInfo p;
  p.pid = pid;
  p.state = stat[close + 2];
  p.ppid = std::atol(stat.c_str() + close + 4);
  p.cmdline = slurp("/proc/" + std::to_string(pid) + "/cmdline");
  std::replace(p.cmdline.begin(), p.cmdline.end(), '\0', ' ');
  return p;
}

std::vector<ProcInfo> children_of(long parent) {
  std::vector<ProcInfo> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    const bool numeric = !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
      return std::isdigit(c) != 0;
    });
    if (!numeric) continue;
    auto p = proc_info(std::atol(name.c_str()));
    if (p && p->ppid == parent) out.push_back(*p);
  }
  return out;
}

// After SIGSTOP: waits until every thread of `pid` has stopped (a thread that was busy,
// say in the middle of starting a compile helper, stops only when it next leaves the
// kernel), so what is read afterwards cannot change.
bool wait_stopped(long pid) {
  for (int i = 0; i < 500; ++i) {
    bool all = true;
    for (const auto& t : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
      const std::string stat = slurp(t.path() / "stat");
      const std::size_t close = stat.rfind(')');
      const char state = close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
      all = all && (state == 'T' || state == 't');
    }
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

// Waits up to `seconds` for every pid to be gone, reaping those that became this
// process's children (as subreaper). Returns those still alive.
std::vector<long> wait_gone(const std::vector<long>& pids, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<long> alive = pids;
  while (!alive.empty() && std::chrono::steady_clock::now() < deadline) {
    std::vector<long> still;
    for (long pid : alive) {
      int st = 0;
      if (::waitpid(static_cast<pid_t>(pid), &st, WNOHANG) == pid) continue;  // our orphan, now reaped
      auto p = proc_info(pid);
      if (p && p->state != 'Z') still.push_back(pid);
    }
    alive = std::move(still);
    if (!alive.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return alive;
}

class WorkerLoop : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0); }
  void TearDown() override {
    // Nothing of the runs may be left running. (A worker that died just as its killed
    // orchestrator was reaped can reach this subreaper as a zombie: dead, only not
    // reaped; it is reaped here.)
    for (const auto& p : children_of(::getpid())) {
      if (p.state == 'Z') continue;
      ADD_FAILURE() << "left running: pid " << p.pid << " (" << p.state << ") " << p.cmdline;
      ::kill(static_cast<pid_t>(p.pid), SIGKILL);
    }
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }
};

// ---------------------------------------------------------------- the fault worker as a GPU

fs::path fault_worker() { return TILESMITH_FAULT_WORKER; }

// A template folder for the fault worker: fault_process as the tests have it (the
// worker's health check uses it) and fault_loop, the same kernel with the space a test
// asks for. fault_loop's configs have no HEALTH key, so the fault worker's journal tells
// a candidate from a health check.
fs::path fault_kernels(const fs::path& dir, const std::vector<int>& faults, const std::vector<int>& ms, int ids) {
  const fs::path out = dir / "kernels";
  fs::create_directories(out);
  const fs::path src = test_kernels_dir();
  fs::copy_file(src / "fault_process.hip", out / "fault_process.hip", fs::copy_options::overwrite_existing);
  fs::copy_file(src / "fault_process.json", out / "fault_process.json", fs::copy_options::overwrite_existing);
  fs::copy_file(src / "fault_process.hip", out / "fault_loop.hip", fs::copy_options::overwrite_existing);
  json j = json::parse(slurp(src / "fault_process.json"));
  j["name"] = "fault_loop";
  j["description"] = "test-only: fault_process with the space of one test";
  std::vector<int> id_values;
  for (int i = 0; i < ids; ++i) id_values.push_back(i);
  j["space"]["parameters"] = json::array({
      {{"name", "FAULT"}, {"values", faults}, {"default", faults.front()}, {"description", "tests/worker/faults.h"}},
      {{"name", "MS"}, {"values", ms}, {"default", ms.front()}, {"description", "run time"}},
      {{"name", "ID"}, {"values", id_values}, {"default", 0}, {"description", "tells candidates apart"}},
  });
  std::ofstream(out / "fault_loop.json") << j.dump(2);
  return out;
}

std::vector<std::string> fault_loop_args(const fs::path& results, const fs::path& kernels, const std::string& devices,
                                         std::vector<std::string> extra) {
  std::vector<std::string> a{autotune_loop_exe().string(),
                             "--backend", "cuda", "--devices", devices, "--worker-exe", fault_worker().string(),
                             "--kernels-dir", kernels.string(), "--template", "fault_loop",
                             "--m", "64", "--n", "64", "--k", "64", "--no-vendor", "--retime", "0",
                             "--results", results.string(), "--no-log-file"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

struct FaultJournalLine {
  long pid = 0;
  std::string what;
  std::string config;  // canonical JSON
};

// tests/worker/faults.h: "<pid> <evaluate|prepare> <config json>" per candidate started.
std::vector<FaultJournalLine> read_fault_journal(const fs::path& path) {
  std::vector<FaultJournalLine> out;
  std::istringstream in(slurp(path));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    FaultJournalLine l;
    s >> l.pid >> l.what;
    std::string rest;
    std::getline(s, rest);
    auto c = config_from_json_text(rest);
    if (!c.ok()) {
      ADD_FAILURE() << "fault journal line: " << line;
      continue;
    }
    l.config = config_to_json_text(*c);
    out.push_back(std::move(l));
  }
  return out;
}

// How often the fault worker began to evaluate each fault_loop config (health checks,
// which use fault_process with HEALTH=1, apart).
std::map<std::string, int> evaluations(const fs::path& journal) {
  std::map<std::string, int> n;
  for (const auto& l : read_fault_journal(journal))
    if (l.what == "evaluate" && !contains(l.config, "HEALTH")) ++n[l.config];
  return n;
}

// Evaluate markers per candidate key in journal.jsonl.
std::map<std::string, int> markers(const fs::path& results) {
  std::map<std::string, int> n;
  std::istringstream in(slurp(results / "journal.jsonl"));
  std::string line;
  while (std::getline(in, line)) {
    json e = json::parse(line, nullptr, false);
    if (!e.is_discarded() && e.value("event", "") == "evaluate")
      ++n[e.value("template", "") + "/" + e.value("config_hash", "")];
  }
  return n;
}

// The files of a run frozen with SIGSTOP: rows, and candidates started without a row.
struct Frozen {
  std::size_t rows = 0;
  std::set<std::string> in_flight;
};

Frozen frozen_state(const fs::path& results) {
  Frozen f;
  std::set<std::string> recorded;
  auto parsed = csv::parse(slurp(results / "history.csv"));
  if (parsed.ok() && !parsed->records.empty()) {
    const auto& header = parsed->records[0].fields;
    auto col = [&](const char* name) {
      return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    };
    for (std::size_t i = 1; i < parsed->records.size(); ++i) {
      const auto& r = parsed->records[i].fields;
      if (r.size() != header.size()) continue;
      ++f.rows;
      recorded.insert(r[col("template")] + "/" + r[col("config_hash")]);
    }
  }
  for (const auto& [key, n] : markers(results))
    if (!recorded.count(key)) f.in_flight.insert(key);
  return f;
}

// ---------------------------------------------------------------- replay through workers

TEST_F(WorkerLoop, ReplayThroughOneAndThreeWorkersEvaluatesWhatInProcessDoes) {
  REQUIRE_RECORDING();
  const fs::path dir = fresh_dir("worker_replay");
  auto run = [&](const std::string& name, int workers) {
    std::vector<std::string> a{autotune_loop_exe().string(), "--backend", "replay", "--replay-file",
                               rtx3090_recording().string(), "--results", (dir / name).string(),
                               "--proposer", "random", "--seed", "5", "--max-evals", "60", "--candidates", "8",
                               "--retime", "2", "--progress", "none", "--no-log-file"};
    if (workers > 0) a.insert(a.end(), {"--replay-workers", std::to_string(workers)});
    auto r = run_process(a, dir);
    EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.err;
    return r;
  };
  auto in_process = run("in_process", 0);
  auto one = run("one", 1);
  auto three = run("three", 3);
  EXPECT_TRUE(contains(in_process.out, "candidates/min")) << in_process.out;
  EXPECT_TRUE(contains(three.out, "candidates/min on 3 devices")) << three.out;
  EXPECT_TRUE(contains(three.out, "worker NVIDIA GeForce RTX 3090 (replay:2): ")) << three.out;
  EXPECT_TRUE(contains(three.err, "3 worker processes (replay:0, replay:1, replay:2)")) << three.err;

  const auto want = read_csv_rows(dir / "in_process" / "history.csv");
  ASSERT_EQ(want.size(), 60u);
  auto answers = [](const std::vector<CsvRow>& rows) {
    std::map<std::string, std::string> m;
    for (const auto& r : rows) m[r.at("config_hash")] = r.at("outcome") + " " + r.at("median_ms");
    return m;
  };
  for (const char* name : {"one", "three"}) {
    SCOPED_TRACE(name);
    const auto got = read_csv_rows(dir / name / "history.csv");
    ASSERT_EQ(got.size(), want.size());
    std::set<std::string> keys, devices;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].at("row"), std::to_string(i + 1));
      EXPECT_TRUE(keys.insert(got[i].at("config_hash")).second) << "evaluated twice: " << got[i].at("config");
      devices.insert(got[i].at("device"));
    }
    EXPECT_EQ(answers(got), answers(want)) << "the same configs, with the same answers, as in-process";
    if (std::string(name) == "one") {
      EXPECT_EQ(devices, (std::set<std::string>{"replay:0"}));
    } else {
      EXPECT_GE(devices.size(), 2u) << "several workers measured";
      for (const auto& d : devices) EXPECT_TRUE(d == "replay:0" || d == "replay:1" || d == "replay:2") << d;
    }
    for (const auto& [key, n] : markers(dir / name)) EXPECT_EQ(n, 1) << "started twice: " << key;
    json a = json::parse(slurp(dir / "in_process" / "best_config.json"));
    json b = json::parse(slurp(dir / name / "best_config.json"));
    ASSERT_EQ(b["entries"].size(), 1u);
    EXPECT_EQ(b["entries"][0]["config"], a["entries"][0]["config"]);
    EXPECT_EQ(b["entries"][0]["metrics"]["median_ms"], a["entries"][0]["metrics"]["median_ms"]);
  }
}

TEST_F(WorkerLoop, CtrlCWithSeveralWorkersFinishesWhatIsInFlight) {
  REQUIRE_RECORDING();
  const fs::path dir = fresh_dir("worker_ctrlc");
  const fs::path results = dir / "results";
  Child child({autotune_loop_exe().string(), "--backend", "replay", "--replay-file", rtx3090_recording().string(),
               "--replay-workers", "3", "--results", results.string(), "--max-evals", "20000", "--progress", "none",
               "--no-log-file"},
              dir);
  for (int i = 0; i < 6000 && frozen_state(results).rows < 30; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  child.signal(SIGINT);
  auto r = child.wait(60);
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_TRUE(contains(r.out, "stopped, interrupted")) << r.out;
  const Frozen after = frozen_state(results);
  EXPECT_GE(after.rows, 30u);
  EXPECT_LT(after.rows, 20000u);
  EXPECT_TRUE(after.in_flight.empty()) << "every candidate that started was finished and recorded; "
                                       << after.in_flight.size() << " were not";
}

// ---------------------------------------------------------------- several devices, kill -9

// With --overlap off the resumed run measures exactly the candidates of the run that was
// never killed; with --overlap on (the next generation planned while the last candidates
// of one are measured, so kills can come with two generations in flight) the proposals
// depend on when results arrived, and the check is the budget spent exactly with nothing
// measured or recorded twice.
TEST_F(WorkerLoop, KilledWithCandidatesInFlightOnThreeWorkersResumesExactlyAndLeavesNoWorker) {
 for (const std::string overlap : {"off", "on"}) {
  SCOPED_TRACE("--overlap " + overlap);
  const fs::path dir = fresh_dir("worker_kill9_" + overlap);
  const fs::path kernels = fault_kernels(dir, {0}, {50, 150}, 200);
  const int budget = 48;
  auto args = [&](const fs::path& results) {
    return fault_loop_args(results, kernels, "0,1,2",
                           {"--proposer", "random", "--seed", "3", "--candidates", "6", "--max-evals",
                            std::to_string(budget), "--progress", "none", "--overlap", overlap});
  };
  const std::map<std::string, std::string> whole_env{{"TILESMITH_FAULT_JOURNAL", (dir / "whole.faults").string()}};
  auto whole = run_process(args(dir / "whole"), dir, whole_env);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const auto want = read_csv_rows(dir / "whole" / "history.csv");
  ASSERT_EQ(want.size(), static_cast<std::size_t>(budget));

  const fs::path results = dir / "killed";
  const std::map<std::string, std::string> env{{"TILESMITH_FAULT_JOURNAL", (dir / "killed.faults").string()}};
  std::set<std::string> in_flight_at_kills;
  int kills = 0;
  for (std::size_t at : {4u, 16u, 29u}) {
    Child child(args(results), dir, env);
    bool killed = false;
    for (int i = 0; i < 4000 && !killed; ++i) {
      int st;
      if (::waitpid(child.pid(), &st, WNOHANG) == child.pid()) break;
      if (frozen_state(results).rows >= at) {
        child.signal(SIGSTOP);
        ASSERT_TRUE(wait_stopped(child.pid())) << "the orchestrator did not stop";
        Frozen f = frozen_state(results);
        std::vector<long> workers;
        for (const auto& p : children_of(child.pid())) workers.push_back(p.pid);
        if (f.in_flight.empty()) {
          child.signal(SIGCONT);
        } else {
          child.signal(SIGKILL);
          child.wait(10);
          killed = true;
          ++kills;
          in_flight_at_kills.insert(f.in_flight.begin(), f.in_flight.end());
          EXPECT_GE(workers.size(), 3u) << "three device workers (and their compile helpers) were running";
          // The workers see their request pipe close and exit, even mid-candidate.
          EXPECT_TRUE(wait_gone(workers, 10).empty()) << "a worker outlived its orchestrator";
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    if (!killed) break;
  }
  EXPECT_EQ(kills, 3) << "the run ended before the test could kill it three times";
  auto last = run_process(args(results), dir, env);
  ASSERT_EQ(last.exit_code, 0) << last.err;

  const auto got = read_csv_rows(results / "history.csv");
  ASSERT_EQ(got.size(), static_cast<std::size_t>(budget));
  std::set<std::string> keys, crashed;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].at("row"), std::to_string(i + 1)) << "rows are numbered without gaps or repeats";
    const std::string key = got[i].at("template") + "/" + got[i].at("config_hash");
    EXPECT_TRUE(keys.insert(key).second) << "recorded twice: " << got[i].at("config");
    if (got[i].at("outcome") == "crash") {
      crashed.insert(key);
      EXPECT_TRUE(contains(got[i].at("message"), "in flight")) << got[i].at("message");
      EXPECT_TRUE(contains(got[i].at("device"), "fault:")) << "the crash row names where it was in flight";
    } else {
      EXPECT_EQ(got[i].at("outcome"), "ok");
    }
  }
  EXPECT_EQ(crashed, in_flight_at_kills) << "each candidate in flight at a kill is one crash row, nothing more";
  std::set<std::string> want_keys;
  for (const auto& r : want) want_keys.insert(r.at("template") + "/" + r.at("config_hash"));
  if (overlap == "off") {
    EXPECT_EQ(keys, want_keys) << "the same candidates as the run that was never killed";
  }
  for (const auto& [config, n] : evaluations(dir / "killed.faults")) EXPECT_EQ(n, 1) << "evaluated twice: " << config;
  for (const auto& [key, n] : markers(results)) EXPECT_EQ(n, 1) << "started twice: " << key;
 }
}

// ---------------------------------------------------------------- faults inside a run

TEST_F(WorkerLoop, WorkerKilledFromOutsideCostsItsCandidateAndTheRunGoesOn) {
  const fs::path dir = fresh_dir("worker_sigkill");
  const fs::path kernels = fault_kernels(dir, {0}, {500}, 64);
  const fs::path journal = dir / "faults";
  Child child(fault_loop_args(dir / "results", kernels, "0,1",
                              {"--proposer", "random", "--seed", "9", "--candidates", "6", "--max-evals", "6",
                               "--progress", "none"}),
              dir, {{"TILESMITH_FAULT_JOURNAL", journal.string()}});
  // A device worker (not a compile helper) that has begun a candidate: killed at once,
  // well inside the candidate's 500 ms.
  long victim = 0;
  std::string victim_device;
  for (int i = 0; i < 3000 && !victim; ++i) {
    std::map<long, std::string> device_workers;
    for (const auto& p : children_of(child.pid()))
      if (!contains(p.cmdline, "--compile-only")) {
        const auto at = p.cmdline.find("--device ");
        device_workers[p.pid] = at == std::string::npos ? "?" : p.cmdline.substr(at + 9, 1);
      }
    for (const auto& l : read_fault_journal(journal))
      if (l.what == "evaluate" && device_workers.count(l.pid)) {
        victim = l.pid;
        victim_device = "fault:" + device_workers[l.pid];
        ::kill(static_cast<pid_t>(victim), SIGKILL);
        break;
      }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_NE(victim, 0) << "no worker was caught evaluating";
  auto r = child.wait(60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = read_csv_rows(dir / "results" / "history.csv");
  ASSERT_EQ(rows.size(), 6u) << "the run went on to its budget";
  int crashes = 0;
  for (const auto& row : rows) {
    if (row.at("outcome") == "ok") continue;
    ++crashes;
    EXPECT_EQ(row.at("outcome"), "crash");
    EXPECT_TRUE(contains(row.at("message"), "signal 9")) << row.at("message");
    EXPECT_EQ(row.at("device"), victim_device);
  }
  EXPECT_EQ(crashes, 1);
  const auto n = evaluations(journal);
  EXPECT_EQ(n.size(), 6u);
  for (const auto& [config, count] : n) EXPECT_EQ(count, 1) << "the crashed candidate is not retried: " << config;
  EXPECT_TRUE(contains(r.err, "crash")) << "a lost candidate is a warning in the log:\n" << r.err;
}

TEST_F(WorkerLoop, CandidatesThatCrashOrHangEachCostOneCandidate) {
  const fs::path dir = fresh_dir("worker_faults");
  // FAULT 0 none, 1 SIGSEGV, 2 abort(), 3 an endless loop, 12 a compiler that aborts
  // (in compile-ahead's helper process) (tests/worker/faults.h).
  const fs::path kernels = fault_kernels(dir, {0, 1, 2, 3, 12}, {0}, 3);
  const fs::path journal = dir / "faults";
  auto r = run_process(fault_loop_args(dir / "results", kernels, "0,1",
                                       {"--proposer", "exhaustive", "--candidates", "15", "--max-evals", "15",
                                        "--run-deadline", "1", "--progress", "plain", "--status-interval", "0.2"}),
                       dir, {{"TILESMITH_FAULT_JOURNAL", journal.string()}}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = read_csv_rows(dir / "results" / "history.csv");
  ASSERT_EQ(rows.size(), 15u);
  std::map<std::string, int> by_outcome;
  for (const auto& row : rows) {
    auto c = config_from_json_text(row.at("config"));
    ASSERT_TRUE(c.ok());
    const std::int64_t fault = c->at("FAULT");
    const char* want = fault == 0 ? "ok" : fault == 3 ? "timeout" : "crash";
    EXPECT_EQ(row.at("outcome"), want) << row.at("config") << ": " << row.at("message");
    const char* says = fault == 1    ? "SIGSEGV"
                       : fault == 2  ? "SIGABRT"
                       : fault == 3  ? "deadline"
                       : fault == 12 ? "compile helper: "
                                     : "";
    EXPECT_TRUE(contains(row.at("message"), says)) << row.at("message");
    if (fault == 12) {
      EXPECT_EQ(row.at("device"), "") << "a compiler crash costs its candidate before any device sees it";
      EXPECT_EQ(row.at("eval_ms"), "");
    }
    ++by_outcome[row.at("outcome")];
  }
  EXPECT_EQ(by_outcome["ok"], 3);
  // Every candidate whose compile passed was evaluated once; those whose compiler
  // aborted never reached a device.
  const auto n = evaluations(journal);
  EXPECT_EQ(n.size(), 12u);
  for (const auto& [config, count] : n) {
    EXPECT_EQ(count, 1) << "crashed or hung, and not retried: " << config;
    EXPECT_FALSE(contains(config, "\"FAULT\":12")) << config;
  }
  int compiler_aborts = 0;
  for (const auto& l : read_fault_journal(journal))
    compiler_aborts += l.what == "prepare" && contains(l.config, "\"FAULT\":12");
  EXPECT_EQ(compiler_aborts, 3) << "each compiler crash happened once: not compiled again";
  EXPECT_TRUE(contains(r.err, "workers: ")) << "the progress line shows the workers' troubles:\n" << r.err;
  EXPECT_TRUE(contains(r.out, "worker fault injector (fault:0): ")) << r.out;
  EXPECT_TRUE(contains(r.out, "worker fault injector (fault:1): ")) << r.out;
}

// ---------------------------------------------------------------- which templates run

// Of several templates, one that cannot serve the problem on this device (here a space
// that asks for a Hopper, as gemm_wgmma's does, on the fault worker, which is no NVIDIA
// GPU; another that does not take the layout) is left out with the rule named, and the
// run goes on with the rest; named alone, it is a usage error that says why.
TEST_F(WorkerLoop, TemplatesThatCannotServeTheDeviceAreLeftOutWithTheReason) {
  const fs::path dir = fresh_dir("worker_serving");
  const fs::path kernels = fault_kernels(dir, {0}, {0}, 3);
  json j = json::parse(slurp(kernels / "fault_loop.json"));
  j["name"] = "fault_hopper";
  j["space"]["constraints"] = json::array({"NVIDIA_SM == 90"});
  std::ofstream(kernels / "fault_hopper.json") << j.dump(2);
  fs::copy_file(kernels / "fault_loop.hip", kernels / "fault_hopper.hip");
  j["name"] = "fault_nt_only";
  j["space"]["constraints"] = json::array();
  j["supports"]["layouts"] = json::array({"NT"});
  std::ofstream(kernels / "fault_nt_only.json") << j.dump(2);
  fs::copy_file(kernels / "fault_loop.hip", kernels / "fault_nt_only.hip");

  auto args = fault_loop_args(dir / "results", kernels, "0",
                              {"--template", "fault_hopper", "--template", "fault_nt_only", "--proposer",
                               "exhaustive", "--max-evals", "3"});
  auto r = run_process(args, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "leaving out fault_hopper: fault_hopper has no valid configuration")) << r.err;
  EXPECT_TRUE(contains(r.err, "NVIDIA_SM == 90")) << r.err;
  EXPECT_TRUE(contains(r.err, "leaving out fault_nt_only: fault_nt_only does not support layout NN")) << r.err;
  const auto rows = read_csv_rows(dir / "results" / "history.csv");
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& row : rows) EXPECT_EQ(row.at("template"), "fault_loop");

  auto alone = fault_loop_args(dir / "alone", kernels, "0", {"--max-evals", "3"});
  alone[std::find(alone.begin(), alone.end(), "fault_loop") - alone.begin()] = "fault_hopper";
  auto a = run_process(alone, dir);
  EXPECT_EQ(a.exit_code, 2) << a.err;
  EXPECT_TRUE(contains(a.err, "no template can serve")) << a.err;
  EXPECT_TRUE(contains(a.err, "NVIDIA_SM == 90")) << a.err;
  EXPECT_FALSE(fs::exists(dir / "alone" / "history.csv")) << "nothing started";
}

// ---------------------------------------------------------------- bench-best, usage

TEST_F(WorkerLoop, BenchBestEvaluatesInAWorker) {
  const fs::path dir = fresh_dir("worker_bench");
  const fs::path kernels = fault_kernels(dir, {0, 1}, {0}, 4);
  const fs::path journal = dir / "faults";
  auto bench = [&](int fault) {
    return run_process({bench_best_exe().string(), "--backend", "cuda", "--worker-exe", fault_worker().string(),
                        "--kernels-dir", kernels.string(), "--template", "fault_loop", "--m", "64", "--n", "64",
                        "--k", "64", "--no-vendor", "--config",
                        "{\"FAULT\":" + std::to_string(fault) + ",\"MS\":0,\"ID\":" + std::to_string(fault) + "}"},
                       dir, {{"TILESMITH_FAULT_JOURNAL", journal.string()}});
  };
  auto ok = bench(0);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_TRUE(contains(ok.out, "fault injector")) << ok.out;
  auto crash = bench(1);
  EXPECT_EQ(crash.exit_code, 1) << crash.out << crash.err;
  EXPECT_TRUE(contains(crash.out, "crash")) << crash.out;
  EXPECT_TRUE(contains(crash.out, "SIGSEGV")) << crash.out;
  const auto lines = read_fault_journal(journal);
  std::set<long> evaluated_by;
  for (const auto& l : lines)
    if (l.what == "evaluate") evaluated_by.insert(l.pid);
  EXPECT_EQ(evaluated_by.size(), 2u) << "each bench-best run measured in a worker of its own";
}

// A best_config.json written before the template gained a parameter (here: ID is taken
// out of the entry) reproduces with the template's default and says so; an entry with a
// parameter the template no longer has runs without it and is reported as a mismatch, not
// an error. --warm-start brings such entries up to date the same way.
TEST_F(WorkerLoop, BestConfigEntriesFromAnOlderTemplateStillRun) {
  const fs::path dir = fresh_dir("worker_old_entries");
  const fs::path kernels = fault_kernels(dir, {0}, {0}, 4);
  auto run = run_process(fault_loop_args(dir / "r", kernels, "0",
                                         {"--proposer", "random", "--seed", "1", "--candidates", "2", "--max-evals",
                                          "2", "--progress", "none"}),
                         dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  json best = json::parse(slurp(dir / "r" / "best_config.json"));
  ASSERT_EQ(best["entries"].size(), 1u);
  json older = best, newer = best;
  older["entries"][0]["config"].erase("ID");
  newer["entries"][0]["config"]["OLD"] = 7;
  std::ofstream(dir / "older.json") << older.dump(2);
  std::ofstream(dir / "newer.json") << newer.dump(2);
  auto bench = [&](const fs::path& file) {
    return run_process({bench_best_exe().string(), "--backend", "cuda", "--worker-exe", fault_worker().string(),
                        "--kernels-dir", kernels.string(), "--best-config", file.string(), "--no-vendor"},
                       dir);
  };
  auto a = bench(dir / "older.json");
  EXPECT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_TRUE(contains(a.out, "ID=0 filled in: the entry predates the parameter")) << a.out;
  EXPECT_TRUE(contains(a.out, "status    ok")) << a.out;
  auto b = bench(dir / "newer.json");
  EXPECT_EQ(b.exit_code, 4) << b.out << b.err;  // kExitMismatch
  EXPECT_TRUE(contains(b.out, "OLD=7 left out: the template no longer has it")) << b.out;
  EXPECT_TRUE(contains(b.out, "now       median")) << "still measured:\n" << b.out;
  EXPECT_TRUE(contains(b.out, "status    MISMATCH")) << b.out;

  auto w = run_process(fault_loop_args(dir / "w", kernels, "0",
                                       {"--proposer", "random", "--seed", "2", "--candidates", "1", "--max-evals", "1",
                                        "--progress", "none", "--warm-start", (dir / "older.json").string()}),
                       dir);
  EXPECT_EQ(w.exit_code, 0) << w.err;
  EXPECT_TRUE(contains(w.out + w.err, "ID=0 filled in")) << w.out << w.err;
  const auto rows = read_csv_rows(dir / "w" / "history.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(contains(rows[0].at("proposer"), "warm-start")) << rows[0].at("proposer") << "the updated seed was measured, not skipped as invalid";
}

TEST_F(WorkerLoop, DeviceFlagsThatDoNotFitAreExplained) {
  const fs::path dir = fresh_dir("worker_usage");
  const std::string exe = autotune_loop_exe().string();
  const std::vector<std::string> problem{"--m", "64", "--n", "64", "--k", "64", "--results", (dir / "r").string()};
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  std::vector<Case> cases = {
      {{"--devices", "0,x"}, "'x' is not a GPU ordinal"},
      {{"--devices", "0,,1"}, "is not a GPU ordinal"},
      {{"--devices=-1"}, "is not a GPU ordinal"},
      {{"--device", "0", "--devices", "1"}, "not both"},
      {{"--backend", "cuda", "--in-process", "--devices", "0,1"}, "one GPU"},
      {{"--in-process", "--run-deadline", "5"}, "--in-process uses none"},
      {{"--replay-workers", "2"}, "--replay-workers goes with --backend replay"},
      {{"--worker-exe", (dir / "absent").string()}, "--worker-exe"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> a{exe};
    a.insert(a.end(), problem.begin(), problem.end());
    a.insert(a.end(), c.args.begin(), c.args.end());
    auto r = run_process(a, dir);
    std::string cmd;
    for (const auto& s : c.args) cmd += " " + s;
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, c.says)) << cmd << " should say '" << c.says << "':\n" << r.err;
    EXPECT_FALSE(fs::exists(dir / "r")) << cmd << ": flags are checked before the results folder is made";
  }
  if (fs::exists(rtx3090_recording())) {
    auto r = run_process({exe, "--backend", "replay", "--replay-file", rtx3090_recording().string(), "--devices",
                          "0,1", "--results", (dir / "r2").string()},
                         dir);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "--replay-workers N")) << r.err;
  }
}

}  // namespace
}  // namespace tilesmith
