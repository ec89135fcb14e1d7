#include <gtest/gtest.h>

#include "analysis/roofline.h"
#include "analysis/stats.h"

namespace tilesmith::analysis {
namespace {

TEST(Stats, SummarizesSamples) {
  auto s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.p20, 1.8);
  EXPECT_DOUBLE_EQ(s.p80, 4.2);
  EXPECT_NEAR(s.cv, 1.5811388 / 3.0, 1e-6);
  EXPECT_EQ(summarize({}).count, 0);
}

TEST(Stats, RankCorrelationFollowsOrderNotScale) {
  EXPECT_DOUBLE_EQ(rank_correlation({1, 2, 3, 4}, {10, 20, 300, 4000}), 1.0);
  EXPECT_DOUBLE_EQ(rank_correlation({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  EXPECT_DOUBLE_EQ(rank_correlation({1, 1, 1}, {1, 2, 3}), 0.0);  // constant: no order
  EXPECT_DOUBLE_EQ(rank_correlation({1}, {2}), 0.0);
  // Ties share their mean rank: ranks (0.5, 0.5, 2, 3) against (0, 1, 2, 3).
  EXPECT_NEAR(rank_correlation({1, 1, 2, 3}, {1, 2, 3, 4}), 0.9486832980505138, 1e-12);
}

TEST(Roofline, PicksTheLowerBound) {
  Roofline r{100e12, 4e12};
  // 4096^3 fp32: intensity ~683 FLOP/B, compute-bound.
  const double flops = 2.0 * 4096 * 4096 * 4096, bytes = 3.0 * 4096 * 4096 * 4;
  EXPECT_DOUBLE_EQ(r.attainable(flops, bytes), 100e12);
  EXPECT_FALSE(r.memory_bound(flops, bytes));
  // 16x4096x4096: intensity ~7.9 FLOP/B, memory-bound.
  const double f2 = 2.0 * 16 * 4096 * 4096, b2 = (16.0 * 4096 + 4096.0 * 4096 + 16.0 * 4096) * 4;
  EXPECT_TRUE(r.memory_bound(f2, b2));
  EXPECT_NEAR(r.attainable(f2, b2), f2 / b2 * 4e12, 1);
  EXPECT_NEAR(percent_of_attainable(r, flops, bytes, flops / 50e12), 50.0, 1e-9);
}

}  // namespace
}  // namespace tilesmith::analysis
