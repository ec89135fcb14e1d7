// evolve's picks on their own (tuner/search/detail/pick_policies.h), on a small space
// with hand-made scores: distances without the parameters of no effect, what a pick
// blocks and damps, the basins, and each kind of pick against a brute-force answer.

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "tests/tuner/search/evolve_parts_fixtures.h"
#include "tuner/search/detail/pick_policies.h"

namespace tilesmith::proposers::detail {
namespace {

using fixtures::small_ms;
using fixtures::small_space;
using fixtures::trials_of;

TEST(EvolvePicks, DistanceLeavesParametersWithNoEffectOut) {
  const Distance plain;
  EXPECT_FALSE(plain.masking());
  EXPECT_EQ(plain({1, 2, 3}, {1, 5, 4}), 2);
  const Distance masked({0, 0, 1});
  EXPECT_TRUE(masked.masking());
  EXPECT_EQ(masked({1, 2, 3}, {1, 5, 4}), 1);
  EXPECT_FALSE(Distance({0, 0, 0}).masking()) << "nothing masked: plain distances";
}

// A small space's history, its untried points as candidates, and scores made by hand:
// the mean is the log of the time (small_ms), the deviation grows with parameter C.
struct Scene {
  ParamSpace space = small_space();
  std::shared_ptr<const SpaceView> view = SpaceView::build(space, {});
  std::vector<Trial> trials;
  HistoryIndex history;
  std::vector<PointValues> elite;
  std::unique_ptr<Candidates> cand;
  SurrogateModels models;  // unfitted: these tests score by hand
  CandidateScores scores;

