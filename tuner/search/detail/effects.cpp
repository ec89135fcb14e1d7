#include "tuner/search/detail/effects.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

namespace tilesmith::proposers::detail {

namespace {

// A hash of p with parameter `skip` left out: equal for points that differ only there.
std::uint64_t hash_without(const PointValues& p, size_t skip) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (size_t i = 0; i < p.size(); ++i) {
    const std::uint64_t v = i == skip ? 0x5bd1e995ULL : static_cast<std::uint64_t>(p[i]);
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ULL;
  }
  return h ^ (h >> 31);
}

bool equal_without(const PointValues& a, const PointValues& b, size_t skip) {
  for (size_t i = 0; i < a.size(); ++i)
    if (i != skip && a[i] != b[i]) return false;
  return true;
}

}  // namespace

void EffectsTracker::reset(size_t dims, const std::vector<size_t>& active) {
  active_ = active;
  index_.clear();
  points_.clear();
  sum_.clear();
  count_.clear();
  groups_.assign(active.size(), {});
  total_.assign(dims, 0.0);
  effects_.pairs.assign(dims, 0);
  effects_.mean_abs_log.assign(dims, 0.0);
  effects_.max_abs_log.assign(dims, 0.0);
}

void EffectsTracker::pair_up(size_t id) {
  const PointValues& p = points_[id];
  const double mean = sum_[id] / count_[id];
  for (size_t a = 0; a < active_.size(); ++a) {
    const size_t d = active_[a];
    std::vector<size_t>& group = groups_[a][hash_without(p, d)];
    for (size_t other : group) {
      if (!equal_without(points_[other], p, d)) continue;  // a hash collision
      const double diff = std::fabs(mean - sum_[other] / count_[other]);
      total_[d] += diff;
      effects_.max_abs_log[d] = std::max(effects_.max_abs_log[d], diff);
      ++effects_.pairs[d];
    }
    group.push_back(id);
    effects_.mean_abs_log[d] = effects_.pairs[d] > 0 ? total_[d] / effects_.pairs[d] : 0.0;
  }
}

void EffectsTracker::add(const PointValues& p, double log_time) {
  auto [it, fresh] = index_.emplace(p, points_.size());
  if (fresh) {
    points_.push_back(p);
    sum_.push_back(log_time);
    count_.push_back(1);
    pair_up(points_.size() - 1);
    return;
  }
  sum_[it->second] += log_time;
  ++count_[it->second];
  // The point's mean moved: count every pair again, in first-seen order.
  for (auto& g : groups_) g.clear();
  std::fill(total_.begin(), total_.end(), 0.0);
  std::fill(effects_.pairs.begin(), effects_.pairs.end(), 0);
  std::fill(effects_.mean_abs_log.begin(), effects_.mean_abs_log.end(), 0.0);
  std::fill(effects_.max_abs_log.begin(), effects_.max_abs_log.end(), 0.0);
  for (size_t id = 0; id < points_.size(); ++id) pair_up(id);
}

ParameterEffects one_parameter_effects(const SpaceView& view,
                                       const std::vector<Observation>& observations) {
  EffectsTracker tracker;
  tracker.reset(view.dims(), view.active());
  for (const Observation& o : observations)
    if (o.ok) tracker.add(o.point, std::log(o.score));
  return tracker.effects();
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
