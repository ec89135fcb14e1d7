#pragma once
// The convergence estimate of a surrogate search: how likely it is that no untried
// configuration is faster than a threshold (best found / (1 + margin)), from the
// model's prediction at each untried point. Each point's log-time is taken as normal
// with the forest's mean and its trees' spread (times `spread_scale`); points are taken
// as independent, so P(none better) = prod_i (1 - P(point i better)). The spread of a
// forest fitted on a few hundred points is too narrow far from the data and too wide
// near it; `spread_scale` is calibrated on recorded spaces (docs/search.md).

#include <cstddef>
#include <vector>

namespace tilesmith::proposers::detail {

struct ConvergenceInputs {
  const std::vector<double>* mean = nullptr;    // predicted log-time per scored candidate
  const std::vector<double>* stddev = nullptr;  // the trees' spread per scored candidate
  double threshold = 0;                         // log(best found) - log(1 + margin)
  double spread_scale = 1;
  // Untried valid points of the space over scored candidates (>= 1): a uniform subset
  // stands for the rest of the space.
  double coverage = 1;
};

// In [0, 1]; 1 when there is nothing to score.
double probability_none_better(const ConvergenceInputs& in);

}  // namespace tilesmith::proposers::detail
