// Racing's rule: the bound from the best so far, and when a candidate's samples are
// clearly above it.

#include <gtest/gtest.h>

#include "analysis/race.h"

namespace tilesmith::analysis {
namespace {

TEST(Race, BoundIsTheBestsSlowSideTimesTheMargin) {
  EXPECT_DOUBLE_EQ(race_bound_ms(1.2, 1.0, 0.25), 1.5);
  EXPECT_DOUBLE_EQ(race_bound_ms(0, 1.0, 0.5), 1.5) << "the median where no p80 is known";
  EXPECT_EQ(race_bound_ms(1.2, 1.0, 0), 0) << "margin 0: racing off";
  EXPECT_EQ(race_bound_ms(1.2, 1.0, -1), 0);
  EXPECT_EQ(race_bound_ms(0, 0, 0.25), 0) << "no best";
}

TEST(Race, StopsOnlyWhenTheFastSideIsAboveTheBound) {
  std::vector<double> slow(10, 2.0);
  EXPECT_TRUE(race_lost(slow, 1.5));
  EXPECT_FALSE(race_lost(std::vector<double>(9, 2.0), 1.5)) << "too few samples";
  EXPECT_FALSE(race_lost(slow, 0)) << "no bound";
  EXPECT_FALSE(race_lost(slow, 2.5)) << "under the bound";
  // A noisy candidate whose fast samples reach the bound is not a clear loser: its 20th
  // percentile is at or under it, though its median is above.
  std::vector<double> noisy{1.4, 1.45, 1.5, 1.6, 1.8, 2.0, 2.2, 2.4, 2.6, 3.0};
  EXPECT_FALSE(race_lost(noisy, 1.5));
  EXPECT_TRUE(race_lost(noisy, 1.4));
  RaceRule strict;
  strict.min_samples = 20;
  EXPECT_FALSE(race_lost(slow, 1.5, strict));
}

}  // namespace
}  // namespace tilesmith::analysis
