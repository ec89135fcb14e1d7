#pragma once
// An M x N x K problem in a layout code ("NN", "NT", "TN", "TT"), fp32 unless changed: the
// shape the runtime tests build their cases from.

#include <cstdint>

#include <gtest/gtest.h>

#include "registry/problem.h"

namespace tilesmith::testing {

inline GemmProblem make_problem(std::int64_t m, std::int64_t n, std::int64_t k, const char* layout = "NN") {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  EXPECT_TRUE(apply_layout_code(layout, p).ok());
  return p;
}

}  // namespace tilesmith::testing