  explicit Scene(const std::vector<PointValues>& tried) {
    trials = trials_of(space, tried);
    history.update(view, &trials);
    elite = elite_points(history, 8);
    std::mt19937_64 rng(1);
    cand = std::make_unique<Candidates>(CandidateGenerator(*view, history).generate(elite, rng));
    const size_t n = cand->size();
    for (size_t i = 0; i < n; ++i) {
      const PointValues& p = cand->point(i);
      scores.mean.push_back(std::log(small_ms(space.to_config(p))));
      scores.stddev.push_back(0.1 * double(p[2]) + 0.01 * double(i % 3));
      scores.ei.push_back(expected_improvement(0.0, scores.mean.back(), scores.stddev.back(), 0));
    }
    scores.by_mean.resize(n);
    std::iota(scores.by_mean.begin(), scores.by_mean.end(), size_t{0});
    std::stable_sort(scores.by_mean.begin(), scores.by_mean.end(),
                     [&](size_t a, size_t b) { return scores.mean[a] < scores.mean[b]; });
  }
  size_t find(const PointValues& p) const {
    for (size_t i = 0; i < cand->size(); ++i)
      if (cand->point(i) == p) return i;
    return cand->size();
  }
};

// Every kind of pick off; tests turn on the ones they look at.
PickOptions none() {
  PickOptions o;
  o.exploit_per_batch = 0;
  o.local_per_batch = 0;
  o.far_per_batch = 0;
  o.second_picks = 0;
  return o;
}

TEST(EvolvePicks, APickBlocksItselfAndItsCopiesAndDampsItsNeighbours) {
  Scene s({{8, 4, 1}, {1, 1, 2}});
  AcquisitionOptions ao;
  ao.diversity_penalty = 0.5;
  const Acquisition acq(s.models, ao);
  const Distance dist;
  BatchPicks batch(*s.cand, &s.scores, acq, dist, s.history.observations(), 3);
  const std::vector<double> before = s.scores.ei;
  const size_t i = s.find({4, 2, 1});
  ASSERT_LT(i, s.cand->size());
  EXPECT_FALSE(batch.blocked(i));
  batch.take(i, "why");
  EXPECT_TRUE(batch.picked(i));
  EXPECT_TRUE(batch.blocked(i));
  ASSERT_EQ(batch.picks().size(), 1u);
  EXPECT_EQ(batch.picks()[0].candidate, i);
  EXPECT_EQ(batch.picks()[0].why, "why");
  for (size_t j = 0; j < s.cand->size(); ++j) {
    const bool near = SpaceView::hamming(s.cand->point(i), s.cand->point(j)) <= 1;
    EXPECT_EQ(s.scores.ei[j], near ? before[j] * 0.5 : before[j]) << j;
  }
  EXPECT_FALSE(batch.full());

  // C has no effect: a candidate that differs from a measured point in C alone is a
  // copy of its time, blocked from the start; a pick blocks its own copies.
  Scene m({{8, 4, 1}, {1, 1, 2}});
  const Distance masked({0, 0, 1});
  BatchPicks copies(*m.cand, &m.scores, acq, masked, m.history.observations(), 3);
  EXPECT_TRUE(copies.blocked(m.find({8, 4, 2})));
  EXPECT_TRUE(copies.blocked(m.find({1, 1, 1})));
  EXPECT_FALSE(copies.blocked(m.find({4, 2, 1})));
  EXPECT_FALSE(copies.picked(m.find({8, 4, 2})));
  copies.take(m.find({4, 2, 1}), "pick");
  EXPECT_TRUE(copies.blocked(m.find({4, 2, 2})));
  EXPECT_FALSE(copies.picked(m.find({4, 2, 2})));
}

TEST(EvolvePicks, BasinsAreDistinctBestFirst) {
  // Best first: 4,2,1 and 4,2,2 (1.0 ms, in history order), 8,2,1 (2.0), 2,1,2 (2.5),
  // 1,4,2 (5.5).
  Scene s({{8, 2, 1}, {4, 2, 1}, {4, 2, 2}, {1, 4, 2}, {2, 1, 2}});
  EXPECT_EQ(distinct_basins(s.history, 4, 2, Distance()),
            (std::vector<PointValues>{{4, 2, 1}, {2, 1, 2}, {1, 4, 2}}))
      << "4,2,2 and 8,2,1 are one parameter from 4,2,1";
  EXPECT_EQ(distinct_basins(s.history, 1, 2, Distance()).size(), 1u);
  EXPECT_EQ(distinct_basins(s.history, 9, 1, Distance()).size(), 5u) << "every point distinct";
  // With C of no effect, 2,1,2 and 1,4,2 are two apart still, 4,2,2 a copy of 4,2,1.
  EXPECT_EQ(distinct_basins(s.history, 9, 1, Distance({0, 0, 1})).size(), 4u);
}

TEST(EvolvePicks, BestPredictedThenNeighboursOfTheBest) {
  Scene s({{8, 4, 1}, {2, 1, 1}, {1, 1, 2}});
  const Acquisition acq(s.models, AcquisitionOptions{});
  const Distance dist;
  PickOptions o = none();
  o.exploit_per_batch = 1;
  o.local_per_batch = 1;
  const PickPolicies policies(*s.view, s.history, *s.cand, acq, dist, s.elite, false, o);
  BatchPicks batch(*s.cand, &s.scores, acq, dist, s.history.observations(), 2);
  policies.best_predicted(&batch, s.scores);
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch.picks()[0].candidate, s.scores.by_mean[0]);
  EXPECT_EQ(batch.picks()[0].why, "surrogate's best prediction");
  policies.local(&batch, s.scores);
  ASSERT_EQ(batch.size(), 2u);
  // The best predicted unpicked one-parameter neighbour of the best found (2,1,1).
  size_t want = s.cand->size();
  for (size_t i : s.scores.by_mean)
    if (i != batch.picks()[0].candidate && SpaceView::hamming(s.cand->point(i), s.elite.front()) <= 1) {
      want = i;
      break;
    }
  EXPECT_EQ(batch.picks()[1].candidate, want);
  EXPECT_EQ(batch.picks()[1].why, "one-parameter neighbour of one of the best so far");
  EXPECT_TRUE(batch.full());
}

TEST(EvolvePicks, ExploreFarAndRestartAgainstBruteForce) {
  Scene s({{8, 4, 1}, {2, 1, 1}, {1, 1, 2}, {4, 2, 1}});
  const Acquisition acq(s.models, AcquisitionOptions{});
  const Distance dist;
  const size_t n = s.cand->size();

  PickOptions o = none();
  o.explore_per_batch = 1;
  o.explore_quantile = 1.0;  // every candidate is "promising"
  {
    BatchPicks batch(*s.cand, &s.scores, acq, dist, s.history.observations(), 1);
    PickPolicies(*s.view, s.history, *s.cand, acq, dist, s.elite, false, o).explore(&batch, s.scores);
    ASSERT_EQ(batch.size(), 1u);
    const size_t got = batch.picks()[0].candidate;
    for (size_t i = 0; i < n; ++i) EXPECT_LE(s.scores.stddev[i], s.scores.stddev[got]);
  }
  o = none();
  o.far_per_batch = 1;
  o.far_quantile = 1.0;
  {
    // Not stalled: no far pick.
    BatchPicks idle(*s.cand, &s.scores, acq, dist, s.history.observations(), 1);
    PickPolicies(*s.view, s.history, *s.cand, acq, dist, s.elite, false, o).far(&idle, s.scores);
    EXPECT_EQ(idle.size(), 0u);
    BatchPicks batch(*s.cand, &s.scores, acq, dist, s.history.observations(), 1);
    PickPolicies(*s.view, s.history, *s.cand, acq, dist, s.elite, true, o).far(&batch, s.scores);
    ASSERT_EQ(batch.size(), 1u);
    // Farthest (L1 over the parameters' ranks) from every tried point.
    auto nearest = [&](size_t i) {
      double best = std::numeric_limits<double>::infinity();
      for (size_t t = 0; t < s.history.size(); ++t) {
        double d = 0;
        for (size_t q = 0; q < s.view->active().size(); ++q)
          d += std::fabs(s.cand->features(i)[q] - s.history.ranks(t)[q]);
        best = std::min(best, d);
      }
      return best;
    };
    const size_t got = batch.picks()[0].candidate;
    for (size_t i = 0; i < n; ++i) EXPECT_LE(nearest(i), nearest(got));
    EXPECT_EQ(batch.picks()[0].why, "least sampled of the promising (the search stalled)");
  }
  o = none();
  o.restart_per_batch = 1;
  o.restart_distance = 2;
  {
    BatchPicks batch(*s.cand, &s.scores, acq, dist, s.history.observations(), 1);
    const PickPolicies p(*s.view, s.history, *s.cand, acq, dist, s.elite, true, o);
    p.restart(&batch, s.scores);
    ASSERT_EQ(batch.size(), 1u);
    const size_t got = batch.picks()[0].candidate;
    for (const auto& b : p.basins()) EXPECT_GE(SpaceView::hamming(s.cand->point(got), b), 2);
    for (size_t i = 0; i < n; ++i) {
      bool far = true;
      for (const auto& b : p.basins()) far = far && SpaceView::hamming(s.cand->point(i), b) >= 2;
      if (far) {
        EXPECT_LE(s.scores.ei[i], s.scores.ei[got]);
      }
    }
  }
}

TEST(EvolvePicks, AWholeBatchAndTheCopiesLeftForLast) {
  Scene s({{8, 4, 1}, {2, 1, 1}, {1, 1, 2}});
  const Acquisition acq(s.models, AcquisitionOptions{});
  const size_t n = s.cand->size();
  {
    const Distance dist;
    BatchPicks batch(*s.cand, &s.scores, acq, dist, s.history.observations(), 6);
    std::mt19937_64 rng(1);
    PickOptions o;
    o.second_picks = 0;  // no second model here
    PickPolicies(*s.view, s.history, *s.cand, acq, dist, s.elite, false, o).pick(&batch, &s.scores, rng);
    ASSERT_EQ(batch.size(), 6u);
    std::set<size_t> distinct;
    for (const auto& p : batch.picks()) distinct.insert(p.candidate);
    EXPECT_EQ(distinct.size(), 6u);
    EXPECT_EQ(batch.picks()[0].why, "surrogate's best prediction");
    EXPECT_EQ(batch.picks()[5].why, "expected improvement");
  }
  // With C of no effect, half the candidates are copies: taken last, best predicted
  // first, once nothing else is left.
  Scene m({{8, 4, 1}, {2, 1, 1}, {1, 1, 2}});
  const Distance masked({0, 0, 1});
  BatchPicks batch(*m.cand, &m.scores, acq, masked, m.history.observations(), n);
  std::mt19937_64 rng(1);
  PickOptions o = none();
  PickPolicies(*m.view, m.history, *m.cand, acq, masked, m.elite, false, o).pick(&batch, &m.scores, rng);
  ASSERT_EQ(batch.size(), n) << "every untried point in the end";
  size_t copies = 0;
  for (const auto& p : batch.picks()) {
    if (p.why == "surrogate's best prediction (no other is left)") {
      ++copies;
    } else {
      EXPECT_EQ(copies, 0u) << "copies come last";
    }
  }
  EXPECT_GT(copies, 0u);
}

}  // namespace
}  // namespace tilesmith::proposers::detail
