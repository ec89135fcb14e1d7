#include "tuner/search/detail/gaussian_process.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <Eigen/Dense>
#include <LBFGSB.h>

namespace tilesmith::proposers::detail {

struct GaussianProcess::State {
  Eigen::MatrixXd scaled;    // training rows over the length scales, rows x features
  Eigen::VectorXd scaled2;   // their squared norms
  Eigen::VectorXd alpha;     // K^-1 (y - mean) / scale
  Eigen::MatrixXd chol;      // lower Cholesky factor of K
};
namespace {

constexpr double kSqrt5 = 2.23606797749978969640;

// Matern 5/2 at length-scaled distances r (element-wise), unit amplitude, and the factor
// that turns a squared per-feature difference over length^2 into the kernel's derivative
// by log(length): dk/dlog(l_f) = amplitude * slope(r) * (dx_f / l_f)^2.
Eigen::ArrayXXd matern52(const Eigen::ArrayXXd& r) {
  return (1.0 + kSqrt5 * r + (5.0 / 3.0) * r.square()) * (-kSqrt5 * r).exp();
}
Eigen::ArrayXXd matern52_slope(const Eigen::ArrayXXd& r) {
  return (5.0 / 3.0) * (1.0 + kSqrt5 * r) * (-kSqrt5 * r).exp();
}

// The kernel between length-scaled training rows (n x features, squared norms `scaled2`)
// and length-scaled query columns (features x m): n x m. Squared distances as
// |a|^2 + |b|^2 - 2 a.b: one matrix product and vectorised element-wise work instead of
// a loop per pair (most of a proposal's time on spaces of tens of thousands of candidates).
Eigen::MatrixXd kernel(const Eigen::MatrixXd& scaled, const Eigen::VectorXd& scaled2,
                       const Eigen::MatrixXd& query, double amplitude) {
  Eigen::MatrixXd d2 = -2.0 * (scaled * query);
  d2.colwise() += scaled2;
  d2.rowwise() += query.colwise().squaredNorm();
  return (amplitude * matern52(d2.array().max(0.0).sqrt())).matrix();
}

// The negative log marginal likelihood of standardised targets and its gradient by the
// log hyperparameters [log l_1 .. log l_F, log amplitude, log noise].
class NegativeLogLikelihood {
 public:
  NegativeLogLikelihood(const Eigen::MatrixXd& x, const Eigen::VectorXd& y) : y_(y) {
    const auto n = x.rows();
    diff2_.resize(static_cast<size_t>(x.cols()));
    for (Eigen::Index f = 0; f < x.cols(); ++f) {
      Eigen::MatrixXd& d = diff2_[static_cast<size_t>(f)];
      d.resize(n, n);
      for (Eigen::Index j = 0; j < n; ++j)
        for (Eigen::Index i = 0; i < n; ++i) {
          const double dx = x(i, f) - x(j, f);
          d(i, j) = dx * dx;
        }
    }
  }

  double operator()(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
    const auto n = y_.size();
    const auto features = static_cast<Eigen::Index>(diff2_.size());
    Eigen::MatrixXd scaled2 = Eigen::MatrixXd::Zero(n, n);
    for (Eigen::Index f = 0; f < features; ++f)
      scaled2 += diff2_[static_cast<size_t>(f)] * std::exp(-2 * theta[f]);
    const double amplitude = std::exp(theta[features]);
    const double noise = std::exp(theta[features + 1]);
    const Eigen::ArrayXXd r = scaled2.array().sqrt();
    const Eigen::MatrixXd signal = (amplitude * matern52(r)).matrix();
    const Eigen::MatrixXd slope = (amplitude * matern52_slope(r)).matrix();
    Eigen::MatrixXd k = signal;
    k.diagonal().array() += noise;
    Eigen::LLT<Eigen::MatrixXd> llt(k);
    if (llt.info() != Eigen::Success) {
      // Not positive definite at these hyperparameters: steer the line search away.
      grad.setZero();
      return 1e30;
    }
    const Eigen::VectorXd alpha = llt.solve(y_);
    const Eigen::MatrixXd inverse = llt.solve(Eigen::MatrixXd::Identity(n, n));
    const Eigen::MatrixXd w = alpha * alpha.transpose() - inverse;
    const Eigen::MatrixXd l = llt.matrixL();
    const double value = 0.5 * y_.dot(alpha) + l.diagonal().array().log().sum() +
                         0.5 * double(n) * std::log(2 * M_PI);
    const Eigen::MatrixXd ws = w.cwiseProduct(slope);
    for (Eigen::Index f = 0; f < features; ++f)
      grad[f] = -0.5 * ws.cwiseProduct(diff2_[static_cast<size_t>(f)]).sum() * std::exp(-2 * theta[f]);
    grad[features] = -0.5 * w.cwiseProduct(signal).sum();
    grad[features + 1] = -0.5 * noise * w.trace();
    if (value < best_value_) {
      best_value_ = value;
      best_theta_ = theta;
    }
    return value;
  }

