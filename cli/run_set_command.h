#pragma once
// autotune-loop --problems: a problem set's run (tuner/assembly/set_run.h) from the
// command line: its errors, console, log lines and summary.

#include "cli/run_flags.h"
#include "tuner/assembly/scale_out.h"

namespace tilesmith::cli {

// `settings` are the flags' (the problem flags checked); returns the process exit code.
int run_problem_set_tuning(const RunFlags& flags, const RunSettings& settings, ScaleOut* scale_out);

}  // namespace tilesmith::cli
