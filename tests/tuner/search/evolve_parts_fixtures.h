#pragma once
// Small hand-made inputs for the tests of evolve's parts (tuner/search/detail/
// surrogate.h, candidate_generator.h, acquisition.h, pick_policies.h).

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "registry/space.h"
#include "tuner/search/detail/history_index.h"
#include "tuner/search/detail/space_view.h"

namespace tilesmith::proposers::detail::fixtures {

// Three parameters, 4 x 3 x 2 = 24 points of which A * C >= B leaves 20 valid.
inline ParamSpace small_space() {
  auto s = ParamSpace::from_json(nlohmann::json::parse(R"js({
    "parameters": [{"name": "A", "values": [1, 2, 4, 8]}, {"name": "B", "values": [1, 2, 4]},
                   {"name": "C", "values": [1, 2]}],
    "constraints": ["A * C >= B"]})js"));
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return *s;
}

// A smooth time over the space, fastest at A 4, B 2 (C does nothing).
inline double small_ms(const Config& c) {
  return 1.0 + std::pow(std::log2(double(c.at("A"))) - 2, 2) +
         0.5 * std::pow(std::log2(double(c.at("B"))) - 1, 2);
}

// Trials of the given points (in order), each measured by small_ms; `failed` indices
// are compile errors.
inline std::vector<Trial> trials_of(const ParamSpace& space, const std::vector<PointValues>& points,
                                    const std::vector<size_t>& failed = {}) {
  std::vector<Trial> out;
  for (size_t i = 0; i < points.size(); ++i) {
    Trial t;
    t.config = space.to_config(points[i]);
    if (std::find(failed.begin(), failed.end(), i) != failed.end()) {
      t.outcome = Outcome::kCompileError;
    } else {
      t.outcome = Outcome::kOk;
      t.score = small_ms(t.config);
    }
    out.push_back(std::move(t));
  }
  return out;
}

// About a thousand valid points of 3 * 3 * 4 * 4 * 3 * 2 * 4 = 3456 (with tiled_ctx()): the
// offline proposers' tests and the prior's.
inline ParamSpace tiled_space() {
  auto s = ParamSpace::from_json(nlohmann::json::parse(R"js({
    "parameters": [
      {"name": "BM", "values": [32, 64, 128]}, {"name": "BN", "values": [32, 64, 128]},
      {"name": "TM", "values": [1, 2, 4, 8]}, {"name": "TN", "values": [1, 2, 4, 8]},
      {"name": "BK", "values": [8, 16, 32]}, {"name": "DB", "values": [0, 1]},
      {"name": "VEC", "values": [1, 2, 4, 8]}
    ],
    "derived": [{"name": "THREADS", "expr": "(BM // TM) * (BN // TN)"}],
    "constraints": ["THREADS >= WARP_SIZE", "THREADS <= 512", "BK % VEC == 0", "TN % VEC == 0 or VEC == 1"]
  })js"));
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return *s;
}

inline SpaceContext tiled_ctx() {
  SpaceContext c;
  c.constants = {{"WARP_SIZE", 32}};
  return c;
}

// A smooth synthetic time over tiled_space() with one best corner, for "measured" histories.
inline double tiled_ms(const Config& c) {
  auto l = [&](const char* k) { return std::log2(double(c.at(k))); };
  return 1.0 + std::pow(l("BM") - 6.5, 2) + std::pow(l("BN") - 7, 2) + 0.5 * std::pow(l("TM") - 2, 2) +
         0.5 * std::pow(l("TN") - 2, 2) + 0.2 * std::abs(l("BK") - 4) + 0.3 * (1 - double(c.at("DB"))) +
         0.1 * std::abs(l("VEC") - 1);
}

}  // namespace tilesmith::proposers::detail::fixtures