  // The best point seen, also when the optimiser stopped on an exception.
  const Eigen::VectorXd& best_theta() const { return best_theta_; }
  bool any() const { return best_theta_.size() > 0; }

 private:
  Eigen::VectorXd y_;
  std::vector<Eigen::MatrixXd> diff2_;
  double best_value_ = std::numeric_limits<double>::infinity();
  Eigen::VectorXd best_theta_;
};

}  // namespace

void GaussianProcess::fit(const std::vector<float>& x, int stride, int features,
                          const std::vector<double>& y, const GaussianProcessOptions& options) {
  const auto n = static_cast<Eigen::Index>(y.size());
  auto state = std::make_shared<State>();
  Eigen::MatrixXd all_x(n, features);
  for (Eigen::Index i = 0; i < n; ++i)
    for (int f = 0; f < features; ++f) all_x(i, f) = x[static_cast<size_t>(i) * stride + f];
  Eigen::VectorXd target(n);
  for (Eigen::Index i = 0; i < n; ++i) target[i] = y[static_cast<size_t>(i)];
  y_mean_ = target.mean();
  const double var = n > 1 ? (target.array() - y_mean_).square().sum() / double(n) : 0.0;
  y_scale_ = var > 1e-24 ? std::sqrt(var) : 1.0;
  target = (target.array() - y_mean_) / y_scale_;

  // Hyperparameters in log space within their bounds.
  const Eigen::Index p = features + 2;
  Eigen::VectorXd theta(p), lower(p), upper(p);
  for (int f = 0; f < features; ++f) {
    theta[f] = std::log(options.initial_length);
    lower[f] = std::log(options.min_length);
    upper[f] = std::log(options.max_length);
  }
  theta[features] = 0;
  lower[features] = std::log(options.min_amplitude);
  upper[features] = std::log(options.max_amplitude);
  theta[features + 1] = std::log(1e-2);
  lower[features + 1] = std::log(options.min_noise);
  upper[features + 1] = std::log(options.max_noise);
  theta = theta.cwiseMax(lower).cwiseMin(upper);

  // The hyperparameters from at most max_fit_rows rows (each likelihood evaluation is a
  // factorisation and inverse, cubic in the rows): the best half by target, the rest
  // spread evenly over the others in history order. The posterior below uses every row.
  Eigen::MatrixXd fit_x = all_x;
  Eigen::VectorXd fit_y = target;
  if (options.max_fit_rows > 1 && n > options.max_fit_rows) {
    std::vector<Eigen::Index> order(static_cast<size_t>(n));
    for (Eigen::Index i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](Eigen::Index a, Eigen::Index b) { return target[a] < target[b]; });
    const Eigen::Index best = options.max_fit_rows / 2;
    std::vector<Eigen::Index> rest(order.begin() + best, order.end());
    std::sort(rest.begin(), rest.end());
    std::vector<Eigen::Index> rows(order.begin(), order.begin() + best);
    const Eigen::Index spread = options.max_fit_rows - best;
    for (Eigen::Index k = 0; k < spread; ++k)
      rows.push_back(rest[static_cast<size_t>(k * static_cast<Eigen::Index>(rest.size()) / spread)]);
    fit_x.resize(options.max_fit_rows, features);
    fit_y.resize(options.max_fit_rows);
    for (Eigen::Index r = 0; r < options.max_fit_rows; ++r) {
      fit_x.row(r) = all_x.row(rows[static_cast<size_t>(r)]);
      fit_y[r] = target[rows[static_cast<size_t>(r)]];
    }
  }
  NegativeLogLikelihood objective(fit_x, fit_y);
  if (n > 1 && options.max_iterations > 0) {
    LBFGSpp::LBFGSBParam<double> param;
    param.max_iterations = options.max_iterations;
    param.epsilon = 1e-4;
    param.epsilon_rel = 1e-4;
    LBFGSpp::LBFGSBSolver<double> solver(param);
    double value = 0;
    Eigen::VectorXd start = theta;
    try {
      solver.minimize(objective, start, value, lower, upper);
    } catch (const std::exception&) {
      // A line search that gives up still leaves the best point evaluated.
    }
    if (objective.any()) theta = objective.best_theta();
  }
  length_.assign(static_cast<size_t>(features), 0);
  for (int f = 0; f < features; ++f) length_[static_cast<size_t>(f)] = std::exp(theta[f]);
  amplitude_ = std::exp(theta[features]);
  noise_ = std::exp(theta[features + 1]);

