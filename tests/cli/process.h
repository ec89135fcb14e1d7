#pragma once
// Running the real executables from tests: fork/exec with stdout and stderr captured in
// files (no pipe can fill up and stall the child), exit code or terminating signal, and
// signals sent while it runs.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_paths.h"

namespace tilesmith::testing {

inline std::filesystem::path binary_dir() {
  if (const char* b = std::getenv("TILESMITH_BINARY_DIR"); b && *b) return b;
  return TILESMITH_BINARY_DIR;
}
inline std::filesystem::path autotune_loop_exe() { return binary_dir() / "cli" / "autotune-loop"; }
inline std::filesystem::path bench_best_exe() { return binary_dir() / "cli" / "bench-best"; }

// The Kernel Tuner recordings: $TILESMITH_KT_DATA, else ../shared/data/kernel_tuner_gemm
// beside the source tree.
inline std::filesystem::path recordings_dir() {
  if (const char* d = std::getenv("TILESMITH_KT_DATA"); d && *d) return d;
  return source_dir().parent_path() / "shared" / "data" / "kernel_tuner_gemm";
}
inline std::filesystem::path rtx3090_recording() { return recordings_dir() / "gemm_RTX_3090.json.gz"; }

// Skips the calling test (gtest) when the recording the replay runs need is not there.
#define REQUIRE_RECORDING()                                                                              \
  if (!std::filesystem::exists(::tilesmith::testing::rtx3090_recording()))                              \
  GTEST_SKIP() << "the Kernel Tuner recording is not at " << ::tilesmith::testing::rtx3090_recording()  \
               << " (set TILESMITH_KT_DATA to the folder holding gemm_RTX_3090.json.gz)"

inline bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct ProcessResult {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  std::string out, err;
};

class Child {
 public:
  // Starts argv[0] (a path) with `env` added to the environment; output goes to files in
  // `scratch`.
  Child(const std::vector<std::string>& argv, const std::filesystem::path& scratch,
        const std::map<std::string, std::string>& env = {}) {
    // Atomic: tests start children from several threads (the code-hash test), and two with the
    // same tag wrote into each other's output files.
    static std::atomic<int> counter{0};
    std::filesystem::create_directories(scratch);
    const std::string tag = std::to_string(::getpid()) + "_" + std::to_string(counter++);
    out_path_ = scratch / ("stdout_" + tag + ".txt");
    err_path_ = scratch / ("stderr_" + tag + ".txt");
    pid_ = ::fork();
    if (pid_ == 0) {
      int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int in = ::open("/dev/null", O_RDONLY);
      ::dup2(out, 1);
      ::dup2(err, 2);
      ::dup2(in, 0);
      ::setpgid(0, 0);  // its own group: a signal to the test is not a signal to it
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig) { ::kill(pid_, sig); }

  // Waits up to `timeout_s`; kills it (and reports SIGKILL) past that.
  ProcessResult wait(double timeout_s = 120) {
    ProcessResult r;
    int st = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      pid_t w = ::waitpid(pid_, &st, WNOHANG);
      if (w == pid_) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    reaped_ = true;
    if (WIFEXITED(st)) r.exit_code = WEXITSTATUS(st);
    if (WIFSIGNALED(st)) r.signal = WTERMSIG(st);
    r.out = slurp(out_path_);
    r.err = slurp(err_path_);
    return r;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::filesystem::path out_path_, err_path_;
};

inline ProcessResult run_process(const std::vector<std::string>& argv, const std::filesystem::path& scratch,
                                 const std::map<std::string, std::string>& env = {}, double timeout_s = 120) {
  Child c(argv, scratch, env);
  return c.wait(timeout_s);
}

// A fresh folder under the temp dir, named after the running test.
inline std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("tilesmith_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace tilesmith::testing
