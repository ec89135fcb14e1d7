// The certified winner on scripted samples: drift, an outlier, ties and their rule.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>

#include "tuner/loop/certify.h"
#include "tuner/loop/retime.h"

namespace tilesmith {
namespace {

// Deterministic noise in [-1, 1] (the raw engine, not a distribution, whose output the
// standard leaves to the library).
class Noise {
 public:
  explicit Noise(std::uint32_t seed) : rng_(seed) {}
  double next() { return double(rng_()) / double(std::mt19937::max()) * 2.0 - 1.0; }

 private:
  std::mt19937 rng_;
};

// What a GPU would answer for finalist `f` measured in time slot `slot`.
using Truth = std::function<RoundSample(std::size_t f, int round, int slot)>;

// Runs rounds in the order the loop does (forward, then backward, ...) and asks at each
// look, as tuner/loop/retime.cpp does; stops at the first verdict.
Certification contest(std::size_t finalists, const Truth& truth, const CertifyOptions& o) {
  std::vector<std::vector<RoundSample>> samples(finalists);
  int slot = 0;
  for (int round = 1;; ++round) {
    for (std::size_t k = 0; k < finalists; ++k) {
      const std::size_t f = round % 2 == 1 ? k : finalists - 1 - k;
      samples[f].push_back(truth(f, round, slot++));
    }
    if (!is_look(round, o)) continue;
    Certification c = certify(samples, o);
    if (c.verdict != Verdict::kUndecided) return c;
  }
}

TEST(Certify, LooksAtMinRoundsThenEveryFewThenAtTheBudget) {
  CertifyOptions o;  // 8, every 4, up to 16
  EXPECT_FALSE(is_look(7, o));
  EXPECT_TRUE(is_look(8, o));
  EXPECT_FALSE(is_look(9, o));
  EXPECT_TRUE(is_look(12, o));
  EXPECT_TRUE(is_look(16, o));
  EXPECT_FALSE(is_look(17, o));
  EXPECT_EQ(look_count(o), 3);
  o.max_rounds = 14;
  EXPECT_TRUE(is_look(14, o)) << "the budget is always a look";
  EXPECT_EQ(look_count(o), 3);
  o.max_rounds = 3;
  EXPECT_TRUE(is_look(3, o));
  EXPECT_FALSE(is_look(8, o));
  EXPECT_EQ(look_count(o), 1);
}

TEST(Certify, AClearWinnerIsCertifiedAtTheFirstLook) {
  Noise noise(1);
  const double truth_ms[] = {1.00, 1.10, 1.25};
  auto c = contest(3,
                   [&](std::size_t f, int, int) {
                     return RoundSample{truth_ms[f] * (1 + 0.003 * noise.next())};
                   },
                   {});
  EXPECT_EQ(c.verdict, Verdict::kCertified);
  EXPECT_EQ(c.rounds, 8);
  EXPECT_EQ(c.winner, 0u);
  EXPECT_NEAR(c.test_level, 1 - 0.05 / (2 * 3), 1e-12) << "two comparisons, three looks";
  ASSERT_TRUE(c.standings[1].ratio);
  EXPECT_GT(c.standings[1].ratio->lo, 1.0);
  EXPECT_NEAR(c.standings[1].ratio_median, 1.10, 0.01);
  EXPECT_FALSE(c.standings[1].tied);
}

// A clock that slows by 0.4% per measurement (24% over the budget, far more than the 2%
// between the two fastest) and one round in which the fastest was caught 3x slow.
TEST(Certify, InterleavedRoundsCertifyThroughALinearDriftAndAnOutlier) {
  Noise noise(7);
  const double truth_ms[] = {1.00, 1.02, 1.05};
  auto truth = [&](std::size_t f, int round, int slot) {
    double t = truth_ms[f] * (1 + 0.004 * slot) * (1 + 0.002 * noise.next());
    if (f == 0 && round == 3) t *= 3;
    return RoundSample{t};
  };
  auto c = contest(3, truth, {});
  EXPECT_EQ(c.verdict, Verdict::kCertified);
  EXPECT_EQ(c.winner, 0u);
  // At 8 rounds the only interval at the per-test level is [min, max], which holds the
  // outlier's ratio; at 12 it is [x_(2), x_(11)], which cannot.
  EXPECT_EQ(c.rounds, 12);
  EXPECT_EQ(c.standings[1].ratio->lower_rank, 2);
  EXPECT_NEAR(c.standings[1].ratio_median, 1.02, 0.005);
  // The drift widens each finalist's own interval past the 2% between them: compared
  // that way they would overlap. The paired ratios do not see it.
  ASSERT_TRUE(c.standings[0].interval && c.standings[1].interval);
  EXPECT_GT(c.standings[0].interval->hi, c.standings[1].interval->lo);
}

TEST(Certify, TheSameDriftMeasuredOneFinalistAfterTheOtherNamesTheWrongOne) {
  // What interleaving prevents: A's 12 rounds, then B's, on a clock speeding up by 0.4%
  // per measurement. B is 2% slower, yet its later samples are the faster ones.
  const double truth_ms[] = {1.00, 1.02};
  std::vector<std::vector<RoundSample>> samples(2);
  int slot = 0;
  for (std::size_t f = 0; f < 2; ++f)
    for (int r = 0; r < 12; ++r) samples[f].push_back({truth_ms[f] * (1 - 0.004 * slot++)});
  CertifyOptions o;
  o.max_rounds = 12;
  auto c = certify(samples, o);
  EXPECT_EQ(c.fastest, 1u);
  EXPECT_EQ(c.verdict, Verdict::kCertified) << "confidently wrong: the drift is not noise";
}

TEST(Certify, EqualFinalistsTieAtTheBudgetAndTheSteadierOneWins) {
  Noise noise(3);
  const double spread[] = {0.02, 0.004};  // same speed; B's rounds vary five times less
  auto c = contest(
      2, [&](std::size_t f, int, int) { return RoundSample{1.0 * (1 + spread[f] * noise.next())}; },
      {});
  EXPECT_EQ(c.verdict, Verdict::kTie);
  EXPECT_EQ(c.rounds, 16) << "a tie is only declared when the budget is spent";
  EXPECT_TRUE(c.standings[0].tied && c.standings[1].tied);
  EXPECT_EQ(c.winner, 1u);
  EXPECT_EQ(c.tie_rule, "spread");
  EXPECT_LT(c.standings[1].spread * 1.5, c.standings[0].spread);
}

TEST(Certify, ATieOfAlikeSpreadsGoesToTheLowerEnergyWhenKnownElseTheLowerMedian) {
  const double joules[] = {0.50, 0.42};
  auto run = [&](bool with_energy) {
    Noise noise(5);
    return contest(2,
                   [&](std::size_t f, int, int) {
                     RoundSample s{1.0 * (1 + 0.005 * noise.next())};
                     if (with_energy) s.joules = joules[f];
                     return s;
                   },
                   {});
  };
  auto energy = run(true);
  ASSERT_EQ(energy.verdict, Verdict::kTie);
  EXPECT_EQ(energy.tie_rule, "energy");
  EXPECT_EQ(energy.winner, 1u);
  ASSERT_TRUE(energy.standings[1].median_joules);
  EXPECT_DOUBLE_EQ(*energy.standings[1].median_joules, 0.42);

  auto plain = run(false);
  ASSERT_EQ(plain.verdict, Verdict::kTie);
  EXPECT_EQ(plain.tie_rule, "median");
  EXPECT_EQ(plain.winner, plain.fastest);
}

// A steady finalist whose rounds run a few % slower than a noisy fastest is tied (the noise keeps
// its interval over 1), but the spread does not buy it the win: its expected time is worse.
TEST(Certify, ATiedFinalistWhosePairedMedianIsSlowerIsNotPickedForItsSteadiness) {
  Noise noise(7);
  const double truth_ms[] = {1.00, 1.03}, spread[] = {0.2, 0.003};
  auto c = contest(
      2, [&](std::size_t f, int, int) { return RoundSample{truth_ms[f] * (1 + spread[f] * noise.next())}; }, {});
  ASSERT_EQ(c.verdict, Verdict::kTie);
  ASSERT_TRUE(c.standings[1].tied);
  EXPECT_GT(c.standings[1].ratio_median, 1.01) << c.standings[1].ratio_median;
  EXPECT_LT(c.standings[1].spread * 1.5, c.standings[0].spread) << "the slower one is the steadier";
  EXPECT_EQ(c.winner, 0u);
  EXPECT_EQ(c.tie_rule, "ratio");
  // Where its paired median is the fastest's within median_alike, steadiness decides as before.
  CertifyOptions loose;
  loose.median_alike = 0.10;
  Noise again(7);
  auto d = contest(
      2, [&](std::size_t f, int, int) { return RoundSample{truth_ms[f] * (1 + spread[f] * again.next())}; }, loose);
  EXPECT_EQ(d.winner, 1u);
  EXPECT_EQ(d.tie_rule, "spread");
}

TEST(Certify, ATieKeepsOnlyTheFinalistsNotSeparatedFromTheFastest) {
  Noise noise(11);
  const double truth_ms[] = {1.00, 1.001, 1.30};
  auto c = contest(
      3,
      [&](std::size_t f, int, int) { return RoundSample{truth_ms[f] * (1 + 0.01 * noise.next())}; },
      {});
  EXPECT_EQ(c.verdict, Verdict::kTie);
  EXPECT_TRUE(c.standings[0].tied);
  EXPECT_TRUE(c.standings[1].tied);
  EXPECT_FALSE(c.standings[2].tied);
  EXPECT_NE(c.winner, 2u);
}

TEST(Certify, OneFinalistOrTooSmallABudgetClaimNothing) {
  CertifyOptions o;
  auto single = certify({{{1.0}, {1.1}, {0.9}, {1.0}, {1.0}, {1.05}, {0.95}, {1.0}}}, o);
  EXPECT_EQ(single.verdict, Verdict::kSingle);
  ASSERT_TRUE(single.standings[0].interval) << "its own interval is still recorded";
  EXPECT_DOUBLE_EQ(single.standings[0].interval->lo, 0.9);

  o.max_rounds = 3;
  auto few = certify({{{1.0}, {1.0}, {1.0}}, {{2.0}, {2.0}, {2.0}}}, o);
  EXPECT_EQ(few.verdict, Verdict::kTooFewRounds);
  EXPECT_EQ(few.winner, 0u);
  EXPECT_FALSE(few.standings[1].ratio);

  o.max_rounds = 16;
  auto early = certify({{{1.0}, {1.0}, {1.0}}, {{1.0}, {1.0}, {1.0}}}, o);
  EXPECT_EQ(early.verdict, Verdict::kUndecided) << "rounds remain";
}

TEST(Certify, ARoundsSampleIsTheEvaluationsMedianAndEnergyWhereMeasured) {
  Evaluation e;
  e.outcome = Outcome::kOk;
  e.timing.median_ms = 0.75;
  EXPECT_EQ(round_sample(e).ms, 0.75);
  EXPECT_FALSE(round_sample(e).joules);
  e.telemetry = TelemetrySummary{.readings = 2, .joules_per_launch = 0.3};
  ASSERT_TRUE(round_sample(e).joules);
  EXPECT_DOUBLE_EQ(*round_sample(e).joules, 0.3);
}

// Finalist 0 is the fastest and finalist 1 the thriftiest: the objective decides which
// one wins, and the paired ratios are of the objective's values.
TEST(Certify, UnderEnergyTheLowestEnergyWinsThroughPairedRatiosOfTheJoules) {
  Noise noise(5);
  const double ms[] = {1.00, 1.30, 1.15}, joules[] = {0.60, 0.45, 0.55};
  auto truth = [&](std::size_t f, int, int) {
    return RoundSample{ms[f] * (1 + 0.003 * noise.next()), joules[f] * (1 + 0.003 * noise.next())};
  };
  CertifyOptions time_options;
  auto by_time = contest(3, truth, time_options);
  EXPECT_EQ(by_time.verdict, Verdict::kCertified);
  EXPECT_EQ(by_time.winner, 0u);
  EXPECT_EQ(by_time.objective, Objective::kTime);

  CertifyOptions energy_options;
  energy_options.objective = Objective::kEnergy;
  auto by_energy = contest(3, truth, energy_options);
  EXPECT_EQ(by_energy.verdict, Verdict::kCertified);
  EXPECT_EQ(by_energy.objective, Objective::kEnergy);
  EXPECT_EQ(by_energy.winner, 1u);
  EXPECT_NEAR(by_energy.standings[1].median_value, 0.45, 0.01);
  EXPECT_NEAR(by_energy.standings[1].median_ms, 1.30, 0.01) << "the time is kept beside the objective";
  EXPECT_NEAR(by_energy.standings[0].ratio_median, 0.60 / 0.45, 0.01);
  ASSERT_TRUE(by_energy.standings[2].ratio);
  EXPECT_GT(by_energy.standings[2].ratio->lo, 1.0);

  // The energy-delay product: 0.60 x 1.00 = 0.60, 0.45 x 1.30 = 0.585, 0.55 x 1.15 = 0.6325 (mJ*s).
  CertifyOptions edp_options;
  edp_options.objective = Objective::kEdp;
  noise = Noise(5);
  auto by_edp = certify([&] {
    std::vector<std::vector<RoundSample>> s(3);
    for (int r = 0; r < 16; ++r)
      for (std::size_t f = 0; f < 3; ++f) s[f].push_back(truth(f, r, 0));
    return s;
  }(), edp_options);
  EXPECT_EQ(by_edp.fastest, 1u);
  EXPECT_NEAR(by_edp.standings[1].median_value, 0.585e-3, 0.01e-3);
}

// Under energy, finalists tied on energy with alike spreads go to the faster one.
TEST(Certify, UnderEnergyATieOfAlikeSpreadsGoesToTheFasterFinalist) {
  const double ms[] = {1.00, 0.80};
  CertifyOptions o;
  o.objective = Objective::kEnergy;
  // The same energy, wobbling alike: never separated, spreads equal.
  auto c = contest(2,
                   [&](std::size_t f, int round, int) {
                     return RoundSample{ms[f], 0.5 * (1 + 0.01 * (round % 3 - 1))};
                   },
                   o);
  ASSERT_EQ(c.verdict, Verdict::kTie);
  EXPECT_EQ(c.tie_rule, "time");
  EXPECT_EQ(c.winner, 1u);
}

TEST(Certify, MalformedInputIsAProgrammerError) {
  EXPECT_THROW(certify({}, {}), std::invalid_argument);
  EXPECT_THROW(certify({{{1.0}}, {{1.0}, {2.0}}}, {}), std::invalid_argument);
  CertifyOptions energy;
  energy.objective = Objective::kEnergy;
  EXPECT_THROW(certify({{{1.0, 0.5}}, {{1.0}}}, energy), std::invalid_argument)
      << "a round without its energy is the caller's to leave out";
}

}  // namespace
}  // namespace tilesmith
