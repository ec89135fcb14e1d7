#pragma once
// --stop-when-converged: a run ends once its proposers estimate (ProposalBatch::converged)
// that the best configuration found is within `margin` of the best in the space with at
// least `probability`. The estimate itself comes from the proposer (evolve's lives in
// tuner/search/detail/convergence.h); this is the setting and its text form.

#include <string>

#include "base/status.h"

namespace tilesmith {

struct ConvergenceStop {
  double margin = 0.05;      // 0.05: within 5% of the space's best
  double probability = 0.95;  // stop once the estimate is at least this (docs/search.md: calibration)
};

// Parses "" (the defaults), "5%", "5%/0.9", "2%/95%": the margin as a percentage in
// (0%, 100%) (the sign is required: "0.5" could mean either), the probability as a
// fraction in (0, 1) or a percentage. invalid_argument saying what is wrong and what a
// good value looks like otherwise.
Result<ConvergenceStop> parse_convergence_stop(const std::string& text);

// "5%", "0.5%": a margin for messages.
std::string format_margin(double margin);

}  // namespace tilesmith
