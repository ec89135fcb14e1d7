// evolve's surrogate on its own (tuner/search/detail/surrogate.h): what the models learn
// (clipped log-times, failures above the clip), the bound on their rows, which model
// leads, the second model's deviation bound, and its one draw of the rng.

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tuner/search/detail/surrogate.h"

namespace tilesmith::proposers::detail {
namespace {

// n rows of one feature, x = i / (n - 1), with the given scores; `failed` rows not ok.
struct HandMade {
  std::vector<Observation> observations;
  std::vector<size_t> best_first;
  std::vector<float> features;
  TrainingData data() const {
    TrainingData d;
    d.observations = &observations;
    d.best_first = &best_first;
    d.features = features.data();
    d.stride = 1;
    d.ranks = 1;
    return d;
  }
};

HandMade hand_made(const std::vector<double>& scores, const std::vector<bool>& ok) {
  HandMade h;
  const size_t n = scores.size();
  for (size_t i = 0; i < n; ++i) {
    h.observations.push_back({{static_cast<std::int64_t>(i)}, ok[i], scores[i]});
    h.features.push_back(float(i) / float(n - 1));
    if (ok[i]) h.best_first.push_back(i);
  }
  std::stable_sort(h.best_first.begin(), h.best_first.end(),
                   [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  return h;
}

// One unpruned tree on every row: it interpolates the training targets.
SurrogateOptions exact_forest() {
  SurrogateOptions o;
  o.second = false;
  o.forest.trees = 1;
  o.forest.bootstrap = false;
  o.forest.feature_fraction = 1;
  return o;
}

TEST(EvolveSurrogate, LearnsClippedLogTimesAndFailuresAboveTheClip) {
  // Successes 1, 2, 4, 8 (ms) and one failure: the clip at the median of the successes
  // (k = floor(0.5 * 3) = 1: 2 ms) flattens 4 and 8; the failure sits 0.7 above it.
  const HandMade h = hand_made({4, 1, 0, 8, 2}, {true, true, false, true, true});
  SurrogateModels m;
  std::mt19937_64 rng(1);
  m.fit(h.data(), exact_forest(), rng);
  EXPECT_DOUBLE_EQ(m.best(), std::log(1.0));
  EXPECT_EQ(m.forest_rows(), 5u);
  EXPECT_EQ(m.process_rows(), 0u) << "no second model asked for";
  EXPECT_FALSE(m.process().fitted());
  const double clip = std::log(2.0);
  const std::vector<double> want = {clip, std::log(1.0), clip + 0.7, clip, std::log(2.0)};
  std::vector<const float*> rows;
  for (size_t i = 0; i < 5; ++i) rows.push_back(&h.features[i]);
  std::vector<double> mean(5), sd(5);
  m.predict(rows.data(), 5, mean.data(), sd.data());
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_NEAR(mean[i], want[i], 1e-12) << i;
    EXPECT_EQ(sd[i], 0.0);
  }
  // No clip (1): every success as measured.
  SurrogateOptions unclipped = exact_forest();
  unclipped.clip_quantile = 1.0;
  m.fit(h.data(), unclipped, rng);
  m.predict(rows.data(), 5, mean.data(), sd.data());
  EXPECT_NEAR(mean[3], std::log(8.0), 1e-12);
  EXPECT_NEAR(mean[2], std::log(8.0) + 0.7, 1e-12) << "failures sit above the slowest";
}

TEST(EvolveSurrogate, FitsEachModelOnItsBoundOfRows) {
  std::vector<double> scores;
  std::vector<bool> ok;
  for (int i = 0; i < 40; ++i) {
    scores.push_back(1.0 + std::fabs(i - 20.0));
    ok.push_back(i % 5 != 0);
  }
  const HandMade h = hand_made(scores, ok);
  SurrogateOptions o;
  o.max_forest_rows = 12;
  o.max_process_rows = 8;
  SurrogateModels m;
  std::mt19937_64 rng(3);
  m.fit(h.data(), o, rng);
  EXPECT_EQ(m.forest_rows(), 12u);
  EXPECT_EQ(m.process_rows(), 8u);
  EXPECT_TRUE(m.forest().fitted());
  EXPECT_TRUE(m.process().fitted());
  o.max_forest_rows = 0;  // no bound
  m.fit(h.data(), o, rng);
  EXPECT_EQ(m.forest_rows(), 40u);
}

TEST(EvolveSurrogate, EitherModelLeadsAndTheSecondsDeviationIsBounded) {
  std::vector<double> scores;
  std::vector<bool> ok;
  for (int i = 0; i < 15; ++i) {
    scores.push_back(1.0 + 0.1 * (i - 7) * (i - 7));
    ok.push_back(true);
  }
  const HandMade h = hand_made(scores, ok);
  std::vector<float> at = {0.05f, 0.5f, 0.93f};
  std::vector<const float*> rows = {&at[0], &at[1], &at[2]};

  // The forest leads: the process is second, its deviation a bound until asked for.
  SurrogateOptions o;
  o.forest.trees = 8;
  SurrogateModels forest_leads;
  std::mt19937_64 rng(5);
  forest_leads.fit(h.data(), o, rng);
  EXPECT_FALSE(forest_leads.process_leads());
  std::vector<double> mean(3), sd(3), mean2(3), sd2(3), exact(3);
  forest_leads.predict(rows.data(), 3, mean.data(), sd.data());
  for (size_t i = 0; i < 3; ++i) {
    double m, s;
    forest_leads.forest().predict(rows[i], &m, &s);
    EXPECT_EQ(mean[i], m);
    EXPECT_EQ(sd[i], s);
  }
  EXPECT_FALSE(forest_leads.predict_second(rows.data(), 3, mean2.data(), sd2.data()));
  forest_leads.second_stddev(rows.data(), 3, exact.data());
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(sd2[i], forest_leads.process().prior_stddev());
    EXPECT_LE(exact[i], sd2[i]) << "no posterior deviation exceeds the prior's";
  }
  // Between training rows the process follows the data: slower at the ends.
  EXPECT_LT(mean2[1], mean2[0]);
  EXPECT_LT(mean2[1], mean2[2]);

  // The process leads: the forest is second, its deviation exact.
  o.process_leads = true;
  SurrogateModels process_leads;
  process_leads.fit(h.data(), o, rng);
  process_leads.predict(rows.data(), 3, mean.data(), sd.data());
  std::vector<double> pm(3), ps(3);
  process_leads.process().predict(rows.data(), 3, pm.data(), ps.data());
  EXPECT_EQ(mean, pm);
  EXPECT_EQ(sd, ps);
  EXPECT_TRUE(process_leads.predict_second(rows.data(), 3, mean2.data(), sd2.data()));
  process_leads.second_stddev(rows.data(), 3, exact.data());
  EXPECT_EQ(sd2, exact);
}

TEST(EvolveSurrogate, ThePerTreePredictionsAgreeWithTheForest) {
  const HandMade h = hand_made({3, 1, 2, 5, 4, 1.5}, {true, true, true, true, true, true});
  SurrogateOptions o;
  o.second = false;
  o.forest.trees = 6;
  SurrogateModels m;
  std::mt19937_64 rng(2);
  m.fit(h.data(), o, rng);
  ASSERT_EQ(m.tree_count(), 6);
  const float x[] = {0.3f, 0.7f};
  const float* rows[] = {&x[0], &x[1]};
  std::vector<double> per_tree(12), mean(2), sd(2);
  m.predict_trees(rows, 2, per_tree.data(), mean.data(), sd.data());
  for (size_t i = 0; i < 2; ++i) {
    double fm, fs;
    m.forest().predict(rows[i], &fm, &fs);
    EXPECT_NEAR(mean[i], fm, 1e-12);
    EXPECT_NEAR(sd[i], fs, 1e-9);
  }
}

TEST(EvolveSurrogate, DrawsOnceFromTheRngForTheForestOnly) {
  const HandMade h = hand_made({3, 1, 2, 5}, {true, true, true, true});
  SurrogateOptions o;
  o.second = false;
  std::mt19937_64 rng(9), expected(9);
  SurrogateModels m;
  m.fit(h.data(), o, rng);
  expected();
  EXPECT_EQ(rng, expected) << "one draw: the forest's seed";
  o.process_leads = true;  // no forest at all
  m.fit(h.data(), o, rng);
  EXPECT_EQ(rng, expected);
  EXPECT_EQ(m.forest_rows(), 0u);
  // Same data, same seed: the same models.
  std::mt19937_64 a(4), b(4);
  SurrogateModels ma, mb;
  o.process_leads = false;
  o.second = true;
  ma.fit(h.data(), o, a);
  mb.fit(h.data(), o, b);
  const float x = 0.4f;
  const float* row = &x;
  double m1, s1, m2, s2;
  ma.predict(&row, 1, &m1, &s1);
  mb.predict(&row, 1, &m2, &s2);
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(s1, s2);
}

}  // namespace
}  // namespace tilesmith::proposers::detail
