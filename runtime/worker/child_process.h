#pragma once
// A child process in its own process group, started with posix_spawn and always
// reaped. The group lets one SIGKILL take the worker and anything it started (a
// compiler's helper processes) together; reaping in the destructor means no zombie
// outlives its owner.
//
// Ownership: a ChildProcess owns its pid until reaped; it is move-only. Not
// thread-safe: one owner thread at a time.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"

namespace tilesmith::worker {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is the executable's path (not searched in PATH)
  std::vector<std::string> env;   // "NAME=value" set on top of this process's environment
  // The child's fds 0, 1 and 2 (dup2'd; every other descriptor of ours is close-on-exec).
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;
};

class ChildProcess {
 public:
  // The child starts in a new process group (its own pid), with an empty signal mask
  // and default dispositions for the signals a parent commonly blocks or ignores.
  static Result<ChildProcess> spawn(const SpawnSpec& spec);

  ChildProcess() = default;
  ~ChildProcess() { kill_and_reap(); }
  ChildProcess(ChildProcess&& o) noexcept;
  ChildProcess& operator=(ChildProcess&& o) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !reaped_; }
  bool reaped() const { return reaped_; }
  // The wait status once reaped (see describe_wait_status).
  int wait_status() const { return status_; }

  // Reaps without blocking; true once the child has exited (now or before).
  bool try_reap();
  // Waits up to `grace` for the child to exit by itself; true when it did.
  bool wait_for_exit(std::chrono::milliseconds grace);
  // SIGKILL to the whole group unless already reaped, then a blocking reap. Returns
  // true when the child was still running (so the kill is what ended it). Idempotent.
  bool kill_and_reap() noexcept;

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

// "exited with code 3", "killed by signal 11 (SIGSEGV: Segmentation fault)".
std::string describe_wait_status(int status);

}  // namespace tilesmith::worker
