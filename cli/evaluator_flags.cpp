#include "cli/evaluator_flags.h"

#include "cli/flag_checks.h"

namespace tilesmith::cli {

void add_evaluator_flags(CLI::App& app, EvaluatorSettings& f, bool several_devices) {
  app.add_option("--backend", f.backend,
                 "where candidates are measured: cuda, hip, replay (recorded measurements, no GPU), or auto (the "
                 "first GPU backend that finds a GPU)")
      ->check(CLI::IsMember({"auto", "cuda", "hip", "replay"}))
      ->capture_default_str();
  app.add_option("--device", f.device,
                 several_devices ? "GPU ordinal within the backend (default 0); the same as --devices N"
                                 : "GPU ordinal within the backend (default 0)")
      ->check(integer_at_least(0));
  if (several_devices) {
    app.add_option("--devices", f.devices,
                   "GPUs to measure on, one worker process each, candidates of the same problem in parallel: "
                   "'0,1', or 'all'. An ordinal given twice ('0,0') starts two workers on that GPU. Per host under "
                   "mpirun/srun; 'local-rank' there is the GPU numbered like this rank among its host's ranks (one "
                   "rank per GPU; docs/scale-out.md)");
    app.add_option("--replay-workers", f.replay_workers,
                   "with --backend replay: answer in this many worker processes instead of this one (the worker "
                   "path without a GPU; 0: in this process)")
        ->check(integer_from_to(0, 64))
        ->capture_default_str();
  }
  app.add_flag("--in-process", f.in_process,
               "for debugging: measure in this process instead of a worker process (one GPU; a kernel that faults "
               "or hangs then ends the run, and no deadline applies)");
  app.add_option("--worker-exe", f.worker_exe,
                 "the worker executable (default: $TILESMITH_WORKER, else tilesmith-worker beside this program)");
  // Both deadlines in seconds; 0 scales them from what the run has seen.
  const std::pair<const char*, double*> deadlines[] = {{"--run-deadline", &f.run_deadline_s},
                                                       {"--compile-deadline", &f.compile_deadline_s}};
  const char* const deadline_help[] = {
      "seconds a candidate's run may take before it is cut off as timeout, plus an allowance for a worker's first run "
      "of the problem (inputs, CPU reference); default 0: scaled from the expected runtime, at least 30 "
      "(docs/reliability.md)",
      "seconds a compile may take before it is cut off as timeout (default 0: at least 60, 10x the slowest compile "
      "seen)"};
  for (std::size_t i = 0; i < 2; ++i)
    app.add_option(deadlines[i].first, *deadlines[i].second, deadline_help[i])->check(number_at_least(0));
  app.add_option("--cache-dir", f.cache_dir,
                 "compiled-kernel cache (default: $XDG_CACHE_HOME/tilesmith/kernels or ~/.cache/tilesmith/kernels)");
  app.add_option("--replay-file", f.replay_files,
                 "with --backend replay: a Kernel Tuner cache file (.json or .json.gz) to answer from, or a folder "
                 "of them (e.g. data/recordings/llama3_8b_bf16_decode). Repeatable (--problems): each problem is "
                 "answered by the recordings of its shape, and a problem no recording covers is refused")
      ->type_name("FILE")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--replay-space", f.replay_space,
                 "with --backend replay: the space file with the recording's constraints (default: found by kernel "
                 "name in data/spaces or $TILESMITH_SPACES_DIR)");
}

}  // namespace tilesmith::cli
