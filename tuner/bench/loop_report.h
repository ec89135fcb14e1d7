#pragma once
// Tables about runs through the loop (loop_run.h) for docs/search.md: a line per seed
// saying where the budget went and what found the best, and the calibration of the
// loop's convergence estimate against the truth the recording knows. Pure formatting.

#include <string>
#include <vector>

#include "tuner/bench/loop_run.h"

namespace tilesmith::bench {

// One markdown row per run (runs[i] had seed first_seed + i).
std::string format_loop_details(const std::string& proposer, const std::vector<LoopRunResult>& runs, int first_seed);

// Every generation's estimate P(best so far within `margin` of the optimum), binned, next
// to how often that was true; and, per run, the first moment the estimate reached 0.9
// and 0.95 and whether it was right then.
std::string format_calibration(const std::string& proposer, const std::vector<LoopRunResult>& runs, double margin);

}  // namespace tilesmith::bench
