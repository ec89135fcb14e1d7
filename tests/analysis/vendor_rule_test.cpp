// The "never slower than the vendor" rule (analysis/vendor_rule.h): the spread of one
// measurement, the noise, the verdicts and their wording.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "analysis/vendor_rule.h"

namespace tilesmith::analysis {
namespace {

TEST(VendorRule, SpreadIsTheP20P80WidthOverTheMedianElseTheCv) {
  EXPECT_NEAR(*relative_spread(2.0, 1.98, 2.02, 0.5), 0.02, 1e-12);  // percentiles first
  EXPECT_DOUBLE_EQ(*relative_spread(2.0, std::nullopt, 2.02, 0.03), 0.03);
  EXPECT_DOUBLE_EQ(*relative_spread(2.0, 2.02, 1.98, 0.03), 0.03);  // disordered percentiles: not used
  EXPECT_FALSE(relative_spread(2.0, std::nullopt, std::nullopt, std::nullopt).has_value());
  EXPECT_FALSE(relative_spread(0.0, 1.0, 2.0, std::nullopt).has_value());
  EXPECT_FALSE(relative_spread(2.0, std::nullopt, std::nullopt, std::numeric_limits<double>::quiet_NaN()).has_value());
}

TEST(VendorRule, TheTunedKernelRunsOnlyWhenFasterByMoreThanTheNoise) {
  auto cmp = [](double tuned, double vendor, std::optional<double> ts = {}, std::optional<double> vs = {}) {
    return compare_with_vendor(Measurement{tuned, ts}, Measurement{vendor, vs});
  };
  VendorComparison c = cmp(0.0200, 0.0250);
  EXPECT_EQ(c.verdict, VendorVerdict::kTunedFaster);
  EXPECT_TRUE(c.runs_tuned());
  EXPECT_NEAR(c.gain, 0.25, 1e-12);
  EXPECT_DOUBLE_EQ(c.noise, kNoiseFloor);
  EXPECT_EQ(c.describe(), "tuned kernel 0.0200 ms vs vendor 0.0250 ms at tuning: 25.0% faster (> noise 1.0%)");

  c = cmp(0.0231, 0.0210);
  EXPECT_EQ(c.verdict, VendorVerdict::kVendorFaster);
  EXPECT_FALSE(c.runs_tuned());
  EXPECT_EQ(c.describe(), "tuned kernel 0.0231 ms vs vendor 0.0210 ms at tuning: vendor faster");

  // The noise is the larger spread, either side, never below the floor.
  c = cmp(0.0212, 0.0215, 0.02, 0.004);
  EXPECT_EQ(c.verdict, VendorVerdict::kWithinNoise);
  EXPECT_DOUBLE_EQ(c.noise, 0.02);
  EXPECT_EQ(c.describe(), "tuned kernel 0.0212 ms vs vendor 0.0215 ms at tuning: within noise (1.4% <= 2.0%)");
  EXPECT_EQ(cmp(0.0212, 0.0215, 0.001, 0.03).verdict, VendorVerdict::kWithinNoise);
  EXPECT_EQ(cmp(0.0212, 0.0215, 0.001, 0.001).verdict, VendorVerdict::kTunedFaster);  // 1.4% > the 1% floor
  EXPECT_EQ(cmp(0.0212, 0.0214).verdict, VendorVerdict::kWithinNoise);                // 0.9% <= the floor
  EXPECT_EQ(cmp(1.0, 1.0).verdict, VendorVerdict::kWithinNoise);                      // a tie goes to the vendor
}

TEST(VendorRule, WithoutBothTimesNothingIsComparedAndTheTunedKernelRuns) {
  VendorComparison c = compare_with_vendor(Measurement{0.02, std::nullopt}, std::nullopt);
  EXPECT_EQ(c.verdict, VendorVerdict::kNoVendorTime);
  EXPECT_TRUE(c.runs_tuned());
  EXPECT_EQ(c.describe(), "no vendor time recorded");
  c = compare_with_vendor(Measurement{0.02, std::nullopt}, Measurement{0.0, std::nullopt});
  EXPECT_EQ(c.verdict, VendorVerdict::kNoVendorTime);
  c = compare_with_vendor(Measurement{0.0, std::nullopt}, Measurement{0.01, std::nullopt});
  EXPECT_EQ(c.verdict, VendorVerdict::kNoTunedTime);
  EXPECT_TRUE(c.runs_tuned());
  EXPECT_EQ(c.describe(), "no tuned time recorded");
}

}  // namespace
}  // namespace tilesmith::analysis
