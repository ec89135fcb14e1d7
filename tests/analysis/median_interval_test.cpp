#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "analysis/median_interval.h"

namespace tilesmith::analysis {
namespace {

TEST(MedianInterval, CoverageIsTheSignTestsBinomialTail) {
  // [min, max] of n samples misses the median only when all fall on one side: 2 / 2^n.
  EXPECT_DOUBLE_EQ(median_interval_coverage(5, 1), 1.0 - 2.0 / 32);
  EXPECT_DOUBLE_EQ(median_interval_coverage(9, 2), 1.0 - 2.0 * 10 / 512);
  // n = 20, l = 6: 1 - 2 P(Bin(20, 1/2) <= 5) = 1 - 2 * 21700 / 2^20.
  EXPECT_NEAR(median_interval_coverage(20, 6), 1.0 - 2.0 * 21700 / 1048576, 1e-12);
  EXPECT_EQ(median_interval_coverage(4, 3), 0) << "past the middle there is no interval";
  EXPECT_EQ(median_interval_coverage(0, 1), 0);
}

TEST(MedianInterval, TooFewSamplesForTheLevelGiveNone) {
  EXPECT_FALSE(median_interval({1, 2, 3, 4, 5}, 0.95)) << "five samples cover at most 93.75%";
  auto six = median_interval({6, 1, 5, 2, 4, 3}, 0.95);
  ASSERT_TRUE(six);
  EXPECT_EQ(six->lower_rank, 1);
  EXPECT_DOUBLE_EQ(six->lo, 1);
  EXPECT_DOUBLE_EQ(six->hi, 6);
  EXPECT_DOUBLE_EQ(six->median, 3.5);
  EXPECT_FALSE(median_interval({}, 0.95));
  EXPECT_FALSE(median_interval({1, 2, std::nan(""), 4, 5, 6}, 0.95));
  EXPECT_FALSE(median_interval({1, 2, 3, 4, 5, 6}, 1.0)) << "a level of 1 is no confidence level";
}

TEST(MedianInterval, PicksTheNarrowestIntervalThatReachesTheLevel) {
  std::vector<double> x;
  for (int i = 1; i <= 20; ++i) x.push_back(i);
  auto m = median_interval(x, 0.95);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->lower_rank, 6);
  EXPECT_DOUBLE_EQ(m->lo, 6);
  EXPECT_DOUBLE_EQ(m->hi, 15);
  EXPECT_GE(m->coverage, 0.95);
  EXPECT_LT(median_interval_coverage(20, 7), 0.95) << "one rank further would miss the level";
}

TEST(MedianInterval, OneOutlierDoesNotMoveIt) {
  const std::vector<double> clean{1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99, 1.00};
  std::vector<double> spoiled = clean;
  spoiled[4] = 30.0;  // one launch caught behind another process
  auto a = median_interval(clean, 0.95), b = median_interval(spoiled, 0.95);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b->lower_rank, 2);
  EXPECT_LE(b->hi, 1.02) << "the outlier is x_(9), outside [x_(2), x_(8)]";
  EXPECT_NEAR(b->median, a->median, 0.011);
}

TEST(MedianInterval, RelativeMadIgnoresOneOutlier) {
  EXPECT_DOUBLE_EQ(relative_mad({1, 2, 3, 4, 5}), 1.0 / 3);
  EXPECT_DOUBLE_EQ(relative_mad({1, 2, 3, 4, 500}), 1.0 / 3);
  EXPECT_EQ(relative_mad({}), 0);
  EXPECT_EQ(relative_mad({0, 0, 0}), 0);
}

}  // namespace
}  // namespace tilesmith::analysis
