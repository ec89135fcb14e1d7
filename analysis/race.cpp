#include "analysis/race.h"

#include <algorithm>

#include "analysis/stats.h"

namespace tilesmith::analysis {

double race_bound_ms(double best_p80_ms, double best_median_ms, double margin) {
  if (!(margin > 0)) return 0;
  const double slow_side = best_p80_ms > 0 ? best_p80_ms : best_median_ms;
  return slow_side > 0 ? slow_side * (1 + margin) : 0;
}

bool race_lost(const std::vector<double>& samples_ms, double bound_ms, const RaceRule& rule) {
  if (!(bound_ms > 0) || static_cast<int>(samples_ms.size()) < std::max(1, rule.min_samples)) return false;
  std::vector<double> sorted = samples_ms;
  std::sort(sorted.begin(), sorted.end());
  return percentile_sorted(sorted, rule.quantile) > bound_ms;
}

}  // namespace tilesmith::analysis
