#include "tuner/search/detail/acquisition.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tilesmith::proposers::detail {

namespace {

double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

}  // namespace

double expected_improvement(double best, double mean, double sd, double xi) {
  const double improvement = best - mean - xi;
  if (sd <= 1e-12) return std::max(0.0, improvement);
  const double z = improvement / sd;
  return improvement * normal_cdf(z) + sd * normal_pdf(z);
}

const char* Acquisition::second_name() const {
  return models_.process_leads() ? "forest's " : "Gaussian process's ";
}

CandidateScores Acquisition::score(const float* const* rows, size_t n) const {
  CandidateScores s;
  const double best = models_.best();
  const double xi = options_.exploration;
  s.trees = models_.tree_count();
  s.mean.resize(n);
  s.stddev.resize(n);
  if (options_.thompson) {
    s.per_tree.resize(n * static_cast<size_t>(s.trees));
    models_.predict_trees(rows, n, s.per_tree.data(), s.mean.data(), s.stddev.data());
  } else {
    models_.predict(rows, n, s.mean.data(), s.stddev.data());
  }
  s.ei.resize(n);
  for (size_t i = 0; i < n; ++i) s.ei[i] = expected_improvement(best, s.mean[i], s.stddev[i], xi);
  if (models_.has_second()) {
    s.mean2.resize(n);
    s.ei2.resize(n);
    std::vector<double> sd(n);
    const bool exact = models_.predict_second(rows, n, s.mean2.data(), sd.data());
    s.exact2.assign(n, exact ? 1 : 0);
    for (size_t i = 0; i < n; ++i) s.ei2[i] = expected_improvement(best, s.mean2[i], sd[i], xi);
    s.damping2.assign(n, 1.0);
  }
  s.by_mean.resize(n);
  std::iota(s.by_mean.begin(), s.by_mean.end(), size_t{0});
  std::stable_sort(s.by_mean.begin(), s.by_mean.end(),
                   [&](size_t a, size_t b) { return s.mean[a] < s.mean[b]; });
  return s;
}

void Acquisition::damp(CandidateScores* s, size_t j, bool second) const {
  if (!options_.thompson) s->ei[j] *= options_.diversity_penalty;
  if (second) {
    s->ei2[j] *= options_.diversity_penalty;
    s->damping2[j] *= options_.diversity_penalty;
  }
}

void Acquisition::tighten_second(CandidateScores* s, const float* const* rows,
                                 const std::vector<size_t>& which) const {
  std::vector<const float*> chosen;
  chosen.reserve(which.size());
  for (size_t i : which) chosen.push_back(rows[i]);
  std::vector<double> sd(which.size());
  models_.second_stddev(chosen.data(), chosen.size(), sd.data());
  for (size_t k = 0; k < which.size(); ++k) {
    const size_t i = which[k];
    s->ei2[i] = s->damping2[i] *
                expected_improvement(models_.best(), s->mean2[i], sd[k], options_.exploration);
    s->exact2[i] = 1;
  }
}

size_t Acquisition::best_second(CandidateScores* s, const float* const* rows,
                                const std::vector<char>& blocked, bool exploit) const {
  // Exact deviations per round: enough that the leader is usually exact after one, few
  // enough that a round costs a small share of scoring every candidate.
  constexpr size_t kExactBlock = 256;
  const size_t n = s->size();
  const std::vector<double>& mean2 = s->mean2;
  const std::vector<double>& ei2 = s->ei2;
  for (;;) {
    size_t best = n;
    for (size_t i = 0; i < n; ++i) {
      if (blocked[i]) continue;
      if (best == n || (exploit ? mean2[i] < mean2[best] : ei2[i] > ei2[best])) best = i;
    }
    if (best == n || exploit || s->exact2[best]) return best;
    // The leader is a bound: the deviation of the leading bounds, then look again. A
    // candidate whose bound is below an exact score cannot win, so the pick is the one
    // that scoring every candidate would make.
    std::vector<size_t> open;
    for (size_t i = 0; i < n; ++i)
      if (!s->exact2[i] && !blocked[i]) open.push_back(i);
    const size_t k = std::min(kExactBlock, open.size());
    std::partial_sort(open.begin(), open.begin() + static_cast<std::ptrdiff_t>(k), open.end(),
                      [&](size_t a, size_t b) { return ei2[a] > ei2[b] || (ei2[a] == ei2[b] && a < b); });
    open.resize(k);
    tighten_second(s, rows, open);
  }
}

size_t Acquisition::best_ei(const CandidateScores& s, const std::vector<char>& blocked,
                            const std::vector<char>& eligible) const {
  const size_t n = s.size();
  size_t best = n;
  for (size_t i = 0; i < n; ++i) {
    if (blocked[i] || !eligible[i]) continue;
    if (best == n || s.ei[i] > s.ei[best] || (s.ei[i] == s.ei[best] && s.mean[i] < s.mean[best]))
      best = i;
  }
  return best;
}

ThompsonDraw::ThompsonDraw(int trees, double share)
    : order_(static_cast<size_t>(trees)),
      draw_(std::max(1, static_cast<int>(std::lround(share * trees)))) {
  std::iota(order_.begin(), order_.end(), 0);
}

size_t ThompsonDraw::pick(const CandidateScores& s, const std::vector<char>& blocked,
                          const std::vector<char>& eligible, std::mt19937_64& rng) {
  std::shuffle(order_.begin(), order_.end(), rng);
  const size_t n = s.size();
  size_t best = n;
  double best_value = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < n; ++i) {
    if (blocked[i] || !eligible[i]) continue;
    const double* t = s.per_tree.data() + i * static_cast<size_t>(s.trees);
    double v = 0;
    for (int k = 0; k < draw_; ++k) v += t[order_[static_cast<size_t>(k)]];
    if (v < best_value) {
      best_value = v;
      best = i;
    }
  }
  return best;
}

}  // namespace tilesmith::proposers::detail
