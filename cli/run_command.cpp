#include "cli/run_command.h"

#include <iostream>

#include "base/host_name.h"
#include "cli/exit_codes.h"
#include "cli/run_output.h"
#include "cli/run_set_command.h"
#include "cli/signals.h"
#include "tuner/assembly/rank_service.h"
#include "tuner/assembly/single_run.h"
#include "tuner/loop/summary.h"

namespace tilesmith::cli {
namespace fs = std::filesystem;

namespace {

// --m/--n/--k and friends into settings.problem. An exit code when they are not a problem.
std::optional<int> read_problem_flags(const RunFlags& f, RunSettings* settings) {
  if (problem_given(f.problem_flags)) {
    auto p = to_problem(f.problem_flags);
    if (!p.ok()) return usage(p.status().message());
    settings->problem = *p;
  } else if ((f.problem_flags.m || f.problem_flags.n || f.problem_flags.k) &&
             f.problem_file.empty()) {
    return usage("give all of --m, --n and --k (or --problem-file FILE)");
  }
  return std::nullopt;
}

// A rank other than 0: its log lines name it; it writes nothing else.
int serve_remote_rank(const RunFlags& f, ScaleOut& scale_out) {
  spdlog::set_pattern("[rank " + std::to_string(scale_out.rank()) + " " + local_host_name() + "] %l: %v");
  spdlog::set_level(f.verbose ? spdlog::level::info : spdlog::level::warn);
  return serve_rank(f, scale_out);
}

int run_single(const RunFlags& f, const RunSettings& settings, ScaleOut* scale_out) {
  // Declared first so the console outlives the run: the ranks and workers still log as
  // the run's parts shut down.
  std::unique_ptr<Console> console;
  std::unique_ptr<SingleRun> run;
  if (auto code = open_run(f, settings, scale_out, &run, &console)) return *code;
  log_run_start(f, *run);
  auto report = run_on_console(*run, *console);
  if (!report.ok()) {
    spdlog::error("the run stopped: {}", report.status().message());
    // A run that cannot go on as asked (--objective energy on a GPU without an energy
    // counter) would stop again on resume: its message says what to do instead.
    if (status_exit(report.status()) == kExitUsage) return exit_code_for_signal(kExitUsage);
    spdlog::error("every row written so far is in {}; run the same command again to resume",
                  (fs::path(f.results) / kHistoryFileName).string());
    return exit_code_for_signal(kExitFailed);
  }
  SummaryContext sc;
  sc.problem = run->problem();
  sc.device = run->device();
  sc.results_dir = f.results;
  spdlog::default_logger()->flush();
  std::string summary = format_run_summary(*report, sc);
  if (scale_out) summary += scale_out->host_summary();
  std::cout << summary << std::flush;
  spdlog::debug("summary:\n{}", summary);
  return exit_code_for_signal(report->winners.empty() ? kExitFailed : kExitOk);
}

}  // namespace

int run_tuning(const RunFlags& flags) {
  RunFlags f = flags;
  // Under mpirun/srun with several ranks: rank 0 runs below, the others serve it.
  auto joined = join_scale_out(&f.evaluator);
  if (!joined.ok()) {
    if (joined.status().code() == StatusCode::kInvalidArgument)
      return usage(joined.status().message());
    std::cerr << "autotune-loop: " << joined.status().message() << "\n";
    return kExitFailed;
  }
  std::unique_ptr<ScaleOut> scale_out = std::move(joined).value();
  if (scale_out && scale_out->rank() > 0) return serve_remote_rank(f, *scale_out);
  RunSettings settings = f;
  if (auto code = read_problem_flags(f, &settings)) return *code;
  if (!f.problems.empty()) return run_problem_set_tuning(f, settings, scale_out.get());
  return run_single(f, settings, scale_out.get());
}

}  // namespace tilesmith::cli
