#pragma once
// bench-best: reproduce tuned kernels on this machine next to the vendor library.
//  - With --config: one template + config on the problem the flags give (with --epilogue-cost,
//    also without its fused epilogue, to show what the epilogue costs ours and the vendor's).
//  - With --best-config FILE (or --results DIR), each repeatable: every entry of those
//    best_config.json files recorded on this device (same name and architecture; another
//    driver is noted), filtered by the problem flags and --template when given (with
//    --fastest-only, one per problem: the fastest recorded). A problem-set folder (one
//    holding problem_set.json) stands for its problems' folders. Each entry is
//    re-rendered, recompiled (all of them first, in parallel), validated against the CPU
//    reference and timed; the recorded figures, today's, the vendor library's and the
//    problem's read floor (runtime/read_floor.h) are printed side by side, all measured
//    in one process, and a median that moved by more than --drift-tolerance is flagged.
//    With --versus-kernels-dir DIR as well, the same config compiled from DIR's template of the
//    same name (a changed kernel against the one before it) runs beside it in the same rounds.
//  - Then ours and the vendor are measured again in --rounds alternating rounds, and their
//    ratio is given round by round with its interval (analysis/paired_ratio.h): the figure
//    to compare with, since a clock that moves between two separate measurements does not
//    bias it.
// On a GPU everything is measured in a worker process (tilesmith-worker), as in
// autotune-loop: a kernel that faults or hangs is reported as crash or timeout, and this
// process loads no GPU runtime; --in-process measures here instead (debugging).
// Exit codes (cli/exit_codes.h): 1 when an entry fails validation or evaluation (or drift
// with --fail-on-drift); otherwise 4 when no entry is for this device or an entry's
// template is missing or changed since it was recorded (saying what differs); 2 bad
// usage; 3 no GPU.

#include <cstdint>
#include <string>
#include <vector>

#include "cli/bench_best_rounds.h"
#include "cli/cli_common.h"
#include "cli/evaluator_flags.h"

namespace tilesmith::cli {

struct BenchBestOptions {
  ProblemFlags problem;
  EvaluatorSettings evaluator;
  std::string template_name;
  std::string config_json;
  std::vector<std::string> best_configs;  // best_config.json files
  std::vector<std::string> results;       // results folders holding best_config.json (or problem sets)
  bool fastest_only = false;              // one entry per problem: the fastest recorded
  bool read_floor = true;                 // measure each problem's read floor
  std::int64_t read_floor_max_m = -1;     // only for problems with M <= this (-1: all)
  std::string kernels_dir;
  std::string versus_kernels_dir;         // --config: the same config from this folder's template too
  std::uint64_t seed = 1;
  bool epilogue_cost = false;             // --config: also time the plain GEMM, ours and the vendor's
  bool no_vendor = false;
  bool vendor_only = false;  // the flags' problem: the vendor library and the read floor, no config of ours
  int rounds = 8;  // ours and the vendor in this many alternating rounds (0: one measurement each)
  int rounds_max = 0;        // then pairs of rounds while a ratio's interval is wider than
  double ratio_width = 0.05;  // this, up to rounds_max (0: exactly `rounds`)
  RoundsPlan rounds_plan() const { return RoundsPlan{rounds, rounds_max, ratio_width}; }
  bool json = false;
  double drift_tolerance_pct = 10;
  bool fail_on_drift = false;
  // No GPU: compile the entries and record or check their code hashes (cli/bench_best_code_hashes.h).
  bool record_code_hashes = false;
};

int bench_best(const BenchBestOptions& options);

}  // namespace tilesmith::cli
