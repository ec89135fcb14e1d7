#pragma once
// The main job of autotune-loop: the tuning run from the command line, of one problem or
// of a set (--problems, cli/run_set_command.h), on one host or as a rank under mpirun. Its
// flags are in cli/run_flags.h; tuner/assembly puts the run together, this reports and
// prints (cli/run_output.h).

#include "cli/run_flags.h"

namespace tilesmith::cli {

// Runs; returns the process exit code (cli/exit_codes.h).
int run_tuning(const RunFlags& flags);

}  // namespace tilesmith::cli
