// The proposers' helpers: the random forest, the Gaussian process and the space view.

#include <cmath>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tuner/search/detail/convergence.h"
#include "tuner/search/detail/effects.h"
#include "tuner/search/detail/forest.h"
#include "tuner/search/detail/gaussian_process.h"
#include "tuner/search/detail/space_view.h"

namespace tilesmith::proposers::detail {
namespace {

TEST(ProposerForest, FitsAndGeneralises) {
  std::mt19937_64 rng(1);
  const int d = 4;
  std::vector<float> x;
  std::vector<double> y;
  // Distinct points on a grid of a function of two features (two are noise).
  for (int a = 0; a < 6; ++a)
    for (int b = 0; b < 6; ++b)
      for (int c = 0; c < 3; ++c) {
        x.insert(x.end(), {float(a), float(b), float(c), float(rng() % 5)});
        y.push_back(2.0 * a + std::abs(b - 3.0));
      }
  ForestOptions single;
  single.trees = 1;
  single.bootstrap = false;
  single.feature_fraction = 1;
  Forest exact;
  exact.fit(x, d, y, single, 7);
  for (size_t i = 0; i < y.size(); ++i) {
    double m, s;
    exact.predict(&x[i * d], &m, &s);
    EXPECT_NEAR(m, y[i], 1e-9);  // one unpruned tree interpolates distinct training points
    EXPECT_EQ(s, 0.0);
  }
  Forest forest;
  forest.fit(x, d, y, ForestOptions{}, 7);
  EXPECT_EQ(forest.tree_count(), ForestOptions{}.trees);
  double err = 0;
  int n = 0;
  for (float a = 0.5f; a < 5; a += 1)
    for (float b = 0.5f; b < 5; b += 1) {
      const float row[] = {a, b, 1, 2};
      double m, s;
      forest.predict(row, &m, &s);
      err += std::pow(m - (2.0 * a + std::abs(b - 3.0)), 2);
      ++n;
    }
  EXPECT_LT(std::sqrt(err / n), 1.5) << "between grid points the forest stays close";
  // Same seed, same model.
  Forest again;
  again.fit(x, d, y, ForestOptions{}, 7);
  const float row[] = {2.5f, 1.5f, 0, 0};
  double m1, s1, m2, s2;
  forest.predict(row, &m1, &s1);
  again.predict(row, &m2, &s2);
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(s1, s2);
  EXPECT_GT(s1, 0.0);
}

TEST(ProposerForest, ManyDistinctValuesUseQuantileBins) {
  std::vector<float> x;
  std::vector<double> y;
  for (int i = 0; i < 2000; ++i) {
    x.push_back(float(i) * 0.37f);
    y.push_back(x.back() < 300 ? 1.0 : 5.0);
  }
  ForestOptions o;
  o.trees = 8;
  Forest f;
  f.fit(x, 1, y, o, 3);
  for (float v : {10.0f, 280.0f, 320.0f, 700.0f}) {  // bins are about 3 wide here
    double m, s;
    f.predict(&v, &m, &s);
    EXPECT_NEAR(m, v < 300 ? 1.0 : 5.0, 0.5) << v;
  }
}

// The process's mean and deviation at each row.
struct Predictions {
  std::vector<double> mean, sd;
};
Predictions predict_rows(const GaussianProcess& gp, const std::vector<std::vector<float>>& rows) {
  std::vector<const float*> pointers;
  for (const auto& r : rows) pointers.push_back(r.data());
  Predictions p{std::vector<double>(rows.size()), std::vector<double>(rows.size())};
  gp.predict(pointers.data(), rows.size(), p.mean.data(), p.sd.data());
  return p;
}

// A smooth function of the first of three features, the second adds a little, the third
// nothing: the fit must interpolate what it saw, predict between grid points, be sure
// near the data and unsure far from it, and weigh the features by what they explain.
TEST(ProposerGaussianProcess, FitsRelevanceAndUncertainty) {
  std::vector<float> x;
  std::vector<double> y;
  auto f = [](double a, double b) { return std::sin(3 * a) + 0.3 * b; };
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> noise_feature(0, 1);
  for (int i = 0; i <= 8; ++i)
    for (int j = 0; j <= 2; ++j) {
      const double a = i / 8.0, b = j / 2.0;
      // Two padding values per row: the model must read only `features` of `stride`.
      x.insert(x.end(), {float(a), float(b), float(noise_feature(rng)), 99.0f, -99.0f});
      y.push_back(f(a, b));
    }
  GaussianProcess gp;
  EXPECT_FALSE(gp.fitted());
  gp.fit(x, 5, 3, y, GaussianProcessOptions{});
  ASSERT_TRUE(gp.fitted());
  ASSERT_EQ(gp.length_scales().size(), 3u);
  // The irrelevant feature's length scale is far longer than that of the one that
  // shapes the target (the small linear term of the second may also be fitted by a long
  // length scale and a large amplitude, so it is checked through predictions below).
  EXPECT_GT(gp.length_scales()[2], 3 * gp.length_scales()[0]);

  const std::vector<std::vector<float>> rows = {
      {0.5f, 0.5f, 0.3f}, {0.4375f, 0.0f, 0.9f}, {0.8125f, 1.0f, 0.1f}, {3.0f, 3.0f, 0.5f}};
  const Predictions at = predict_rows(gp, rows);
  EXPECT_NEAR(at.mean[0], f(0.5, 0.5), 0.02);     // a training point
  EXPECT_NEAR(at.mean[1], f(0.4375, 0.0), 0.05);  // between grid points
  EXPECT_NEAR(at.mean[2], f(0.8125, 1.0), 0.05);
  EXPECT_LT(at.sd[0], 0.05);
  EXPECT_GT(at.sd[3], 10 * at.sd[0]);             // far from every training point

  // The second feature moves the prediction by its 0.3, the third not at all.
  const Predictions probe = predict_rows(
      gp, {{0.3f, 0.0f, 0.5f}, {0.3f, 1.0f, 0.5f}, {0.3f, 0.5f, 0.0f}, {0.3f, 0.5f, 1.0f}});
  EXPECT_NEAR(probe.mean[1] - probe.mean[0], 0.3, 0.05);
  EXPECT_NEAR(probe.mean[3] - probe.mean[2], 0.0, 0.02);

  // Deterministic: the same data give the same model.
  GaussianProcess again;
  again.fit(x, 5, 3, y, GaussianProcessOptions{});
  const Predictions at_again = predict_rows(again, rows);
  EXPECT_EQ(at.mean, at_again.mean);
  EXPECT_EQ(at.sd, at_again.sd);
}

// Repeated rows and constant targets: the factorisation must still hold and the
// prediction be the constant.
TEST(ProposerGaussianProcess, DuplicateRowsAndConstantTargets) {
  std::vector<float> x = {0.5f, 0.5f, 0.5f, 0.5f, 1.0f, 0.0f};
  std::vector<double> y = {2.0, 2.0, 2.0};
  GaussianProcess gp;
  gp.fit(x, 2, 2, y, GaussianProcessOptions{});
  const float row[] = {0.25f, 0.75f};
  const float* rows[] = {row};
  double m = 0, s = -1;
  gp.predict(rows, 1, &m, &s);
  EXPECT_NEAR(m, 2.0, 1e-9);
  EXPECT_GE(s, 0.0);
  EXPECT_TRUE(std::isfinite(s));
}

// Many rows, hyperparameters from a subset of them: the posterior still uses every row
// (it interpolates rows the subset left out), the mean alone equals predict()'s, and no
// deviation exceeds the prior's (evolve's picks rely on that bound).
TEST(ProposerGaussianProcess, SubsetFitMeanOnlyAndPriorBound) {
  std::vector<float> x;
  std::vector<double> y;
  auto f = [](double a, double b) { return std::sin(4 * a) * std::cos(2 * b); };
  for (int i = 0; i < 15; ++i)
    for (int j = 0; j < 15; ++j) {
      x.insert(x.end(), {float(i / 14.0), float(j / 14.0)});
      y.push_back(f(i / 14.0, j / 14.0));
    }
  GaussianProcessOptions options;
  options.max_fit_rows = 40;  // of 225
  GaussianProcess gp;
  gp.fit(x, 2, 2, y, options);
  ASSERT_TRUE(gp.fitted());
  std::vector<const float*> rows;
  for (size_t r = 0; r < y.size(); ++r) rows.push_back(x.data() + 2 * r);
  const std::vector<float> far = {5.0f, -5.0f};
  rows.push_back(far.data());
  std::vector<double> mean(rows.size()), sd(rows.size()), mean_only(rows.size());
  gp.predict(rows.data(), rows.size(), mean.data(), sd.data());
  gp.predict_mean(rows.data(), rows.size(), mean_only.data());
  double worst = 0;
  for (size_t r = 0; r < y.size(); ++r) worst = std::max(worst, std::abs(mean[r] - y[r]));
  EXPECT_LT(worst, 0.02);
  for (size_t r = 0; r < rows.size(); ++r) {
    EXPECT_NEAR(mean_only[r], mean[r], 1e-9) << r;
    EXPECT_LE(sd[r], gp.prior_stddev() * (1 + 1e-12)) << r;
  }
  EXPECT_NEAR(sd.back(), gp.prior_stddev(), 0.01 * gp.prior_stddev());  // far from everything
}

TEST(ProposerSpaceView, EnumeratesEncodesAndFindsNeighbours) {
  auto space = ParamSpace::from_json(nlohmann::json::parse(R"js({
    "parameters": [{"name": "A", "values": [64, 16, 32]}, {"name": "B", "values": [1, 2, 4]},
                   {"name": "F", "values": [0, 1]}, {"name": "C", "values": [7]}],
    "constraints": ["A % (B * 8) == 0"]})js"));
  ASSERT_TRUE(space.ok());
  auto view = SpaceView::build(*space, {});
  ASSERT_TRUE(view->enumerated());
  EXPECT_EQ(view->points(), space->enumerate_valid({}));
  EXPECT_EQ(view->active(), (std::vector<size_t>{0, 1, 2}));
  // 3 ranks + one pair (A, B: both positive, several values) as log-sum and log-difference.
  ASSERT_EQ(view->feature_count(), 5);
  std::vector<float> f(5);
  view->encode({32, 4, 1, 7}, f.data());
  EXPECT_FLOAT_EQ(f[0], 0.5f);  // 32 is the middle of the sorted domain 16, 32, 64
  EXPECT_FLOAT_EQ(f[1], 1.0f);
  EXPECT_FLOAT_EQ(f[2], 1.0f);
  EXPECT_FLOAT_EQ(f[3], 7.0f);  // log2(32 * 4)
  EXPECT_FLOAT_EQ(f[4], 3.0f);  // log2(32 / 4)
  const std::int64_t idx = view->index_of({32, 4, 1, 7});
  ASSERT_GE(idx, 0);
  for (int k = 0; k < 5; ++k)
    EXPECT_EQ(view->encoded(static_cast<size_t>(idx))[k], f[static_cast<size_t>(k)]);
  EXPECT_EQ(view->index_of({16, 4, 1, 7}), -1);  // 16 % 32 != 0
  std::vector<PointValues> nb;
  view->neighbours({32, 2, 0, 7}, false, &nb);
  // A: 16 fails (16 % 16 == 0 is fine), 64 ok; B: 1 ok, 4 ok (32 % 32); F: 1.
  std::set<PointValues> got(nb.begin(), nb.end());
  EXPECT_EQ(got, (std::set<PointValues>{
                     {16, 2, 0, 7}, {64, 2, 0, 7}, {32, 1, 0, 7}, {32, 4, 0, 7}, {32, 2, 1, 7}}));
  nb.clear();
  view->neighbours({16, 1, 0, 7}, true, &nb);  // adjacent ranks only: A 32, B 2 (16 % 16 ok), F 1
  EXPECT_EQ(std::set<PointValues>(nb.begin(), nb.end()),
            (std::set<PointValues>{{32, 1, 0, 7}, {16, 2, 0, 7}, {16, 1, 1, 7}}));
  EXPECT_EQ(SpaceView::hamming({1, 2, 3}, {1, 5, 4}), 2);
}

TEST(ProposerSpaceView, SamplesLargeSpaces) {
  nlohmann::json j = nlohmann::json::parse(
      R"js({"parameters": [], "constraints": ["A * B * C * D * E * F * G * H > 4000000"]})js");
  for (const char* n : {"A", "B", "C", "D", "E", "F", "G", "H"})
    j["parameters"].push_back({{"name", n}, {"values", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}});
  auto space = ParamSpace::from_json(j);
  ASSERT_TRUE(space.ok());
  auto view = SpaceView::build(*space, {});
  EXPECT_FALSE(view->enumerated());  // 12^8 = 430M points
  std::mt19937_64 rng(5);
  std::set<PointValues> seen;
  for (int i = 0; i < 50; ++i) {
    auto p = view->sample(rng);
    ASSERT_TRUE(p.has_value());
    EXPECT_TRUE(space->is_valid(*p, {}));
    seen.insert(*p);
  }
  EXPECT_GT(seen.size(), 40u);
}

TEST(ProposerConvergence, ProbabilityThatNoUntriedPointIsBetter) {
  std::vector<double> mu, sd;
  ConvergenceInputs in;
  in.mean = &mu;
  in.stddev = &sd;
  in.threshold = 0.0;
  EXPECT_EQ(probability_none_better(in), 1.0) << "nothing untried";
  mu = {1.0, 2.0};
  sd = {0.0, 0.0};
  EXPECT_EQ(probability_none_better(in), 1.0) << "sure and slower";
  mu = {1.0, -0.1};
  EXPECT_EQ(probability_none_better(in), 0.0) << "sure and faster";
  // One point one standard deviation above the threshold: P(better) = Phi(-1) = 0.1587.
  mu = {1.0};
  sd = {1.0};
  EXPECT_NEAR(probability_none_better(in), 1 - 0.158655, 1e-5);
  // Two such points multiply; a quarter of the space scored stands for all of it.
  mu = {1.0, 1.0};
  sd = {1.0, 1.0};
  EXPECT_NEAR(probability_none_better(in), std::pow(1 - 0.158655, 2), 1e-5);
  in.coverage = 4;
  EXPECT_NEAR(probability_none_better(in), std::pow(1 - 0.158655, 8), 1e-5);
  // A wider spread makes a slower point more likely to be better.
  in.coverage = 1;
  mu = {1.0};
  sd = {1.0};
  in.spread_scale = 2;
  EXPECT_NEAR(probability_none_better(in), 1 - 0.308538, 1e-5);
}

TEST(ProposerEffects, FindsParametersWithNoMeasuredEffect) {
  auto space = ParamSpace::from_json(nlohmann::json::parse(R"js({
    "parameters": [{"name": "A", "values": [1, 2, 4]}, {"name": "G", "values": [1, 4, 8]},
                   {"name": "C", "values": [7]}]})js"));
  ASSERT_TRUE(space.ok());
  auto view = SpaceView::build(*space, {});
  // Time depends on A alone; G moves it by noise (0.1-0.2%); one failure is ignored.
  auto obs = [](std::int64_t a, std::int64_t g, double ms, bool ok = true) {
    return Observation{{a, g, 7}, ok, ok ? ms : 0.0};
  };
  std::vector<Observation> history = {obs(1, 1, 10.0),  obs(1, 4, 10.02), obs(2, 4, 5.0),
                                      obs(2, 8, 5.005), obs(4, 8, 8.0),   obs(4, 1, 0, false)};
  ParameterEffects e = one_parameter_effects(*view, history);
  ASSERT_EQ(e.pairs.size(), 3u);
  EXPECT_EQ(e.pairs[0], 2);  // (1,4)-(2,4) and (2,8)-(4,8)
  EXPECT_NEAR(e.mean_abs_log[0], 0.5 * (std::log(10.02 / 5.0) + std::log(8.0 / 5.005)), 1e-9);
  EXPECT_EQ(e.pairs[1], 2);  // (1,1)-(1,4) and (2,4)-(2,8)
  EXPECT_NEAR(e.mean_abs_log[1], 0.5 * (std::log(10.02 / 10.0) + std::log(5.005 / 5.0)), 1e-9);
  EXPECT_EQ(e.pairs[2], 0);  // C has one value
  EXPECT_EQ(no_effect_mask(e, 2, 0.01), (std::vector<char>{0, 1, 0}));
  EXPECT_EQ(no_effect_mask(e, 3, 0.01), (std::vector<char>{0, 0, 0})) << "too few pairs";
  EXPECT_EQ(no_effect_mask(e, 2, 0.001), (std::vector<char>{0, 0, 0})) << "beyond the tolerance";
  EXPECT_NEAR(e.max_abs_log[1], std::log(10.02 / 10.0), 1e-9);
  EXPECT_EQ(no_effect_mask(e, 2, 0.0017, /*use_max=*/false), (std::vector<char>{0, 1, 0}));
  EXPECT_EQ(no_effect_mask(e, 2, 0.0017, /*use_max=*/true), (std::vector<char>{0, 0, 0}));
  // A repeated measurement is averaged, not paired with itself.
  history.push_back(obs(1, 1, 10.04));
  e = one_parameter_effects(*view, history);
  EXPECT_EQ(e.pairs[1], 2);
  const std::vector<char> mask = {0, 1, 0};
  EXPECT_EQ(projection_hash({1, 1, 7}, mask), projection_hash({1, 8, 7}, mask));
  EXPECT_NE(projection_hash({1, 1, 7}, mask), projection_hash({2, 1, 7}, mask));
  EXPECT_EQ(masked_hamming({1, 1, 7}, {2, 8, 7}, mask), 1);
  EXPECT_EQ(masked_hamming({1, 1, 7}, {2, 8, 7}, {0, 0, 0}), 2);
}

}  // namespace
}  // namespace tilesmith::proposers::detail
