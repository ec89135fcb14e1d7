#pragma once
// bench-best: reproduce tuned kernels on this machine next to the vendor library.
//  - With --config: one template + config on the problem the flags give.
//  - With --best-config FILE (or --results DIR): every entry of best_config.json recorded
//    on this device (same name and architecture; another driver is noted), filtered by
//    the problem flags and --template when given. Each is re-rendered, recompiled,
//    validated against the CPU reference and timed; the recorded figures, today's and
//    the vendor library's are printed side by side, and a median that moved by more than
//    --drift-tolerance is flagged.
// On a GPU everything is measured in a worker process (tilesmith-worker), as in
// autotune-loop: a kernel that faults or hangs is reported as crash or timeout, and this
// process loads no GPU runtime; --in-process measures here instead (debugging).
// Exit codes (cli/exit_codes.h): 1 when an entry fails validation or evaluation (or drift
// with --fail-on-drift); otherwise 4 when no entry is for this device or an entry's
// template is missing or changed since it was recorded (saying what differs); 2 bad
// usage; 3 no GPU.

#include <cstdint>
#include <string>

#include "cli/cli_common.h"
#include "cli/evaluator_setup.h"

namespace tilesmith::cli {

struct BenchBestOptions {
  ProblemFlags problem;
  EvaluatorFlags evaluator;
  std::string template_name;
  std::string config_json;
  std::string best_config;  // a best_config.json
  std::string results;      // a results folder holding best_config.json
  std::string kernels_dir;
  std::uint64_t seed = 1;
  bool no_vendor = false;
  bool json = false;
  double drift_tolerance_pct = 10;
  bool fail_on_drift = false;
};

int bench_best(const BenchBestOptions& options);

}  // namespace tilesmith::cli
