// The problem-set scheduler: weights, the minimum slices, the split by weight and gain,
// yielding on a plateau, and a budget that is never exceeded. Pure logic.

#include <numeric>

#include <gtest/gtest.h>

#include "tuner/loop/problem_set_scheduler.h"

namespace tilesmith {
namespace {

ProblemStanding standing(double flops, std::int64_t count, std::optional<double> vendor_ms = std::nullopt) {
  ProblemStanding p;
  p.flops = flops;
  p.count = count;
  p.vendor_ms = vendor_ms;
  return p;
}

// Runs the scheduler to its end, each slice spending exactly what it was given, and
// returns the evaluations per problem. `gain` gives each problem's recent gain after
// its n-th slice; `done_after` marks a problem done after that many evaluations.
std::vector<std::int64_t> run_to_end(std::vector<ProblemStanding> problems, const SchedulerOptions& o,
                                     std::vector<std::int64_t> done_after = {}) {
  for (int guard = 0; guard < 10000; ++guard) {
    auto s = next_slice(problems, o);
    if (!s) break;
    EXPECT_GT(s->evals, 0);
    problems[s->problem].evals += s->evals;
    if (s->problem < done_after.size() && done_after[s->problem] > 0 &&
        problems[s->problem].evals >= done_after[s->problem])
      problems[s->problem].done = true;
  }
  std::vector<std::int64_t> evals;
  for (const auto& p : problems) evals.push_back(p.evals);
  return evals;
}

TEST(ProblemSetScheduler, WeightIsVendorTimeTimesCountWithFlopsAsStandIn) {
  // Two timed problems at 1 ms per 1e9 flops: the untimed one is converted at that rate.
  auto w = problem_weights({standing(1e9, 32, 1.0), standing(2e9, 1, 2.0), standing(4e9, 2)});
  ASSERT_EQ(w.size(), 3u);
  EXPECT_DOUBLE_EQ(w[0], 32.0);
  EXPECT_DOUBLE_EQ(w[1], 2.0);
  EXPECT_DOUBLE_EQ(w[2], 8.0);
  // None timed: flops x count, one unit for all.
  auto f = problem_weights({standing(1e9, 3), standing(2e9, 1)});
  EXPECT_DOUBLE_EQ(f[0], 3e9);
  EXPECT_DOUBLE_EQ(f[1], 2e9);
}

TEST(ProblemSetScheduler, EveryProblemGetsItsMinimumSliceFirstHeaviestFirst) {
  SchedulerOptions o;
  o.total_evals = 200;
  o.min_slice = 10;
  o.slice = 5;
  std::vector<ProblemStanding> p{standing(1, 1), standing(1e12, 100), standing(1, 1)};
  // The heavy problem first, then the two light ones in set order.
  for (std::size_t i : {1u, 0u, 2u}) {
    auto s = next_slice(p, o);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->problem, i);
    EXPECT_TRUE(s->minimum);
    EXPECT_EQ(s->evals, 10);
    p[i].evals = 10;
  }
  auto s = next_slice(p, o);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->minimum);
  EXPECT_EQ(s->problem, 1u);
  EXPECT_EQ(s->evals, 5);
}

TEST(ProblemSetScheduler, SmallBudgetShrinksTheMinimumSoEveryProblemGetsSome) {
  SchedulerOptions o;
  o.total_evals = 7;
  o.min_slice = 16;
  o.slice = 16;
  auto evals = run_to_end({standing(1, 1), standing(1, 1), standing(1, 1)}, o);
  EXPECT_EQ(effective_min_slice(3, o), 2);
  for (auto e : evals) EXPECT_GE(e, 2);
  EXPECT_EQ(std::accumulate(evals.begin(), evals.end(), std::int64_t{0}), 7);
}