  state->scaled = all_x;
  for (int f = 0; f < features; ++f) state->scaled.col(f) /= length_[static_cast<size_t>(f)];
  state->scaled2 = state->scaled.rowwise().squaredNorm();
  const Eigen::MatrixXd k = kernel(state->scaled, state->scaled2, state->scaled.transpose(), amplitude_);
  // Noise plus a little jitter until the factorisation holds (duplicate rows).
  for (double jitter = 0;; jitter = jitter == 0 ? 1e-8 : jitter * 10) {
    Eigen::MatrixXd kn = k;
    kn.diagonal().array() += noise_ + jitter;
    Eigen::LLT<Eigen::MatrixXd> llt(kn);
    if (llt.info() == Eigen::Success || jitter > 1) {
      state->chol = llt.matrixL();
      state->alpha = llt.solve(target);
      break;
    }
  }
  state_ = std::move(state);
}

namespace {

constexpr size_t kPredictBlock = 1024;

// Rows [start, start + m) of `rows` over the length scales, one per column.
Eigen::MatrixXd scaled_query(const float* const* rows, size_t start, Eigen::Index m,
                             const std::vector<double>& length) {
  const auto features = static_cast<Eigen::Index>(length.size());
  Eigen::MatrixXd query(features, m);
  for (Eigen::Index c = 0; c < m; ++c)
    for (Eigen::Index f = 0; f < features; ++f)
      query(f, c) = double(rows[start + static_cast<size_t>(c)][f]) / length[static_cast<size_t>(f)];
  return query;
}

}  // namespace

void GaussianProcess::predict_mean(const float* const* rows, size_t count, double* mean) const {
  Eigen::MatrixXd cross;
  for (size_t start = 0; start < count; start += kPredictBlock) {
    const auto m = static_cast<Eigen::Index>(std::min(kPredictBlock, count - start));
    cross = kernel(state_->scaled, state_->scaled2, scaled_query(rows, start, m, length_), amplitude_);
    const Eigen::VectorXd mu = cross.transpose() * state_->alpha;
    for (Eigen::Index c = 0; c < m; ++c) mean[start + static_cast<size_t>(c)] = y_mean_ + y_scale_ * mu[c];
  }
}

void GaussianProcess::predict(const float* const* rows, size_t count, double* mean,
                              double* stddev) const {
  Eigen::MatrixXd cross;
  for (size_t start = 0; start < count; start += kPredictBlock) {
    const auto m = static_cast<Eigen::Index>(std::min(kPredictBlock, count - start));
    cross = kernel(state_->scaled, state_->scaled2, scaled_query(rows, start, m, length_), amplitude_);
    const Eigen::VectorXd mu = cross.transpose() * state_->alpha;
    state_->chol.triangularView<Eigen::Lower>().solveInPlace(cross);
    const Eigen::VectorXd explained = cross.colwise().squaredNorm().transpose();
    for (Eigen::Index c = 0; c < m; ++c) {
      const size_t o = start + static_cast<size_t>(c);
      mean[o] = y_mean_ + y_scale_ * mu[c];
      stddev[o] = y_scale_ * std::sqrt(std::max(0.0, amplitude_ - explained[c]));
    }
  }
}

}  // namespace tilesmith::proposers::detail
