#pragma once
// The command line of what a command measures with: --backend, --device(s), worker and
// replay options, into the EvaluatorSettings that tuner/assembly/open_evaluator.h opens.

#include "tuner/assembly/open_evaluator.h"

// CLI11 declared, not included: its header costs ~6 s of compile a translation unit, and most
// that include this one only pass an App along (cli/run_subcommand.h and the .cpp files include it).
namespace CLI {
class App;
}

namespace tilesmith::cli {

// --backend, --device, --in-process, --worker-exe, --run-deadline, --compile-deadline,
// --cache-dir, --replay-file, --replay-space; with `several_devices` also --devices and
// --replay-workers (autotune-loop measures several candidates at once; bench-best one).
void add_evaluator_flags(CLI::App& app, EvaluatorSettings& flags, bool several_devices);

}  // namespace tilesmith::cli
