#pragma once
// The evolve proposer's surrogate: the random forest and the Gaussian process fitted on
// the history, and their predictions at candidates. One model leads (its mean and
// deviation rank every candidate); the other, when asked for, makes a few picks of its
// own (EvolveOptions::second_picks), because the two see different things: the forest
// splits on whatever separates the measurements so far, the process spreads what one
// measurement shows about a pair of parameters to their neighbours (docs/search.md,
// "Fourth pass").
//
// What the models learn: log(score) of every success, clipped at a quantile of all the
// successes (the models' job is to tell good configurations apart, not bad ones), and
// every failure failure_penalty above the clip, so they steer away from failures and
// their neighbourhood. Each is fitted on at most its bound of rows
// (detail/training_rows.h), so a fit costs about the same at 20,000 rows of history as
// at 500 (docs/search.md, "Proposal cost").
//
// Generic and deterministic for given data and seed. fit() is not thread-safe; the
// predictions are const.

#include <cstddef>
#include <random>
#include <vector>

#include "tuner/search/detail/forest.h"
#include "tuner/search/detail/gaussian_process.h"
#include "tuner/search/detail/space_view.h"

namespace tilesmith::proposers::detail {

// The history as the models read it (HistoryIndex gives it; tests build it by hand).
struct TrainingData {
  const std::vector<Observation>* observations = nullptr;  // history order
  // Indices of the successes, best (lowest score) first; at least one.
  const std::vector<size_t>* best_first = nullptr;
  // observations->size() rows of `stride` features, row-major. The first `ranks` of each
  // row are the parameters' normalised ranks: all the Gaussian process reads.
  const float* features = nullptr;
  int stride = 0;
  int ranks = 0;
};

struct SurrogateOptions {
  bool process_leads = false;  // the Gaussian process leads; else the forest
  bool second = true;          // fit the other model too (for its picks)
  ForestOptions forest;
  GaussianProcessOptions gaussian_process;
  double clip_quantile = 0.5;     // the forest's clip (1: none)
  double gp_clip_quantile = 1.0;  // the process's
  double failure_penalty = 0.7;   // log units above the clip
  // Rows each model is fitted on, at most (0: all), and the subset's shares.
  size_t max_forest_rows = 500;
  size_t max_process_rows = 300;
  double best_share = 0.4;
  double recent_share = 0.2;
};

class SurrogateModels {
 public:
  // Fits the models the options ask for: the process first, then the forest with one
  // draw of rng (only when the forest is fitted), so a caller's later draws are the
  // same whatever the process does.
  void fit(const TrainingData& data, const SurrogateOptions& options, std::mt19937_64& rng);

  // log(score) of the best success: what expected improvement is measured against.
  double best() const { return best_; }
  bool process_leads() const { return options_.process_leads; }
  bool has_second() const { return options_.second; }

  // The leading model's mean and standard deviation (log units) at each of n rows.
  void predict(const float* const* rows, size_t n, double* mean, double* stddev) const;
  // The forest's trees one by one (Thompson sampling): tree_count() values per row into
  // per_tree, and their mean and standard deviation.
  void predict_trees(const float* const* rows, size_t n, double* per_tree, double* mean,
                     double* stddev) const;
  int tree_count() const { return forest_.tree_count(); }

  // The second model's mean at each row, and a deviation: exact when the second model is
  // the forest (cheap); when it is the Gaussian process, its prior deviation, which bounds
  // every posterior deviation from above (the exact one costs a triangular solve against
  // the training rows per candidate: second_stddev() computes it where it matters).
  // Returns whether the deviations are exact.
  bool predict_second(const float* const* rows, size_t n, double* mean, double* stddev) const;
  // The second model's exact deviation at n rows.
  void second_stddev(const float* const* rows, size_t n, double* stddev) const;

  const Forest& forest() const { return forest_; }
  const GaussianProcess& process() const { return process_; }
  // The last fit: rows each model saw (0: not fitted) and the time each took (ms).
  size_t forest_rows() const { return forest_rows_; }
  size_t process_rows() const { return process_rows_; }
  double forest_fit_ms() const { return forest_ms_; }
  double process_fit_ms() const { return process_ms_; }

 private:
  SurrogateOptions options_;
  Forest forest_;
  GaussianProcess process_;
  double best_ = 0;
  size_t forest_rows_ = 0, process_rows_ = 0;
  double forest_ms_ = 0, process_ms_ = 0;
};

}  // namespace tilesmith::proposers::detail
