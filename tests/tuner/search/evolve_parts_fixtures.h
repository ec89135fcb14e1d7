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

}  // namespace tilesmith::proposers::detail::fixtures
