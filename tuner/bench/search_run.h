#pragma once
// Measures how fast a proposer finds good configurations of a recorded space: it runs
// the proposer generation by generation (batches, like the tuning loop) against a
// ReplayEvaluator and counts evaluations until the best configuration evaluated is
// within a given distance of the recording's optimum. Distances use the recorded mean
// times (what Kernel Tuner measured), so replay noise cannot flatter a result; the
// proposer itself sees the replayed (re-measured) times, as in a real run.

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"
#include "runtime/replay/recording.h"
#include "tuner/search/proposer.h"

namespace tilesmith::bench {

struct SearchRunOptions {
  int batch = 8;
  int cap = 2000;                              // evaluations per run
  std::vector<double> targets = {0.05, 0.01};  // within 5% and 1% of the optimum
  // Handed to the proposer on every request (ProposalRequest::prior); nullptr: none.
  const std::vector<PriorMeasurement>* prior = nullptr;
};

struct SearchRunResult {
  // Per target: the 1-based number of the evaluation that first reached it; nullopt
  // when the cap (or the end of the space) came first.
  std::vector<std::optional<int>> evaluations_to_target;
  int evaluations = 0;
  double best_over_optimum = 0;  // recorded time of the best found / optimum
  int propose_calls = 0;
  double propose_seconds = 0;  // total time in propose()
  Status status;               // a proposer error ends the run early
};

// Runs one search. `seed` seeds the evaluator and, mixed with the generation, each
// request.
SearchRunResult run_search(const replay::Recording& recording, Proposer& proposer,
                           std::uint64_t seed, const SearchRunOptions& options);

// Exact figures for uniform random sampling without replacement from N configurations
// of which g are good: T = evaluations until the first good one,
// P(T <= n) = 1 - C(N-g, n) / C(N, n), E[T] = (N+1)/(g+1).
struct UniformBaseline {
  std::uint64_t n_total = 0, n_good = 0;
  double expectation = 0;
  std::uint64_t q1 = 0, median = 0, q3 = 0;  // smallest n with P(T <= n) >= 0.25, 0.5, 0.75
};
UniformBaseline uniform_sampling_baseline(std::uint64_t n_total, std::uint64_t n_good);
// P(T <= n) for the same model.
double uniform_sampling_cdf(std::uint64_t n_total, std::uint64_t n_good, std::uint64_t n);

}  // namespace tilesmith::bench
