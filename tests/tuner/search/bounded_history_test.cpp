// What keeps evolve's cost flat as the history grows: the training subset past a bound,
// the history index kept between calls (and that keeping it never changes a proposal),
// and the one-parameter effects updated one measurement at a time.

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tuner/search/detail/effects.h"
#include "tuner/search/detail/history_index.h"
#include "tuner/search/detail/training_rows.h"
#include "tuner/search/evolve_proposer.h"
#include "tuner/search/random_proposer.h"

namespace tilesmith {
namespace {

using proposers::detail::EffectsTracker;
using proposers::detail::HistoryIndex;
using proposers::detail::Observation;
using proposers::detail::SpaceView;
using proposers::detail::training_rows;
using proposers::detail::TrainingBound;

ParamSpace grid_space() {
  auto s = ParamSpace::from_json(nlohmann::json::parse(R"js({
    "parameters": [
      {"name": "BM", "values": [16, 32, 64, 128]}, {"name": "BN", "values": [16, 32, 64, 128]},
      {"name": "TM", "values": [1, 2, 4, 8]}, {"name": "TN", "values": [1, 2, 4, 8]},
      {"name": "K", "values": [8, 16, 32]}, {"name": "G", "values": [1, 4, 8]}
    ],
    "constraints": ["BM >= 2 * TM", "BN >= 2 * TN"]
  })js"));
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return *s;
}

// Smooth in the tile sizes, flat in G (a parameter with no effect).
double fake_ms(const Config& c) {
  auto l = [&](const char* k) { return std::log2(double(c.at(k))); };
  return 1.0 + std::pow(l("BM") - 6, 2) + 0.7 * std::pow(l("BN") - 5, 2) +
         0.4 * std::pow(l("TM") - 2, 2) + 0.3 * std::abs(l("TN") - 1) + 0.2 * std::abs(l("K") - 4);
}

// A history of `rows` rows: valid points in a seeded order, every seventh a failure.
std::vector<Trial> history_of(const ParamSpace& space, size_t rows, std::uint64_t seed) {
  auto points = space.enumerate_valid({});
  std::mt19937_64 rng(seed);
  std::shuffle(points.begin(), points.end(), rng);
  std::vector<Trial> out;
  for (size_t i = 0; i < rows && i < points.size(); ++i) {
    Trial t;
    t.config = space.to_config(points[i]);
    if (i % 7 == 3) {
      t.outcome = Outcome::kCompileError;
    } else {
      t.outcome = Outcome::kOk;
      t.score = fake_ms(t.config);
    }
    out.push_back(std::move(t));
  }
  return out;
}

TEST(TrainingRows, EveryRowUpToTheBound) {
  const std::vector<size_t> best = {3, 1, 4, 0, 2};
  EXPECT_EQ(training_rows(5, best, TrainingBound{5}), (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(training_rows(5, best, TrainingBound{0}).size(), 5u) << "0: no bound";
  EXPECT_TRUE(training_rows(0, {}, TrainingBound{4}).empty());
}

TEST(TrainingRows, BestRecentAndASpreadOfTheRest) {
  // 1,000 rows; the successes are the even rows, fastest last (best_first: 998, 996, ...).
  std::vector<size_t> best;
  for (size_t i = 1000; i >= 2; i -= 2) best.push_back(i - 2);
  TrainingBound bound{100, 0.4, 0.2};
  const auto rows = training_rows(1000, best, bound);
  ASSERT_EQ(rows.size(), 100u);
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  EXPECT_EQ(std::set<size_t>(rows.begin(), rows.end()).size(), rows.size()) << "distinct";
  const std::set<size_t> chosen(rows.begin(), rows.end());
  for (size_t k = 0; k < 40; ++k)
    EXPECT_TRUE(chosen.count(best[k])) << "the 40 fastest, " << best[k];
  // The best are the even rows from 920 up; the 20 most recent not among them are the
  // odd rows from 961 up.
  for (size_t r = 961; r < 1000; r += 2) EXPECT_TRUE(chosen.count(r)) << "recent " << r;
  EXPECT_FALSE(chosen.count(959)) << "not among the 20 most recent";
  // The other 40 spread over rows 0..918: some early, some in the middle.
  EXPECT_EQ(rows.front(), 0u);
  EXPECT_GT(std::count_if(rows.begin(), rows.end(), [](size_t r) { return r >= 400 && r < 600; }),
            5);
  // Same inputs, same rows.
  EXPECT_EQ(training_rows(1000, best, bound), rows);
}

TEST(TrainingRows, FewerSuccessesThanTheBestShare) {
  const auto rows = training_rows(50, {7, 9}, TrainingBound{10, 0.5, 0.2});
  ASSERT_EQ(rows.size(), 10u);
  EXPECT_TRUE(std::count(rows.begin(), rows.end(), 7) && std::count(rows.begin(), rows.end(), 9));
  EXPECT_TRUE(std::count(rows.begin(), rows.end(), 49) && std::count(rows.begin(), rows.end(), 48));
}

TEST(EffectsTracker, MatchesTheWholeHistoryAtEveryStep) {
  ParamSpace space = grid_space();
  auto view = SpaceView::build(space, {});
  const auto history = history_of(space, 300, 5);
  EffectsTracker tracker;
  tracker.reset(view->dims(), view->active());
  std::vector<Observation> seen;
  for (size_t i = 0; i < history.size(); ++i) {
    const Trial& t = history[i];
    Observation o{*space.from_config(t.config), t.outcome == Outcome::kOk, t.score.value_or(0)};
    seen.push_back(o);
    if (o.ok) tracker.add(o.point, std::log(o.score));
    // A repeated measurement now and then.
    if (i % 50 == 49 && o.ok) {
      seen.push_back({o.point, true, o.score * 1.01});
      tracker.add(o.point, std::log(o.score * 1.01));
    }
  }
  const auto whole = proposers::detail::one_parameter_effects(*view, seen);
  const auto& step = tracker.effects();
  EXPECT_EQ(step.pairs, whole.pairs);
  for (size_t d = 0; d < whole.pairs.size(); ++d) {
    EXPECT_NEAR(step.mean_abs_log[d], whole.mean_abs_log[d], 1e-12) << d;
    EXPECT_NEAR(step.max_abs_log[d], whole.max_abs_log[d], 1e-12) << d;
  }
  EXPECT_GT(whole.pairs[5], 10) << "G has pairs";
  EXPECT_NEAR(whole.mean_abs_log[5], 0.0, 1e-12) << "and no effect";
}

TEST(HistoryIndex, KeepsWhatItMappedAndStartsOverOnAnotherHistory) {
  ParamSpace space = grid_space();
  auto view = SpaceView::build(space, {});
  auto history = history_of(space, 200, 9);
  Trial foreign;  // does not map onto the space
  foreign.config = {{"BM", 3}};
  history.insert(history.begin() + 10, foreign);
  HistoryIndex index;
  std::vector<Trial> grown(history.begin(), history.begin() + 120);
  index.update(view, &grown);
  EXPECT_TRUE(index.rebuilt_last());
  EXPECT_EQ(index.size(), 119u) << "the foreign row is left out";
  grown.assign(history.begin(), history.end());
  index.update(view, &grown);
  EXPECT_FALSE(index.rebuilt_last());
  EXPECT_EQ(index.absorbed_last(), 81u);

  HistoryIndex fresh;
  fresh.update(view, &grown);
  ASSERT_EQ(fresh.size(), index.size());
  EXPECT_EQ(fresh.best_first(), index.best_first());
  EXPECT_EQ(fresh.last_gain(), index.last_gain());
  EXPECT_EQ(fresh.ok_count(), index.ok_count());
  EXPECT_EQ(fresh.effects().pairs, index.effects().pairs);
  EXPECT_EQ(fresh.effects().mean_abs_log, index.effects().mean_abs_log);
  for (size_t i = 0; i < fresh.size(); ++i) {
    ASSERT_EQ(fresh.observations()[i].point, index.observations()[i].point);
    EXPECT_EQ(fresh.space_index(i), index.space_index(i));
    EXPECT_TRUE(std::equal(fresh.features(i), fresh.features(i) + view->feature_count(),
                           index.features(i)));
  }
  // Fastest first, equal times in history order.
  const auto& order = index.best_first();
  for (size_t k = 1; k < order.size(); ++k) {
    const double a = index.observations()[order[k - 1]].score,
                 b = index.observations()[order[k]].score;
    EXPECT_TRUE(a < b || (a == b && order[k - 1] < order[k]));
  }

  // A changed row among the last ones, a shorter history, another view: start over.
  grown.back().score = *grown.back().score * 2;
  index.update(view, &grown);
  EXPECT_TRUE(index.rebuilt_last());
  grown.pop_back();
  index.update(view, &grown);
  EXPECT_TRUE(index.rebuilt_last());
  index.update(SpaceView::build(space, {}), &grown);
  EXPECT_TRUE(index.rebuilt_last());
  index.update(index.size() ? SpaceView::build(space, {}) : view, nullptr);
  EXPECT_EQ(index.size(), 0u);
}

ProposalRequest request(const ParamSpace& space, const std::vector<Trial>& history,
                        std::uint64_t seed) {
  ProposalRequest r;
  r.space = &space;
  r.history = &history;
  r.count = 8;
  r.seed = seed;
  return r;
}

// The proposals, measured by fake_ms, appended to the history as the loop would.
void append_measured(const std::vector<Proposal>& proposals, std::vector<Trial>* history) {
  for (const auto& p : proposals) {
    Trial t;
    t.config = p.config;
    t.outcome = Outcome::kOk;
    t.score = fake_ms(p.config);
    history->push_back(t);
  }
}

// A resumed run starts with nothing kept; it must propose what the run that kept its
// index would have, past the training bound too.
TEST(EvolveProposer, KeepingTheHistoryNeverChangesAProposal) {
  ParamSpace space = grid_space();
  EvolveOptions options;
  options.max_forest_rows = 60;
  options.max_process_rows = 40;
  EvolveProposer kept(options);
  auto history = history_of(space, 40, 3);
  for (int gen = 0; gen < 12; ++gen) {
    auto warm = kept.propose(request(space, history, 100 + gen));
    EvolveProposer resumed(options);
    auto cold = resumed.propose(request(space, history, 100 + gen));
    ASSERT_TRUE(warm.status.ok()) << warm.status.to_string();
    ASSERT_EQ(warm.proposals.size(), cold.proposals.size());
    for (size_t i = 0; i < warm.proposals.size(); ++i) {
      EXPECT_EQ(warm.proposals[i].config, cold.proposals[i].config)
          << "generation " << gen << ", pick " << i;
      EXPECT_EQ(warm.proposals[i].rationale, cold.proposals[i].rationale);
    }
    EXPECT_EQ(kept.last_profile().history_rows, history.size());
    EXPECT_EQ(kept.last_profile().absorbed_rows, gen == 0 ? history.size() : 8u);
    EXPECT_EQ(kept.last_profile().forest_rows, std::min<size_t>(60, history.size()));
    EXPECT_EQ(kept.last_profile().process_rows, std::min<size_t>(40, history.size()));
    append_measured(warm.proposals, &history);
  }
}

// The random proposer keeps its map of the history too: each call maps only the rows added
// since the last one, and proposes what a proposer starting from nothing would.
TEST(RandomProposer, MapsOnlyNewRowsAndKeepingNeverChangesAProposal) {
  ParamSpace space = grid_space();
  RandomProposer kept;
  auto history = history_of(space, 40, 3);
  for (int gen = 0; gen < 6; ++gen) {
    auto warm = kept.propose(request(space, history, 200 + gen));
    auto cold = RandomProposer().propose(request(space, history, 200 + gen));
    ASSERT_TRUE(warm.status.ok()) << warm.status.to_string();
    ASSERT_EQ(warm.proposals.size(), cold.proposals.size());
    for (size_t i = 0; i < warm.proposals.size(); ++i) EXPECT_EQ(warm.proposals[i].config, cold.proposals[i].config);
    EXPECT_EQ(kept.last_absorbed_rows(), gen == 0 ? history.size() : 8u);
    append_measured(warm.proposals, &history);
  }
}

}  // namespace
}  // namespace tilesmith
