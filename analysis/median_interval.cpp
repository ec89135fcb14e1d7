#include "analysis/median_interval.h"

#include <algorithm>
#include <cmath>

#include "analysis/stats.h"

namespace tilesmith::analysis {

namespace {
// P(Bin(n, 1/2) <= k), summed in logs: n stays small here (rounds of a re-timing), but
// 2^-n underflows nothing this way either.
double binomial_half_cdf(int n, int k) {
  if (k < 0) return 0;
  if (k >= n) return 1;
  double sum = 0;
  for (int i = 0; i <= k; ++i)
    sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) -
                    n * std::log(2.0));
  return std::min(sum, 1.0);
}
}  // namespace

double median_interval_coverage(int n, int lower_rank) {
  if (n <= 0 || lower_rank < 1 || lower_rank > (n + 1) / 2) return 0;
  return std::max(0.0, 1.0 - 2.0 * binomial_half_cdf(n, lower_rank - 1));
}

std::optional<MedianInterval> median_interval(std::vector<double> samples, double level) {
  if (samples.empty() || !(level > 0 && level < 1)) return std::nullopt;
  for (double x : samples)
    if (!std::isfinite(x)) return std::nullopt;
  std::sort(samples.begin(), samples.end());
  const int n = static_cast<int>(samples.size());
  // Coverage falls as l grows: the largest l that still reaches the level.
  int best = 0;
  for (int l = 1; l <= (n + 1) / 2; ++l) {
    if (median_interval_coverage(n, l) >= level)
      best = l;
    else
      break;
  }
  if (best == 0) return std::nullopt;
  MedianInterval m;
  m.median = percentile_sorted(samples, 0.5);
  m.lower_rank = best;
  m.lo = samples[std::size_t(best - 1)];
  m.hi = samples[std::size_t(n - best)];
  m.coverage = median_interval_coverage(n, best);
  return m;
}

double relative_mad(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const double median = percentile_sorted(samples, 0.5);
  if (median == 0) return 0;
  for (double& x : samples) x = std::fabs(x - median);
  std::sort(samples.begin(), samples.end());
  return percentile_sorted(samples, 0.5) / std::fabs(median);
}

}  // namespace tilesmith::analysis
