// evolve's candidate generator on its own (tuner/search/detail/candidate_generator.h):
// every untried point of a small enumerated space, the elite's neighbourhoods before a
// bounded draw, an evolutionary pool where the space is not enumerated, and the initial
// design's pool with the template's seeds first.

#include <algorithm>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "tests/tuner/search/evolve_parts_fixtures.h"
#include "tuner/search/detail/candidate_generator.h"

namespace tilesmith::proposers::detail {
namespace {

using fixtures::small_space;
using fixtures::trials_of;

std::set<PointValues> points_of(const Candidates& c) {
  std::set<PointValues> out;
  for (size_t i = 0; i < c.size(); ++i) out.insert(c.point(i));
  return out;
}

TEST(EvolveCandidates, EveryUntriedPointOfASmallSpaceOnce) {
  const ParamSpace space = small_space();
  auto view = SpaceView::build(space, {});
  ASSERT_TRUE(view->enumerated());
  ASSERT_EQ(view->points().size(), 20u);
  const std::vector<PointValues> tried = {{4, 2, 1}, {8, 1, 2}, {1, 1, 1}, {4, 2, 1}};
  const auto trials = trials_of(space, tried, {2});
  HistoryIndex history;
  history.update(view, &trials);
  // The best distinct successes, best first: 4,2,1 (measured twice) then 8,1,2.
  const auto elite = elite_points(history, 8);
  EXPECT_EQ(elite, (std::vector<PointValues>{{4, 2, 1}, {8, 1, 2}}));
  EXPECT_EQ(elite_points(history, 1).size(), 1u);

  std::mt19937_64 rng(1);
  const Candidates c = CandidateGenerator(*view, history).generate(elite, rng);
  EXPECT_EQ(c.size(), 17u) << "20 valid points, 3 distinct tried";
  const auto got = points_of(c);
  EXPECT_EQ(got.size(), c.size()) << "no repeats";
  for (const auto& p : tried) EXPECT_EQ(got.count(p), 0u);
  for (size_t i = 0; i < c.size(); ++i) {
    std::vector<float> f(static_cast<size_t>(view->feature_count()));
    view->encode(c.point(i), f.data());
    EXPECT_TRUE(std::equal(f.begin(), f.end(), c.features(i))) << "features are the view's encoding";
    EXPECT_EQ(c.feature_rows()[i], c.features(i));
  }
  // The elite's neighbourhoods come first, in the order the view gives them.
  std::vector<PointValues> nb;
  view->neighbours(elite[0], false, &nb);
  ASSERT_FALSE(nb.empty());
  EXPECT_EQ(c.point(0), nb[0]);
}

TEST(EvolveCandidates, ABoundedDrawKeepsTheElitesNeighbourhoods) {
  const ParamSpace space = small_space();
  auto view = SpaceView::build(space, {});
  const auto trials = trials_of(space, {{4, 2, 1}, {2, 1, 1}});
  HistoryIndex history;
  history.update(view, &trials);
  const auto elite = elite_points(history, 1);
  CandidateOptions o;
  o.max_scored = 3;  // 20 points > 3 + 2 tried: a draw of 3, not the whole space
  std::mt19937_64 rng(7);
  const Candidates c = CandidateGenerator(*view, history, o).generate(elite, rng);
  std::vector<PointValues> nb;
  view->neighbours(elite[0], false, &nb);
  std::set<PointValues> untried_nb;
  for (const auto& p : nb)
    if (!history.tried().count(p)) untried_nb.insert(p);
  const auto got = points_of(c);
  for (const auto& p : untried_nb) EXPECT_EQ(got.count(p), 1u);
  EXPECT_LE(c.size(), untried_nb.size() + 3);
  EXPECT_EQ(got.size(), c.size());
  // The same rng state, the same candidates in the same order.
  std::mt19937_64 again(7);
  const Candidates d = CandidateGenerator(*view, history, o).generate(elite, again);
  ASSERT_EQ(d.size(), c.size());
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(d.point(i), c.point(i));
}

TEST(EvolveCandidates, AnEvolutionaryPoolWhereTheSpaceIsNotEnumerated) {
  const ParamSpace space = small_space();
  ViewLimits limits;
  limits.max_walk_steps = 4;  // 24 points cannot be walked in 4 steps: the view samples
  auto view = SpaceView::build(space, {}, limits);
  ASSERT_FALSE(view->enumerated());
  const auto trials = trials_of(space, {{4, 2, 1}, {8, 2, 2}, {2, 2, 1}});
  HistoryIndex history;
  history.update(view, &trials);
  const auto elite = elite_points(history, 8);
  CandidateOptions o;
  o.pool_size = 60;
  std::mt19937_64 rng(3);
  const Candidates c = CandidateGenerator(*view, history, o).generate(elite, rng);
  const auto got = points_of(c);
  EXPECT_EQ(got.size(), c.size());
  EXPECT_GT(c.size(), 10u) << "60 samples, 30 mutations and crossovers of 17 untried points";
  for (const auto& p : got) {
    EXPECT_TRUE(space.is_valid(p, {}));
    EXPECT_EQ(history.tried().count(p), 0u);
  }
}

TEST(EvolveCandidates, TheInitialPoolStartsWithTheUntriedSeeds) {
  const ParamSpace space = small_space();
  auto view = SpaceView::build(space, {});
  const auto trials = trials_of(space, {{8, 1, 1}});
  HistoryIndex history;
  history.update(view, &trials);
  const std::vector<PointValues> seeds = {{2, 2, 2}, {8, 1, 1}, {1, 1, 2}, {2, 2, 2}};
  size_t seed_count = 0;
  std::mt19937_64 rng(5);
  const Candidates c = CandidateGenerator(*view, history).initial_pool(seeds, rng, &seed_count);
  EXPECT_EQ(seed_count, 2u) << "the tried seed and the repeat fall away";
  ASSERT_GE(c.size(), 2u);
  EXPECT_EQ(c.point(0), (PointValues{2, 2, 2}));
  EXPECT_EQ(c.point(1), (PointValues{1, 1, 2}));
  EXPECT_EQ(c.size(), 19u) << "then the rest of the (small) space, untried";
}

}  // namespace
}  // namespace tilesmith::proposers::detail
