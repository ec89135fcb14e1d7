#pragma once
// A Gaussian-process regressor for surrogate models: a Matern 5/2 kernel with one length
// scale per feature (automatic relevance determination), a signal amplitude and a noise
// level, fitted by maximising the log marginal likelihood (bounded L-BFGS, LBFGS++ on
// Eigen). The targets are standardised before the fit.
//
// Why beside the forest: a forest learns which parameters matter only where it splits,
// and with a few dozen measurements it splits on whatever separates them; the fitted
// length scales weigh every parameter by how much it explains, so a parameter that does
// nothing (GROUP_M with one block row) stops shaping the predictions after a few
// measurements, and a two-parameter interaction one measurement shows is spread to its
// neighbours smoothly (docs/search.md, "Fourth pass").
//
// Deterministic for given data. fit() is not thread-safe; predict*() are const and
// thread-safe. Sized for up to a few hundred training rows and tens of features.

#include <cmath>
#include <memory>
#include <vector>

namespace tilesmith::proposers::detail {

struct GaussianProcessOptions {
  double min_length = 0.05, max_length = 20;        // per feature, features in [0, 1]
  double min_amplitude = 1e-2, max_amplitude = 1e2;  // signal variance, standardised targets
  double min_noise = 1e-5, max_noise = 1e-1;         // noise variance, standardised targets
  double initial_length = 0.5;
  int max_iterations = 60;  // L-BFGS iterations of the hyperparameter fit
  // Rows the hyperparameters are fitted on (the best half and a spread of the rest; 0:
  // all); the posterior always uses every row.
  int max_fit_rows = 96;
};

class GaussianProcess {
 public:
  // x: rows * stride values, row-major; the model reads the first `features` of each row.
  // y: one target per row; rows >= 1.
  void fit(const std::vector<float>& x, int stride, int features, const std::vector<double>& y,
           const GaussianProcessOptions& options);
  bool fitted() const { return state_ != nullptr; }
  // Posterior mean and standard deviation (of the noise-free function) at each of
  // `count` rows (the first `features` values of each are read).
  void predict(const float* const* rows, size_t count, double* mean, double* stddev) const;
  // The same mean without the standard deviation, at a fraction of the cost (the
  // deviation is a triangular solve against the history per row).
  void predict_mean(const float* const* rows, size_t count, double* mean) const;
  // The prior standard deviation: no posterior deviation exceeds it, so expected
  // improvement at it bounds every row's from above.
  double prior_stddev() const { return y_scale_ * std::sqrt(amplitude_); }
  const std::vector<double>& length_scales() const { return length_; }
  double noise() const { return noise_; }

 private:
  struct State;  // the training rows and the factorised kernel (Eigen, in the .cpp)
  std::shared_ptr<const State> state_;
  std::vector<double> length_;  // per feature
  double amplitude_ = 1, noise_ = 1e-2, y_mean_ = 0, y_scale_ = 1;
};

}  // namespace tilesmith::proposers::detail
