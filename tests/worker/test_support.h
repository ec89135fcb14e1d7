#pragma once
// Helpers for the worker tests: where the worker executables are, evaluator options
// for the fault worker, the fault_process template, a synthetic Kernel Tuner
// recording, and process hygiene probes (open fds, resident memory, children).

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "registry/template_library.h"
#include "runtime/worker/worker_evaluator.h"
#include "tests/test_paths.h"
#include "tests/worker/faults.h"

namespace tilesmith::worker::testing {

inline std::filesystem::path fault_worker_path() { return TILESMITH_FAULT_WORKER; }
// $TILESMITH_WORKER wins, so the tests also run where they were copied to (the GPU machine).
inline std::filesystem::path worker_path() {
  if (const char* w = std::getenv("TILESMITH_WORKER"); w && *w) return w;
  return TILESMITH_WORKER_EXE;
}

// A fresh folder for this test, removed by the caller when it likes.
inline std::filesystem::path test_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "_" + info->name();
  for (char& c : name)
    if (c == '/') c = '_';
  auto dir = std::filesystem::temp_directory_path() /
             ("tilesmith_worker_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline const KernelTemplate& fault_template() {
  static TemplateLibrary lib =
      std::move(TemplateLibrary::from_directory(tilesmith::testing::test_kernels_dir())).value();
  return *lib.find("fault_process");
}

inline GemmProblem small_problem() {
  GemmProblem p;
  p.m = p.n = p.k = 64;
  return p;
}

inline Config fault_config(int fault, int id, int ms = 0) {
  Config c = fault_template().defaults();
  c["FAULT"] = fault;
  c["ID"] = id;
  c["MS"] = ms;
  return c;
}

// Options for the fault worker: short deadlines and backoff so failures are quick;
// every candidate the worker starts is journaled in `journal`.
inline WorkerEvaluatorOptions fault_options(const std::filesystem::path& journal,
                                            std::vector<std::string> extra_args = {}) {
  WorkerEvaluatorOptions o;
  o.worker.executable = fault_worker_path();
  o.worker.backend = "fault";
  o.worker.template_dirs = {tilesmith::testing::test_kernels_dir()};
  o.worker.extra_args = std::move(extra_args);
  o.worker.env = {std::string(kJournalEnv) + "=" + journal.string()};
  o.deadlines.start_s = 20;
  o.deadlines.compile_s = 10;
  o.deadlines.run_s = 10;
  o.health.backoff_initial_s = 0.2;
  o.health.backoff_max_s = 1.0;
  o.compile_processes = 1;
  return o;
}

struct JournalEntry {
  long pid = 0;
  std::string what;  // "evaluate" or "prepare"
  Config config;
};

inline std::vector<JournalEntry> read_journal(const std::filesystem::path& path) {
  std::vector<JournalEntry> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    JournalEntry e;
    std::string json;
    s >> e.pid >> e.what;
    std::getline(s, json);
    auto c = config_from_json_text(json);
    EXPECT_TRUE(c.ok()) << line;
    if (c.ok()) e.config = *c;
    out.push_back(std::move(e));
  }
  return out;
}

// How many times the worker started evaluating each candidate ID (health checks apart).
inline std::map<std::int64_t, int> evaluations_by_id(const std::filesystem::path& journal) {
  std::map<std::int64_t, int> n;
  for (const auto& e : read_journal(journal))
    if (e.what == "evaluate" && e.config.at("HEALTH") == 0) ++n[e.config.at("ID")];
  return n;
}

inline int open_fd_count() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

inline long resident_bytes() {
  long pages_total = 0, pages_resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = -1;
  std::fclose(f);
  return pages_resident * ::sysconf(_SC_PAGESIZE);
}

inline long process_resident_bytes(long pid) {
  long total = 0, resident = -1;
  std::ifstream statm("/proc/" + std::to_string(pid) + "/statm");
  statm >> total >> resident;
  return resident < 0 ? -1 : resident * ::sysconf(_SC_PAGESIZE);
}

// True when this process has no children at all, running or zombie. (A zombie found
// here is reaped by the probe, and still reported.)
inline bool no_children(std::string* what = nullptr) {
  int status = 0;
  pid_t r = ::waitpid(-1, &status, WNOHANG);
  if (r == -1 && errno == ECHILD) return true;
  if (what)
    *what = r == 0 ? "a child is still running"
                   : "a zombie child " + std::to_string(r) + " was left unreaped";
  return false;
}

// A Kernel Tuner cache with parameters A and B (1..side each), every configuration
// recorded with a few repetitions; returns its path.
inline std::filesystem::path write_recording(const std::filesystem::path& dir, int side = 64) {
  std::ostringstream s;
  s << R"({"device_name": "Synthetic GPU", "kernel_name": "synthetic", "problem_size": [512, 512], )"
    << R"("objective": "time", "tune_params_keys": ["A", "B"], "tune_params": {"A": [)";
  for (int i = 1; i <= side; ++i) s << (i > 1 ? ", " : "") << i;
  s << R"(], "B": [)";
  for (int i = 1; i <= side; ++i) s << (i > 1 ? ", " : "") << i;
  s << R"(]}, "cache": {)";
  bool first = true;
  for (int a = 1; a <= side; ++a) {
    for (int b = 1; b <= side; ++b) {
      double t = 1.0 + 0.01 * ((a * 37 + b * 11) % 97);
      s << (first ? "" : ", ") << '"' << a << ',' << b << R"(": {"A": )" << a << R"(, "B": )" << b;
      if ((a * b) % 17 == 0) {
        s << R"(, "time": "CompilationFailedConfig", "compile_time": 1.0})";
      } else {
        s << R"(, "time": )" << t << R"(, "times": [)" << t * 0.98 << ", " << t << ", " << t * 1.03
          << ", " << t * 1.01 << R"(], "compile_time": 2.5})";
      }
      first = false;
    }
  }
  s << "}}";
  auto path = dir / "synthetic.json";
  std::ofstream(path) << s.str();
  return path;
}

// Options for the real tilesmith-worker replaying `recording`.
inline WorkerEvaluatorOptions replay_options(const std::filesystem::path& recording,
                                             std::uint64_t seed = 7) {
  WorkerEvaluatorOptions o;
  o.worker.executable = worker_path();
  o.worker.backend = "replay";
  o.worker.recordings = {recording};
  o.worker.spaces_dir = recording.parent_path() / "no_space_files_here";
  o.worker.gpu.seed = seed;
  o.compile_processes = 1;
  return o;
}

}  // namespace tilesmith::worker::testing
