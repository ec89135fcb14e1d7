#pragma once
// What autotune-loop's tuning runs (one problem, a set) say and how they end: the errors
// before the output is open (one line on stderr), the console and its log file, the log
// lines and progress while the loop runs, and the exit codes (cli/exit_codes.h).

#include <memory>
#include <optional>
#include <string>

#include <spdlog/spdlog.h>

#include "base/status.h"
#include "cli/console.h"
#include "cli/run_flags.h"
#include "cli/signals.h"
#include "tuner/assembly/scale_out.h"
#include "tuner/assembly/single_run.h"
#include "tuner/loop/loop.h"

namespace tilesmith::cli {

// Log lines to spdlog, progress to the console.
class ConsoleObserver final : public LoopObserver {
 public:
  explicit ConsoleObserver(Console& console) : console_(console) {}
  void log(LogLevel level, const std::string& message) override;
  void on_row(const HistoryRow&, const LoopProgress& p) override { console_.progress(p); }
  void on_generation(const LoopProgress& p) override { console_.progress(p, console_.live()); }
  void on_idle(const LoopProgress& p) override { console_.progress(p); }

 private:
  Console& console_;
};

// "autotune-loop: <message>" on stderr; kExitUsage.
int usage(const std::string& message);
// The exit code for an error: kExitNoDevice for unavailable, kExitUsage for bad settings
// or input files (invalid_argument, not_found, parse_error, failed_precondition),
// kExitFailed otherwise.
int status_exit(const Status& st);
// An error before the output is open: said on stderr; its exit code.
int refuse(const Status& st);

// The --log-file folder is checked before anything is opened (--results by the assembly).
Status check_log_file(const RunFlags& f);
// The results folder and the console (with its log file), once every input is known to
// be good: the first thing a run writes. An exit code when it fails, said on stderr.
std::optional<int> open_output(const RunFlags& f, std::unique_ptr<Console>* console);

// The steps every run (tuner/assembly's SingleRun, SetRun) takes before it measures: the
// --log-file check, Run::prepare (refused on stderr: nothing written yet), the output, the
// templates left out, Run::assemble (logged). *run and *console are set as they open;
// the caller declares `console` first so it outlives the run's shutdown. An exit code to
// end with, or std::nullopt to go on.
template <typename Run>
std::optional<int> open_run(const RunFlags& f, const RunSettings& settings, ScaleOut* scale_out,
                            std::unique_ptr<Run>* run, std::unique_ptr<Console>* console) {
  if (Status st = check_log_file(f); !st.ok()) return usage(st.message());
  auto prepared = Run::prepare(settings);
  if (!prepared.ok()) return refuse(prepared.status());
  *run = std::move(prepared).value();
  if (auto code = open_output(f, console)) return *code;
  for (const auto& line : (*run)->left_out()) spdlog::warn(line);
  if (Status st = (*run)->assemble(scale_out); !st.ok()) {
    spdlog::error(st.message());
    return status_exit(st);
  }
  return std::nullopt;
}

// Runs `run` until it ends or Ctrl-C/SIGTERM stops it, its progress on the console, whose
// status line is taken away afterwards (before the summary is printed).
template <typename Run>
auto run_on_console(Run& run, Console& console) {
  install_stop_handlers();
  ConsoleObserver observer(console);
  auto report = run.run(observer, &stop_requested());
  console.clear_status();
  return report;
}

// What a single run starts from: new or resumed, repairs, problem, device, templates, budgets.
void log_run_start(const RunFlags& f, const SingleRun& run);

}  // namespace tilesmith::cli
