#pragma once
// Which parameters change the measured time, learned from the history: for each
// parameter, the pairs of successful observations that differ in that parameter alone,
// and how much their log-times differ. A parameter with enough such pairs and no more
// than noise between them has no measured effect (on a skinny GEMM, a tile-order swizzle
// often does not), so a configuration that differs from a measured one only in such
// parameters is a copy of a known time: measuring it teaches nothing.
// Generic: nothing here knows any parameter's name or meaning.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tuner/search/detail/space_view.h"

namespace tilesmith::proposers::detail {

struct ParameterEffects {
  // Per parameter of the space (declared order): pairs of successful observations with
  // distinct values of this parameter and equal values of every other, and the mean
  // absolute difference of their log-times (0 without pairs).
  std::vector<int> pairs;
  std::vector<double> mean_abs_log;
  std::vector<double> max_abs_log;
};

// The same effects kept up to date one measurement at a time, so a search that asks
// every generation pays for its new measurements only. A repeated measurement of a
// point changes that point's mean and every pair it is in: the pairs are then counted
// again from the distinct points (rare: proposers do not propose tried points). The
// result depends only on the sequence of add() calls.
class EffectsTracker {
 public:
  // dims: the space's parameters; active: those with more than one value.
  void reset(size_t dims, const std::vector<size_t>& active);
  // One successful measurement of p, its log-time.
  void add(const PointValues& p, double log_time);
  const ParameterEffects& effects() const { return effects_; }

 private:
  void pair_up(size_t id);  // counts the pairs of point `id` with the points before it
  std::vector<size_t> active_;
  std::unordered_map<PointValues, size_t, PointHash> index_;
  std::vector<PointValues> points_;  // distinct, first-seen order
  std::vector<double> sum_;
  std::vector<int> count_;
  // Per active parameter (active_ order): the points by a hash of every other parameter.
  std::vector<std::unordered_map<std::uint64_t, std::vector<size_t>>> groups_;
  std::vector<double> total_;  // per parameter: the sum of the pairs' differences
  ParameterEffects effects_;
};

// Repeated measurements of one point are averaged (in log) first.
ParameterEffects one_parameter_effects(const SpaceView& view,
                                       const std::vector<Observation>& observations);

// Per parameter: 1 when it has at least min_pairs pairs and a mean (with use_max: the
// largest) absolute log-time difference of at most tolerance.
std::vector<char> no_effect_mask(const ParameterEffects& effects, int min_pairs, double tolerance,
                                 bool use_max = false);

// A hash of p with the masked parameters left out: equal for points that differ only
// in masked parameters.
std::uint64_t projection_hash(const PointValues& p, const std::vector<char>& mask);

// Parameters in which a and b differ, masked ones left out.
int masked_hamming(const PointValues& a, const PointValues& b, const std::vector<char>& mask);

}  // namespace tilesmith::proposers::detail
