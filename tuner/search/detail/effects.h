#pragma once
// Which parameters change the measured time, learned from the history: for each
// parameter, the pairs of successful observations that differ in that parameter alone,
// and how much their log-times differ. A parameter with enough such pairs and no more
// than noise between them has no measured effect (on a skinny GEMM, a tile-order swizzle
// often does not), so a configuration that differs from a measured one only in such
// parameters is a copy of a known time: measuring it teaches nothing.
// Generic: nothing here knows any parameter's name or meaning.

#include <cstdint>
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
