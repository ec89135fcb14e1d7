// bench-best's rounds (cli/bench_best_rounds.h) on scripted measurements: the alternating
// order, the paired ratios from the flushed and the back-to-back times, the contest between
// entries of one problem, and a failed measurement ending the rounds with a note.
#include <gtest/gtest.h>

#include "cli/bench_best_rounds.h"

namespace tilesmith::cli {
namespace {

Evaluation timed(double ms, std::optional<double> steady = std::nullopt) {
  Evaluation e;
  e.outcome = Outcome::kOk;
  e.timing.median_ms = ms;
  e.timing.steady_ms = steady;
  return e;
}

TEST(BenchBestRounds, AlternatingRoundsGivePairedRatiosAndAContest) {
  std::vector<std::string> order;
  int round_a = 0;
  // A drifts slower round by round; B is 5% slower than A in each round; the vendor is 3%
  // slower than A when flushed and 2% faster back to back.
  auto clock = [&] { return 1.0 + 0.01 * round_a; };
  std::vector<RoundContestant> cs{
      {"[1] a", [&] { order.push_back("a"); return timed(1.00 * clock(), 0.90 * clock()); }},
      {"[2] b", [&] { order.push_back("b"); return timed(1.05 * clock(), 0.95 * clock()); }}};
  std::function<Result<Evaluation>()> vendor = [&]() -> Result<Evaluation> {
    order.push_back("v");
    const Evaluation e = timed(1.03 * clock(), 0.882 * clock());
    ++round_a;  // the vendor closes or opens each round: one clock step per round
    return e;
  };
  ProblemRounds pr = measure_rounds(cs, &vendor, 8);
  EXPECT_EQ(pr.rounds, 8);
  EXPECT_TRUE(pr.note.empty()) << pr.note;
  ASSERT_GE(order.size(), 6u);
  EXPECT_EQ((std::vector<std::string>(order.begin(), order.begin() + 6)),
            (std::vector<std::string>{"a", "b", "v", "v", "b", "a"}));
  ASSERT_TRUE(pr.paired[0] && pr.paired[1]);
  EXPECT_EQ(pr.paired[0]->verdict(), "ours faster");
  ASSERT_TRUE(pr.paired_steady[0]);
  EXPECT_EQ(pr.paired_steady[0]->verdict(), "vendor faster");
  EXPECT_NEAR(pr.paired_steady[0]->median, 0.98, 0.011);
  ASSERT_TRUE(pr.contest);
  EXPECT_EQ(pr.contest->verdict, Verdict::kCertified);
  EXPECT_EQ(pr.contest->winner, 0u);
}

TEST(BenchBestRounds, WideRatiosGetMoreRoundsInPairsUpToTheMost) {
  // Ours alternates between 0.9 and 1.1 of the vendor's time: 8 rounds leave an interval
  // wider than 0.05, so pairs of rounds follow until the most allowed.
  int calls = 0;
  std::vector<RoundContestant> noisy{{"[1] a", [&] { return timed(++calls % 2 ? 0.9 : 1.1); }}};
  std::function<Result<Evaluation>()> vendor = [] { return Result<Evaluation>(timed(1.0)); };
  ProblemRounds pr = measure_rounds(noisy, &vendor, RoundsPlan{8, 13, 0.05});
  EXPECT_EQ(pr.rounds, 12) << "whole pairs only: a 13th round would have no partner";
  EXPECT_TRUE(ratio_too_wide(pr, RoundsPlan{8, 13, 0.05}));
  // A steady ratio stops at the plan's rounds; without a most, exactly those.
  std::vector<RoundContestant> steady{{"[1] b", [] { return timed(0.95); }}};
  EXPECT_EQ(measure_rounds(steady, &vendor, RoundsPlan{8, 24, 0.05}).rounds, 8);
  EXPECT_EQ(measure_rounds(noisy, &vendor, RoundsPlan{8, 0, 0.05}).rounds, 8);
  EXPECT_EQ(measure_rounds(noisy, nullptr, RoundsPlan{8, 24, 0.05}).rounds, 8) << "no vendor: no ratio to narrow";
  // Too few rounds for an interval count as wide.
  EXPECT_EQ(measure_rounds(steady, &vendor, RoundsPlan{2, 6, 0.05}).rounds, 6);
}

TEST(BenchBestRounds, AFailedMeasurementEndsTheRoundsAndKeepsWhatWasMeasured) {
  int calls = 0;
  std::vector<RoundContestant> cs{{"[1] a", [&] {
                                     if (++calls == 4) {
                                       Evaluation e;
                                       e.outcome = Outcome::kWrongResult;
                                       e.message = "12 elements over tolerance";
                                       return e;
                                     }
                                     return timed(1.0);
                                   }}};
  std::function<Result<Evaluation>()> vendor = [] { return Result<Evaluation>(timed(1.1)); };
  ProblemRounds pr = measure_rounds(cs, &vendor, 8);
  EXPECT_EQ(pr.rounds, 3);
  EXPECT_NE(pr.note.find("round 4, [1] a: wrong_result 12 elements over tolerance"), std::string::npos) << pr.note;
  ASSERT_TRUE(pr.paired[0]);
  EXPECT_EQ(pr.paired[0]->rounds, 3);
  EXPECT_FALSE(pr.paired_steady[0]) << "no back-to-back times were measured";
  EXPECT_FALSE(pr.contest) << "one entry: nothing to contest";
  ProblemRounds none = measure_rounds(cs, &vendor, 0);
  EXPECT_EQ(none.note, "not measured (--rounds 0)");
}

}  // namespace
}  // namespace tilesmith::cli
