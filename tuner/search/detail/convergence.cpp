#include "tuner/search/detail/convergence.h"

#include <algorithm>
#include <cmath>

namespace tilesmith::proposers::detail {

double probability_none_better(const ConvergenceInputs& in) {
  const auto& mu = *in.mean;
  const auto& sd = *in.stddev;
  // Summed in logs: thousands of small chances multiply to something far from 1.
  double log_none = 0;
  for (std::size_t i = 0; i < mu.size(); ++i) {
    const double s = sd[i] * in.spread_scale;
    double p_better;
    if (s > 1e-12) {
      // P(N(mu, s) < threshold)
      p_better = 0.5 * std::erfc((mu[i] - in.threshold) / (s * std::sqrt(2.0)));
    } else {
      p_better = mu[i] < in.threshold ? 1.0 : 0.0;
    }
    if (p_better >= 1) return 0;
    log_none += std::log1p(-p_better);
  }
  return std::clamp(std::exp(log_none * std::max(1.0, in.coverage)), 0.0, 1.0);
}

}  // namespace tilesmith::proposers::detail
