#include "tuner/bench/search_run.h"

#include <chrono>
#include <cmath>

#include "runtime/replay/recorded_template.h"
#include "runtime/replay/replay_evaluator.h"

namespace tilesmith::bench {

SearchRunResult run_search(const replay::Recording& recording, Proposer& proposer,
                           std::uint64_t seed, const SearchRunOptions& options) {
  SearchRunResult result;
  result.evaluations_to_target.assign(options.targets.size(), std::nullopt);
  // The evaluator shares the recording without owning it: the caller keeps it alive.
  std::shared_ptr<const replay::Recording> shared(&recording, [](const replay::Recording*) {});
  replay::ReplayEvaluator evaluator(shared, seed);
  const KernelTemplate tmpl = replay::recorded_template(recording);
  const GemmProblem problem = recording.problem();
  const double optimum = recording.optimum_ms();
  std::vector<Trial> history;
  double best_recorded = std::numeric_limits<double>::infinity();
  auto all_reached = [&] {
    for (const auto& t : result.evaluations_to_target)
      if (!t) return false;
    return true;
  };
  for (int generation = 0; result.evaluations < options.cap && !all_reached(); ++generation) {
    ProposalRequest req;
    req.space = &recording.space();
    req.context = recording.context();
    req.history = &history;
    req.count = std::min(options.batch, options.cap - result.evaluations);
    // splitmix-style mix so consecutive generations get unrelated seeds
    std::uint64_t s = seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(generation) + 1;
    s = (s ^ (s >> 30)) * 0xbf58476d1ce4e5b9ULL;
    req.seed = s ^ (s >> 27);
    req.generation = generation;
    req.prior = options.prior;
    auto t0 = std::chrono::steady_clock::now();
    ProposalBatch batch = proposer.propose(req);
    result.propose_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++result.propose_calls;
    if (!batch.status.ok()) {
      result.status = batch.status;
      break;
    }
    if (batch.proposals.empty()) {
      result.status =
          Status::internal(proposer.name() + " returned an empty batch with an ok status");
      break;
    }
    for (const Proposal& p : batch.proposals) {
      if (result.evaluations >= options.cap) break;
      Evaluation e = evaluator.evaluate(tmpl, problem, p.config);
      ++result.evaluations;
      Trial t;
      t.config = p.config;
      t.outcome = e.outcome;
      if (e.ok()) t.score = t.median_ms = e.timing.median_ms;  // these benchmarks tune for time
      t.proposer = batch.proposer;
      t.message = e.message;
      history.push_back(std::move(t));
      if (e.ok()) {
        if (const auto* rec = recording.find(p.config))
          best_recorded = std::min(best_recorded, rec->time_ms);
      }
      for (size_t k = 0; k < options.targets.size(); ++k) {
        if (!result.evaluations_to_target[k] &&
            best_recorded <= optimum * (1.0 + options.targets[k]))
          result.evaluations_to_target[k] = result.evaluations;
      }
    }
  }
  result.best_over_optimum = best_recorded / optimum;
  return result;
}

double uniform_sampling_cdf(std::uint64_t n_total, std::uint64_t n_good, std::uint64_t n) {
  if (n_good == 0) return 0;
  if (n + n_good > n_total) return 1;
  // C(N-g, n) / C(N, n) = prod_{i<n} (N-g-i) / (N-i), summed in logs.
  double log_miss = 0;
  for (std::uint64_t i = 0; i < n; ++i)
    log_miss += std::log(double(n_total - n_good - i)) - std::log(double(n_total - i));
  return 1 - std::exp(log_miss);
}

UniformBaseline uniform_sampling_baseline(std::uint64_t n_total, std::uint64_t n_good) {
  UniformBaseline b;
  b.n_total = n_total;
  b.n_good = n_good;
  b.expectation = double(n_total + 1) / double(n_good + 1);
  if (n_good == 0) return b;
  double log_miss = 0;  // log P(T > n)
  for (std::uint64_t n = 1; n <= n_total; ++n) {
    log_miss += std::log(double(n_total - n_good - (n - 1))) - std::log(double(n_total - (n - 1)));
    // The tolerance absorbs rounding in the log sum where a quartile is hit exactly.
    const double cdf = (n + n_good > n_total ? 1.0 : 1 - std::exp(log_miss)) + 1e-9;
    if (!b.q1 && cdf >= 0.25) b.q1 = n;
    if (!b.median && cdf >= 0.5) b.median = n;
    if (!b.q3 && cdf >= 0.75) {
      b.q3 = n;
      break;
    }
  }
  return b;
}

}  // namespace tilesmith::bench
