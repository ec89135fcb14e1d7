// evolve's acquisition on its own (tuner/search/detail/acquisition.h): expected
// improvement, the scores of every candidate, the damping a pick applies, ties, Thompson
// draws, and the second model's bound that becomes exact only where it could win.

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tuner/search/detail/acquisition.h"

namespace tilesmith::proposers::detail {
namespace {

TEST(EvolveAcquisition, ExpectedImprovement) {
  // No spread: the improvement itself, never below zero.
  EXPECT_DOUBLE_EQ(expected_improvement(1.0, 0.25, 0.0, 0.0), 0.75);
  EXPECT_DOUBLE_EQ(expected_improvement(1.0, 1.5, 0.0, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(expected_improvement(1.0, 0.25, 0.0, 0.5), 0.25) << "xi asks for more";
  // At the best, sd * phi(0).
  EXPECT_NEAR(expected_improvement(0.0, 0.0, 2.0, 0.0), 2.0 / std::sqrt(2 * M_PI), 1e-12);
  // More spread, more to gain; a better mean, more to gain.
  EXPECT_GT(expected_improvement(0.0, 0.5, 1.0, 0.0), expected_improvement(0.0, 0.5, 0.5, 0.0));
  EXPECT_GT(expected_improvement(0.0, -0.5, 0.5, 0.0), expected_improvement(0.0, 0.5, 0.5, 0.0));
  EXPECT_GT(expected_improvement(0.0, 5.0, 0.5, 0.0), 0.0) << "never quite zero with spread";
}

// Models fitted on one feature: log-times of a bowl with its bottom at x = 0.5.
struct Fitted {
  std::vector<Observation> observations;
  std::vector<size_t> best_first;
  std::vector<float> features;
  SurrogateModels models;
  explicit Fitted(bool second, int trees = 8) {
    for (int i = 0; i < 12; ++i) {
      const float x = float(i) / 11;
      features.push_back(x);
      observations.push_back({{i}, true, std::exp(4.0 * (x - 0.5) * (x - 0.5))});
      best_first.push_back(static_cast<size_t>(i));
    }
    std::stable_sort(best_first.begin(), best_first.end(), [&](size_t a, size_t b) {
      return observations[a].score < observations[b].score;
    });
    TrainingData d{&observations, &best_first, features.data(), 1, 1};
    SurrogateOptions o;
    o.second = second;
    o.forest.trees = trees;
    o.clip_quantile = 1.0;
    std::mt19937_64 rng(1);
    models.fit(d, o, rng);
  }
};

std::vector<float> grid(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = float(i) / float(n - 1);
  return x;
}

std::vector<const float*> rows_of(const std::vector<float>& x) {
  std::vector<const float*> r;
  for (const float& v : x) r.push_back(&v);
  return r;
}

TEST(EvolveAcquisition, ScoresEveryCandidateByExpectedImprovement) {
  const Fitted f(/*second=*/true);
  AcquisitionOptions o;
  o.exploration = 0.01;
  const Acquisition acq(f.models, o);
  const auto x = grid(41);
  const auto rows = rows_of(x);
  CandidateScores s = acq.score(rows.data(), rows.size());
  ASSERT_EQ(s.size(), 41u);
  for (size_t i = 0; i < s.size(); ++i)
    EXPECT_EQ(s.ei[i], expected_improvement(f.models.best(), s.mean[i], s.stddev[i], 0.01));
  for (size_t k = 1; k < s.size(); ++k)
    EXPECT_LE(s.mean[s.by_mean[k - 1]], s.mean[s.by_mean[k]]) << "by_mean: best predicted first";
  EXPECT_NEAR(x[s.by_mean.front()], 0.5, 0.15) << "the bowl's bottom";
  EXPECT_TRUE(s.per_tree.empty()) << "no Thompson sampling asked for";
  // The second model (the Gaussian process) starts from its bound: nothing exact.
  ASSERT_EQ(s.ei2.size(), 41u);
  EXPECT_EQ(std::count(s.exact2.begin(), s.exact2.end(), 1), 0);
  EXPECT_EQ(std::string(acq.second_name()), "Gaussian process's ");
  const CandidateScores bound = s;
  std::vector<size_t> all(41);
  std::iota(all.begin(), all.end(), size_t{0});
  acq.tighten_second(&s, rows.data(), all);
  for (size_t i = 0; i < 41; ++i) {
    EXPECT_TRUE(s.exact2[i]);
    EXPECT_LE(s.ei2[i], bound.ei2[i] + 1e-15) << "the bound is an upper bound";
  }
}

TEST(EvolveAcquisition, TheSecondModelsPickIsWhatScoringEveryCandidateWouldGive) {
  const Fitted f(/*second=*/true);
  const Acquisition acq(f.models, AcquisitionOptions{});
  const auto x = grid(700);  // more than one block of exact deviations
  const auto rows = rows_of(x);
  CandidateScores lazy = acq.score(rows.data(), rows.size());
  CandidateScores full = lazy;
  std::vector<size_t> all(x.size());
  std::iota(all.begin(), all.end(), size_t{0});
  acq.tighten_second(&full, rows.data(), all);
  std::vector<char> blocked(x.size(), 0);
  for (int pick = 0; pick < 4; ++pick) {
    const size_t got = acq.best_second(&lazy, rows.data(), blocked, /*exploit=*/false);
    const size_t want = static_cast<size_t>(
        std::max_element(full.ei2.begin(), full.ei2.end(),
                         [&](double a, double b) { return a < b; }) - full.ei2.begin());
    // The same candidate, or one whose exact score equals the best (to rounding).
    EXPECT_NEAR(full.ei2[got], full.ei2[want], 1e-12) << "pick " << pick;
    EXPECT_TRUE(lazy.exact2[got]);
    blocked[got] = 1;
    full.ei2[got] = -1;  // taken
  }
  // Its best prediction needs no deviation.
  const size_t best_mean = acq.best_second(&lazy, rows.data(), blocked, /*exploit=*/true);
  for (size_t i = 0; i < x.size(); ++i)
    if (!blocked[i]) {
      EXPECT_LE(lazy.mean2[best_mean], lazy.mean2[i]);
    }
}

TEST(EvolveAcquisition, DampingTiesAndEligibility) {
  const Fitted f(/*second=*/false);
  AcquisitionOptions o;
  o.diversity_penalty = 0.25;
  const Acquisition acq(f.models, o);
  CandidateScores s;
  s.mean = {0.3, 0.1, 0.2, 0.0};
  s.stddev = {0, 0, 0, 0};
  s.ei = {1.0, 2.0, 2.0, 0.5};
  s.ei2 = {1.0, 1.0, 1.0, 1.0};
  s.damping2 = {1.0, 1.0, 1.0, 1.0};
  std::vector<char> none(4, 0), all(4, 1);
  EXPECT_EQ(acq.best_ei(s, none, all), 1u) << "equal scores: the better predicted mean";
  std::vector<char> blocked = {0, 1, 0, 0};
  EXPECT_EQ(acq.best_ei(s, blocked, all), 2u);
  std::vector<char> eligible = {1, 0, 0, 1};
  EXPECT_EQ(acq.best_ei(s, none, eligible), 0u);
  EXPECT_EQ(acq.best_ei(s, {1, 1, 1, 1}, all), 4u) << "none left";
  acq.damp(&s, 2, /*second=*/false);
  EXPECT_EQ(s.ei[2], 0.5);
  EXPECT_EQ(s.ei2[2], 1.0) << "the second model's only with `second`";
  acq.damp(&s, 2, /*second=*/true);
  EXPECT_EQ(s.ei[2], 0.125);
  EXPECT_EQ(s.ei2[2], 0.25);
  EXPECT_EQ(s.damping2[2], 0.25);
  // Thompson sampling leaves the first model's scores alone.
  o.thompson = true;
  const Acquisition thompson(f.models, o);
  thompson.damp(&s, 0, false);
  EXPECT_EQ(s.ei[0], 1.0);
}

TEST(EvolveAcquisition, ThompsonDrawsFromTheTrees) {
  // Three candidates, four trees. Candidate 2 is best on every tree but the last.
  CandidateScores s;
  s.mean.assign(3, 0);
  s.trees = 4;
  s.per_tree = {1, 1, 1, 1,  //
                2, 2, 2, -9,  //
                0, 0, 0, 5};
  EXPECT_EQ(ThompsonDraw(4, 0.5).draw(), 2);
  EXPECT_EQ(ThompsonDraw(4, 0.01).draw(), 1) << "at least one tree";
  std::vector<char> none(3, 0), all(3, 1);
  int wins[3] = {0, 0, 0};
  std::mt19937_64 rng(11);
  ThompsonDraw one(4, 0.25);
  for (int k = 0; k < 400; ++k) ++wins[one.pick(s, none, all, rng)];
  EXPECT_EQ(wins[0], 0) << "never the best of any one tree";
  EXPECT_GT(wins[1], 50) << "wins when its one good tree is drawn (1 in 4)";
  EXPECT_GT(wins[2], 200);
  ThompsonDraw every(4, 1.0);  // the mean of all trees: candidate 1 (-3)
  EXPECT_EQ(every.pick(s, none, all, rng), 1u);
  EXPECT_EQ(every.pick(s, {0, 1, 0}, all, rng), 0u) << "4 against 5";
  EXPECT_EQ(every.pick(s, {1, 1, 1}, all, rng), 3u);
  // A fixed seed, a fixed sequence.
  std::mt19937_64 a(2), b(2);
  ThompsonDraw da(4, 0.5), db(4, 0.5);
  for (int k = 0; k < 20; ++k) EXPECT_EQ(da.pick(s, none, all, a), db.pick(s, none, all, b));
}

TEST(EvolveAcquisition, ThompsonScoresKeepEachTree) {
  const Fitted f(/*second=*/false, /*trees=*/5);
  AcquisitionOptions o;
  o.thompson = true;
  const Acquisition acq(f.models, o);
  const auto x = grid(9);
  const auto rows = rows_of(x);
  const CandidateScores s = acq.score(rows.data(), rows.size());
  EXPECT_EQ(s.trees, 5);
  ASSERT_EQ(s.per_tree.size(), 45u);
  for (size_t i = 0; i < 9; ++i) {
    double m = 0;
    for (int t = 0; t < 5; ++t) m += s.per_tree[i * 5 + static_cast<size_t>(t)];
    EXPECT_NEAR(s.mean[i], m / 5, 1e-12);
  }
}

}  // namespace
}  // namespace tilesmith::proposers::detail
