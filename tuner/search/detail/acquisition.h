#pragma once
// The evolve proposer's acquisition: how the surrogate's predictions at the candidates
// become scores that picks rank by.
//  - Expected improvement (log units) of the leading model over the best found, with
//    exploration xi. A pick damps its one-parameter neighbours' scores by
//    diversity_penalty (BatchPicks does it), so one batch does not spend itself on one
//    neighbourhood the model is unsure about.
//  - Or Thompson sampling (the forest leading): each pick is the best candidate of the
//    mean of a random share of the trees, a draw from the model's spread.
//  - The second model's expected improvement, for its own picks. With the Gaussian
//    process second, its mean is cheap and its deviation is not, and no posterior
//    deviation exceeds the prior's: each candidate starts with the expected improvement
//    at the prior deviation, an upper bound, and best_second() computes the exact value
//    only where a bound could still win, so it picks what scoring every candidate
//    exactly would, at a fraction of the cost.
//
// Generic and deterministic.

#include <cstddef>
#include <random>
#include <vector>

#include "tuner/search/detail/surrogate.h"

namespace tilesmith::proposers::detail {

// Expected improvement (log units) of a prediction (mean, sd) over the best log-time,
// with exploration xi: E[max(0, best - xi - Y)], Y ~ N(mean, sd^2).
double expected_improvement(double best, double mean, double sd, double xi);

struct AcquisitionOptions {
  bool thompson = false;          // Thompson sampling (the forest leading) instead of EI
  double exploration = 0.0;       // expected improvement's xi (log units)
  double diversity_penalty = 0.5; // a pick's factor on its neighbours' scores
  double thompson_trees = 0.5;    // share of the trees behind each Thompson pick
};

// Every candidate's predictions and scores, by candidate index.
struct CandidateScores {
  // The leading model.
  std::vector<double> mean, stddev;
  std::vector<double> ei;        // expected improvement, damped by the picks so far
  int trees = 0;                 // Thompson: per_tree holds trees values per candidate
  std::vector<double> per_tree;
  std::vector<size_t> by_mean;   // candidates by predicted mean, best first (stable)
  // The second model (empty without one). ei2 is exact where exact2, else a bound;
  // damping2 is what the picks so far have multiplied it by.
  std::vector<double> mean2, ei2, damping2;
  std::vector<char> exact2;
  size_t size() const { return mean.size(); }
};

class Acquisition {
 public:
  Acquisition(const SurrogateModels& models, AcquisitionOptions options)
      : models_(models), options_(options) {}
  const AcquisitionOptions& options() const { return options_; }
  bool thompson() const { return options_.thompson; }
  double best() const { return models_.best(); }
  // "forest's " or "Gaussian process's ": the second model, for the picks' reasons.
  const char* second_name() const;

  // Predictions and scores at n candidates (their feature rows).
  CandidateScores score(const float* const* rows, size_t n) const;

  // A pick's damping of candidate j: the leading model's score unless Thompson
  // samples, and (second) the second model's.
  void damp(CandidateScores* s, size_t j, bool second) const;

  // The unblocked candidate with the best second-model prediction (exploit) or
  // expected improvement; s->size() when every candidate is blocked. Computes exact
  // deviations, in blocks of the leading bounds, until the leader is exact.
  size_t best_second(CandidateScores* s, const float* const* rows,
                     const std::vector<char>& blocked, bool exploit) const;
  // The exact expected improvement of the second model at `which`, in place of the
  // bound, keeping the damping applied so far.
  void tighten_second(CandidateScores* s, const float* const* rows,
                      const std::vector<size_t>& which) const;

  // The candidate neither blocked nor ineligible with the highest expected
  // improvement (equal ones: the lower predicted mean, then the first); s.size() when
  // none is left.
  size_t best_ei(const CandidateScores& s, const std::vector<char>& blocked,
                 const std::vector<char>& eligible) const;

 private:
  const SurrogateModels& models_;
  AcquisitionOptions options_;
};

// Thompson sampling over the forest's trees: each pick() reshuffles the trees (from
// the previous order, so a batch's draws are one sequence of the rng) and takes the
// candidate with the lowest sum over the first `draw` of them.
class ThompsonDraw {
 public:
  ThompsonDraw(int trees, double share);
  int draw() const { return draw_; }
  size_t pick(const CandidateScores& s, const std::vector<char>& blocked,
              const std::vector<char>& eligible, std::mt19937_64& rng);

 private:
  std::vector<int> order_;
  int draw_;
};

}  // namespace tilesmith::proposers::detail
