#include "analysis/paired_ratio.h"

#include <algorithm>
#include <cmath>

namespace tilesmith::analysis {

namespace {
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

std::string PairedRatio::verdict() const {
  if (!interval) return "too few rounds";
  if (interval->lo > 1) return "ours faster";
  if (interval->hi < 1) return "vendor faster";
  return "tie";
}

bool ours_first(int round) { return round % 2 == 0; }

std::optional<PairedRatio> paired_ratio(const std::vector<double>& ours_ms, const std::vector<double>& vendor_ms,
                                        double level) {
  if (ours_ms.empty() || ours_ms.size() != vendor_ms.size()) return std::nullopt;
  std::vector<double> ratios;
  ratios.reserve(ours_ms.size());
  for (std::size_t i = 0; i < ours_ms.size(); ++i) {
    if (!(ours_ms[i] > 0) || !(vendor_ms[i] > 0) || !std::isfinite(ours_ms[i]) || !std::isfinite(vendor_ms[i]))
      return std::nullopt;
    ratios.push_back(vendor_ms[i] / ours_ms[i]);
  }
  PairedRatio p;
  p.rounds = int(ratios.size());
  p.median = median_of(ratios);
  p.interval = median_interval(ratios, level);
  p.ours_median_ms = median_of(ours_ms);
  p.vendor_median_ms = median_of(vendor_ms);
  return p;
}

}  // namespace tilesmith::analysis
