#pragma once
// The command line of what a command measures with: --backend, --device(s), worker and
// replay options, into the EvaluatorSettings that tuner/assembly/open_evaluator.h opens.

#include "cli/cli11_fwd.h"
#include "tuner/assembly/open_evaluator.h"

namespace tilesmith::cli {

// --backend, --device, --in-process, --worker-exe, --run-deadline, --compile-deadline,
// --cache-dir, --replay-file, --replay-space; with `several_devices` also --devices and
// --replay-workers (autotune-loop measures several candidates at once; bench-best one).
void add_evaluator_flags(CLI::App& app, EvaluatorSettings& flags, bool several_devices);

}  // namespace tilesmith::cli
