#include "analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tilesmith::analysis {

double percentile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * double(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - double(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

SampleSummary summarize(std::vector<double> samples) {
  SampleSummary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.count = static_cast<int>(samples.size());
  s.min = samples.front();
  s.max = samples.back();
  s.median = percentile_sorted(samples, 0.5);
  s.p20 = percentile_sorted(samples, 0.2);
  s.p80 = percentile_sorted(samples, 0.8);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / s.count;
  double var = 0;
  for (double x : samples) var += (x - s.mean) * (x - s.mean);
  s.stddev = s.count > 1 ? std::sqrt(var / (s.count - 1)) : 0.0;
  s.cv = s.mean != 0 ? s.stddev / s.mean : 0.0;
  return s;
}

}  // namespace tilesmith::analysis
