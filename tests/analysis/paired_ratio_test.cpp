#include <gtest/gtest.h>

#include "analysis/paired_ratio.h"

namespace tilesmith::analysis {
namespace {

TEST(PairedRatio, AClockDriftOverTheRoundsDividesOut) {
  // Ours is 4% faster than the vendor throughout, while the GPU slows by 1.5% a round
  // (a card heating up to its power limit): both sides drift alike.
  std::vector<double> ours, vendor;
  for (int r = 0; r < 10; ++r) {
    const double clock = 1.0 + 0.015 * r;
    ours.push_back(1.00 * clock);
    vendor.push_back(1.04 * clock);
  }
  auto p = paired_ratio(ours, vendor);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->rounds, 10);
  EXPECT_NEAR(p->median, 1.04, 1e-12);
  ASSERT_TRUE(p->interval);
  EXPECT_NEAR(p->interval->lo, 1.04, 1e-12);
  EXPECT_NEAR(p->interval->hi, 1.04, 1e-12);
  EXPECT_EQ(p->verdict(), "ours faster");
  // Each side's median still says what its times were.
  EXPECT_NEAR(p->ours_median_ms, 1.0675, 1e-12);
  EXPECT_NEAR(p->vendor_median_ms, 1.04 * 1.0675, 1e-12);
}

TEST(PairedRatio, OneOutlyingRoundDoesNotMoveTheVerdict) {
  std::vector<double> ours(12, 1.0), vendor(12, 0.97);
  vendor[5] = 2.0;  // one round where the vendor's timing was disturbed
  for (int r = 0; r < 12; ++r) ours[std::size_t(r)] += 0.001 * (r % 3);
  auto p = paired_ratio(ours, vendor);
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->interval);
  EXPECT_LT(p->interval->hi, 1.0);
  EXPECT_EQ(p->verdict(), "vendor faster");
}

TEST(PairedRatio, RatiosOnBothSidesOfOneAreATie) {
  auto p = paired_ratio({1, 1, 1, 1, 1, 1, 1, 1}, {1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.0, 1.01});
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->interval);
  EXPECT_LE(p->interval->lo, 1.0);
  EXPECT_GE(p->interval->hi, 1.0);
  EXPECT_EQ(p->verdict(), "tie");
}

TEST(PairedRatio, TooFewRoundsGiveARatioWithoutAnInterval) {
  auto p = paired_ratio({1, 1, 1}, {1.1, 1.1, 1.1});
  ASSERT_TRUE(p);
  EXPECT_NEAR(p->median, 1.1, 1e-12);
  EXPECT_FALSE(p->interval);
  EXPECT_EQ(p->verdict(), "too few rounds");
}

TEST(PairedRatio, UnequalOrInvalidSamplesGiveNone) {
  EXPECT_FALSE(paired_ratio({}, {}));
  EXPECT_FALSE(paired_ratio({1, 2}, {1}));
  EXPECT_FALSE(paired_ratio({1, 0}, {1, 1}));
  EXPECT_FALSE(paired_ratio({1, 1}, {1, -1}));
}

TEST(PairedRatio, TheOrderAlternatesRoundByRound) {
  EXPECT_TRUE(ours_first(0));
  EXPECT_FALSE(ours_first(1));
  EXPECT_TRUE(ours_first(2));
}

}  // namespace
}  // namespace tilesmith::analysis
