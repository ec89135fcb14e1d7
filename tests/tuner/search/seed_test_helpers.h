#pragma once
// What the warm-start and prior tests share: a three-parameter config and the configs of a
// list of seeds, in order.

#include <cstdint>
#include <vector>

#include "registry/config.h"
#include "tuner/search/warm_start.h"

namespace tilesmith::testing {

inline Config cfg(std::int64_t bm, std::int64_t bn, std::int64_t tm) {
  return {{"BM", bm}, {"BN", bn}, {"TM", tm}};
}

inline std::vector<Config> configs_of(const std::vector<WarmStartSeed>& seeds) {
  std::vector<Config> out;
  for (const auto& s : seeds) out.push_back(s.config);
  return out;
}

}  // namespace tilesmith::testing
