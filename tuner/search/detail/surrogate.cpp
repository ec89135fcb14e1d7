#include "tuner/search/detail/surrogate.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "tuner/search/detail/training_rows.h"

namespace tilesmith::proposers::detail {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

void SurrogateModels::fit(const TrainingData& data, const SurrogateOptions& options,
                          std::mt19937_64& rng) {
  options_ = options;
  forest_ = Forest();
  process_ = GaussianProcess();
  forest_rows_ = process_rows_ = 0;
  forest_ms_ = process_ms_ = 0;
  const std::vector<Observation>& observations = *data.observations;
  const std::vector<size_t>& ok_order = *data.best_first;
  const size_t stride = static_cast<size_t>(data.stride);
  best_ = std::log(observations[ok_order.front()].score);
  auto bound = [&](size_t max_rows) {
    return TrainingBound{max_rows, options.best_share, options.recent_share};
  };
  // Features of the chosen rows, row-major (stride per row).
  auto features_of = [&](const std::vector<size_t>& rows) {
    std::vector<float> x(rows.size() * stride);
    for (size_t r = 0; r < rows.size(); ++r)
      std::copy_n(data.features + rows[r] * stride, stride, x.data() + r * stride);
    return x;
  };
  // Targets: log(score) of every success, clipped at a quantile of all the successes
  // (1: the slowest), so the subset's clip is the whole history's; failures
  // failure_penalty above the clip.
  auto targets = [&](const std::vector<size_t>& rows, double clip_quantile) {
    const size_t k = clip_quantile < 1.0
                         ? static_cast<size_t>(clip_quantile * double(ok_order.size() - 1))
                         : ok_order.size() - 1;
    const double clip = std::log(observations[ok_order[k]].score);
    std::vector<double> y;
    y.reserve(rows.size());
    for (size_t i : rows) {
      const Observation& o = observations[i];
      y.push_back(o.ok ? std::min(std::log(o.score), clip) : clip + options.failure_penalty);
    }
    return y;
  };
  const bool want_forest = !options.process_leads || options.second;
  const bool want_process = options.process_leads || options.second;
  auto t0 = Clock::now();
  if (want_process) {  // on the parameters' ranks, the first features
    const auto rows = training_rows(observations.size(), ok_order, bound(options.max_process_rows));
    process_rows_ = rows.size();
    process_.fit(features_of(rows), data.stride, data.ranks,
                 targets(rows, options.gp_clip_quantile), options.gaussian_process);
  }
  process_ms_ = ms_since(t0);
  t0 = Clock::now();
  if (want_forest) {
    const auto rows = training_rows(observations.size(), ok_order, bound(options.max_forest_rows));
    forest_rows_ = rows.size();
    forest_.fit(features_of(rows), data.stride, targets(rows, options.clip_quantile),
                options.forest, rng());
  }
  forest_ms_ = ms_since(t0);
}

void SurrogateModels::predict(const float* const* rows, size_t n, double* mean,
                              double* stddev) const {
  if (options_.process_leads) {
    process_.predict(rows, n, mean, stddev);
    return;
  }
  for (size_t i = 0; i < n; ++i) forest_.predict(rows[i], &mean[i], &stddev[i]);
}

void SurrogateModels::predict_trees(const float* const* rows, size_t n, double* per_tree,
                                    double* mean, double* stddev) const {
  const int trees = forest_.tree_count();
  for (size_t i = 0; i < n; ++i) {
    double* t = per_tree + i * static_cast<size_t>(trees);
    forest_.predict_trees(rows[i], t);
    double s = 0, s2 = 0;
    for (int k = 0; k < trees; ++k) {
      s += t[k];
      s2 += t[k] * t[k];
    }
    mean[i] = s / trees;
    stddev[i] = std::sqrt(std::max(0.0, s2 / trees - mean[i] * mean[i]));
  }
}

bool SurrogateModels::predict_second(const float* const* rows, size_t n, double* mean,
                                     double* stddev) const {
  if (options_.process_leads) {
    for (size_t i = 0; i < n; ++i) forest_.predict(rows[i], &mean[i], &stddev[i]);
    return true;
  }
  process_.predict_mean(rows, n, mean);
  std::fill(stddev, stddev + n, process_.prior_stddev());
  return false;
}

void SurrogateModels::second_stddev(const float* const* rows, size_t n, double* stddev) const {
  if (options_.process_leads) {
    double mean = 0;
    for (size_t i = 0; i < n; ++i) forest_.predict(rows[i], &mean, &stddev[i]);
    return;
  }
  std::vector<double> mean(n);
  process_.predict(rows, n, mean.data(), stddev);
}

}  // namespace tilesmith::proposers::detail
