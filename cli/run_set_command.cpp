#include "cli/run_set_command.h"

#include <iostream>

#include "base/format.h"
#include "cli/exit_codes.h"
#include "cli/run_output.h"
#include "cli/signals.h"
#include "tuner/assembly/set_run.h"

namespace tilesmith::cli {
namespace fs = std::filesystem;

int run_problem_set_tuning(const RunFlags& f, const RunSettings& settings, ScaleOut* scale_out) {
  // Declared first so the console outlives the run: the ranks and workers still log as
  // the run's parts shut down.
  std::unique_ptr<Console> console;
  std::unique_ptr<SetRun> run;
  if (auto code = open_run(f, settings, scale_out, &run, &console)) return *code;
  spdlog::info("problem set {} ({} problems) from {} in {}; proposer: {}; budget:{}{}",
               run->set().name, run->set().entries.size(), f.problems, f.results, run->proposer(),
               f.max_evals ? " --max-evals " + std::to_string(f.max_evals) : "",
               f.hours > 0 ? " --hours " + format_number(f.hours)
                           : (f.max_evals ? "" : " none (until every search ends or Ctrl-C)"));

  auto report = run_on_console(*run, *console);
  if (!report.ok()) {
    spdlog::error("the problem set stopped: {}", report.status().message());
    // As for one problem (run_command.cpp): a run that cannot go on as asked says what to
    // do instead, and resuming it as it is would stop again.
    if (status_exit(report.status()) == kExitUsage) return exit_code_for_signal(kExitUsage);
    spdlog::error("every row written so far is in the problems' folders under {}; run the same command again to "
                  "resume",
                  f.results);
    return exit_code_for_signal(kExitFailed);
  }
  spdlog::default_logger()->flush();
  std::string summary = format_problem_set_summary(*report);
  if (scale_out) summary += scale_out->host_summary();
  std::cout << summary << "summary: " << (fs::path(f.results) / "summary.json").string() << "\n"
            << std::flush;
  spdlog::debug("summary:\n{}", summary);
  bool any = false;
  for (const auto& p : report->problems) any = any || p.ours_ms.has_value();
  return exit_code_for_signal(any ? kExitOk : kExitFailed);
}

}  // namespace tilesmith::cli