TEST(ProblemSetScheduler, BudgetIsSpentInFullAndNeverExceeded) {
  for (std::int64_t total : {1, 5, 31, 100, 257}) {
    SchedulerOptions o;
    o.total_evals = total;
    o.min_slice = 8;
    o.slice = 12;
    auto evals = run_to_end({standing(1e9, 32, 0.5), standing(1e6, 1, 0.01), standing(3e9, 8, 2.0)}, o);
    EXPECT_EQ(std::accumulate(evals.begin(), evals.end(), std::int64_t{0}), total) << "budget " << total;
  }
  // Nothing left: no slice.
  SchedulerOptions o;
  o.total_evals = 10;
  std::vector<ProblemStanding> p{standing(1, 1)};
  p[0].evals = 10;
  EXPECT_FALSE(next_slice(p, o));
}

TEST(ProblemSetScheduler, HeavierProblemsGetMoreOfTheBudget) {
  SchedulerOptions o;
  o.total_evals = 400;
  o.min_slice = 10;
  o.slice = 10;
  // Weights 1 : 4 (vendor ms x count), equal gains.
  auto evals = run_to_end({standing(1e9, 1, 1.0), standing(1e9, 2, 2.0)}, o);
  EXPECT_EQ(evals[0] + evals[1], 400);
  EXPECT_GT(evals[1], 3 * evals[0]) << evals[0] << " vs " << evals[1];
  EXPECT_LT(evals[1], 5 * evals[0]) << evals[0] << " vs " << evals[1];
}

TEST(ProblemSetScheduler, AProblemThatStillImprovesOutranksOneOnAPlateau) {
  SchedulerOptions o;
  o.min_slice = 10;
  o.slice = 10;
  std::vector<ProblemStanding> p{standing(1e9, 1, 1.0), standing(1e9, 1, 1.0)};
  p[0].evals = p[1].evals = 40;
  p[0].recent_gain = 0.0;  // plateau: counts at the floor
  p[1].recent_gain = 0.3;
  auto s = next_slice(p, o);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->problem, 1u);
  // With the same gain, the one that has had less goes first.
  p[0].recent_gain = 0.3;
  p[1].evals = 60;
  s = next_slice(p, o);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->problem, 0u);
}

TEST(ProblemSetScheduler, ADoneProblemYieldsItsShareToTheOthers) {
  SchedulerOptions o;
  o.total_evals = 300;
  o.min_slice = 10;
  o.slice = 10;
  // Equal weights; the first is done (plateau) after 30 evaluations.
  auto evals = run_to_end({standing(1e9, 1, 1.0), standing(1e9, 1, 1.0)}, o, {30, 0});
  EXPECT_EQ(evals[0], 30);
  EXPECT_EQ(evals[1], 270);
  // Every problem done: the set ends with budget left.
  std::vector<ProblemStanding> p{standing(1, 1), standing(1, 1)};
  p[0].done = p[1].done = true;
  EXPECT_FALSE(next_slice(p, o));
  // A done problem gets no minimum slice either.
  p[1].done = false;
  auto s = next_slice(p, o);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->problem, 1u);
}

TEST(ProblemSetScheduler, NoBudgetRunsUntilEveryProblemIsDone) {
  SchedulerOptions o;
  o.min_slice = 4;
  o.slice = 4;
  auto evals = run_to_end({standing(1, 1), standing(1, 1)}, o, {12, 20});
  EXPECT_EQ(evals[0], 12);
  EXPECT_EQ(evals[1], 20);
}

TEST(ProblemSetScheduler, RecentGainComparesTheBestBeforeAndAfterTheWindow) {
  using V = std::vector<std::optional<double>>;
  EXPECT_DOUBLE_EQ(recent_gain({}, 4), 1);                                       // nothing known
  EXPECT_DOUBLE_EQ(recent_gain(V{std::nullopt, std::nullopt}, 1), 1);           // no ok result yet
  EXPECT_DOUBLE_EQ(recent_gain(V{std::nullopt, 2.0}, 1), 1);                     // first ok in the window
  EXPECT_DOUBLE_EQ(recent_gain(V{2.0, 3.0, 1.0}, 2), 1.0);                       // 2 ms -> 1 ms
  EXPECT_DOUBLE_EQ(recent_gain(V{1.0, 3.0, 1.5}, 2), 0.0);                       // nothing better
  EXPECT_NEAR(recent_gain(V{1.0, 2.0, std::nullopt, 0.8}, 2), 0.25, 1e-12);
}

}  // namespace
}  // namespace tilesmith
