#pragma once
// The orchestrator's end of one live worker process: the process (own group, reaped
// on every path), a request pipe, a reply pipe read frame by frame with a deadline,
// and the worker's stderr, drained while waiting (so a chatty worker never blocks on
// a full pipe) and kept as a tail for crash reports.
//
// Not thread-safe: one thread drives one connection. Destroying it kills the worker's
// process group and reaps it.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "runtime/worker/child_process.h"
#include "runtime/worker/fd_io.h"
#include "runtime/worker/frame.h"

namespace tilesmith::worker {

struct WorkerLaunch {
  std::vector<std::string> argv;  // argv[0]: the executable's path
  std::vector<std::string> env;   // "NAME=value" on top of ours
  std::size_t stderr_tail_lines = 40;
  // Each complete line the worker writes to stderr, prefixed "[worker PID] ". Called on
  // the thread that drives the connection.
  std::function<void(const std::string&)> on_stderr_line;
};

// The last lines of a byte stream, split at newlines; over-long lines are cut.
class LineTail {
 public:
  explicit LineTail(std::size_t max_lines) : max_lines_(max_lines) {}
  void feed(const char* data, std::size_t n,
            const std::function<void(const std::string&)>& on_line);
  void flush(const std::function<void(const std::string&)>& on_line);  // the unterminated last line
  const std::deque<std::string>& lines() const { return lines_; }

 private:
  void push(std::string line, const std::function<void(const std::string&)>& on_line);
  std::size_t max_lines_;
  std::deque<std::string> lines_;
  std::string partial_;
};

class WorkerConnection {
 public:
  // Starts the worker with fresh close-on-exec pipes as its stdin, stdout and stderr.
  static Result<std::unique_ptr<WorkerConnection>> spawn(const WorkerLaunch& launch);
  ~WorkerConnection();
  WorkerConnection(const WorkerConnection&) = delete;
  WorkerConnection& operator=(const WorkerConnection&) = delete;

  pid_t pid() const { return child_.pid(); }

  // Sends one message. unavailable when the worker has closed its end (it is gone and
  // did not read the message whole); io_error when it does not read before `deadline`.
  Status send(const nlohmann::json& message, Clock::time_point deadline);

  enum class Kind {
    kMessage,        // `message` holds the next message
    kDeadline,       // nothing complete arrived before the deadline
    kClosed,         // the worker closed its reply pipe (usually: it died); `detail` says
                     // whether it stopped in the middle of a message
    kProtocolError,  // garbage, an oversized frame or a payload that is not a JSON object
  };
  struct Received {
    Kind kind = Kind::kDeadline;
    nlohmann::json message;
    std::string detail;
  };
  Received receive(Clock::time_point deadline);

  // Ends the worker now: SIGKILL to its group, reap, read what is left of its stderr.
  // Returns how it ended ("killed by signal 11 (SIGSEGV: ...)", or "still running; killed"
  // when this kill is what ended it). Idempotent.
  std::string kill();
  // For a worker that closed its pipe: gives it `grace` to finish dying by itself (so
  // its own signal or exit code is what is reported), then kill().
  std::string collect_exit(std::chrono::milliseconds grace);
  // Asks the worker to exit (shutdown message), waits up to `grace`, then kill().
  void shutdown(std::chrono::milliseconds grace);
  // True while the process has not exited (reaps it when it has).
  bool alive();

  // Reads whatever the worker wrote to stderr so far, without waiting.
  void drain_stderr();
  const std::deque<std::string>& stderr_tail() const { return tail_.lines(); }
  // The last `lines` non-empty stderr lines joined with " | ", cut to `max_chars`.
  std::string stderr_excerpt(std::size_t lines = 4, std::size_t max_chars = 600) const;

 private:
  explicit WorkerConnection(const WorkerLaunch& launch);
  void read_stderr_chunk();
  std::string ended_description(bool killed_running);

  ChildProcess child_;
  UniqueFd to_worker_, from_worker_, worker_stderr_;
  FrameDecoder decoder_;
  bool reply_eof_ = false;
  LineTail tail_;
  std::function<void(const std::string&)> on_line_;
  std::string ended_;  // set once the process is reaped
};

}  // namespace tilesmith::worker
