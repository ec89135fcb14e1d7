#include "tuner/search/detail/effects.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

namespace tilesmith::proposers::detail {

ParameterEffects one_parameter_effects(const SpaceView& view,
                                       const std::vector<Observation>& observations) {
  ParameterEffects out;
  out.pairs.assign(view.dims(), 0);
  out.mean_abs_log.assign(view.dims(), 0.0);
  out.max_abs_log.assign(view.dims(), 0.0);
  // Distinct successful points with their mean log-time, in first-seen order.
  std::unordered_map<PointValues, size_t, PointHash> index;
  std::vector<PointValues> points;
  std::vector<double> sum;
  std::vector<int> count;
  for (const Observation& o : observations) {
    if (!o.ok) continue;
    auto [it, fresh] = index.emplace(o.point, points.size());
    if (fresh) {
      points.push_back(o.point);
      sum.push_back(0);
      count.push_back(0);
    }
    sum[it->second] += std::log(o.time_ms);
    ++count[it->second];
  }
  for (size_t d : view.active()) {
    // Group the points by every other parameter; within a group they differ in d alone.
    std::unordered_map<PointValues, std::vector<size_t>, PointHash> groups;
    for (size_t i = 0; i < points.size(); ++i) {
      PointValues key = points[i];
      key[d] = 0;
      groups[key].push_back(i);
    }
    double total = 0, largest = 0;
    int pairs = 0;
    for (const auto& [key, members] : groups)
      for (size_t a = 0; a < members.size(); ++a)
        for (size_t b = a + 1; b < members.size(); ++b) {
          const size_t i = members[a], j = members[b];
          const double diff = std::fabs(sum[i] / count[i] - sum[j] / count[j]);
          total += diff;
          largest = std::max(largest, diff);
          ++pairs;
        }
    out.pairs[d] = pairs;
    out.mean_abs_log[d] = pairs > 0 ? total / pairs : 0.0;
    out.max_abs_log[d] = largest;
  }
  return out;
}

std::vector<char> no_effect_mask(const ParameterEffects& effects, int min_pairs, double tolerance,
                                 bool use_max) {
  std::vector<char> mask(effects.pairs.size(), 0);
  for (size_t d = 0; d < mask.size(); ++d)
    mask[d] = effects.pairs[d] >= std::max(1, min_pairs) &&
              (use_max ? effects.max_abs_log[d] : effects.mean_abs_log[d]) <= tolerance;
  return mask;
}

std::uint64_t projection_hash(const PointValues& p, const std::vector<char>& mask) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (size_t i = 0; i < p.size(); ++i) {
    const std::uint64_t v =
        i < mask.size() && mask[i] ? 0x5bd1e995ULL : static_cast<std::uint64_t>(p[i]);
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ULL;
  }
  return h ^ (h >> 31);
}

int masked_hamming(const PointValues& a, const PointValues& b, const std::vector<char>& mask) {
  int n = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    n += a[i] != b[i] && !(i < mask.size() && mask[i]);
  return n;
}

}  // namespace tilesmith::proposers::detail
