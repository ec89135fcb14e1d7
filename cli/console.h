#pragma once
// Output for people while a run goes on. Log lines go through spdlog (the default logger
// is replaced, so the LLM client's warnings land here too): to stderr, and with every
// detail to a log file. On a terminal a live status line sits under the log lines and is
// redrawn in place; elsewhere (nohup, tmux logs, CI) plain progress lines are logged at
// an interval instead. Thread-safe (spdlog's sink mutex).

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "base/status.h"
#include "tuner/loop/progress.h"

namespace tilesmith::cli {

class StatusSink;

struct ConsoleOptions {
  int verbosity = 0;  // -1 warnings only, 0 info, 1 every candidate
  std::filesystem::path log_file;  // empty: none
  // "auto": a status line when stderr is a terminal, plain lines otherwise; "tty",
  // "plain", "none".
  std::string progress = "auto";
  double interval_s = 30;  // plain mode: one progress line at most this often
};

class Console {
 public:
  // Installs the default spdlog logger; io_error when the log file cannot be opened.
  static Result<std::unique_ptr<Console>> create(const ConsoleOptions& options);
  ~Console();  // removes the status line

  bool live() const { return live_; }
  // TTY: redraws the status line (at most 10 times a second unless `force`). Plain: logs
  // a progress line when the interval has passed (or `force`). None: nothing.
  void progress(const LoopProgress& p, bool force = false);
  // Takes the status line away (before printing the summary).
  void clear_status();

 private:
  Console() = default;
  ConsoleOptions options_;
  bool live_ = false;
  std::shared_ptr<StatusSink> sink_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace tilesmith::cli
