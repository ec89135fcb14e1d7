#pragma once
// How long a worker may take before its candidate is a timeout: a compile deadline and
// a run deadline, scaled from what the orchestrator has seen (the slowest compile, the
// best kernel time per problem) with floors, so a slow but honest candidate is not
// cut off while a hung one does not hold the GPU for long.
//
//   compile = max(min_compile_s, compile_factor * slowest compile seen)
//   run     = max(min_run_s, run_factor * expected run phase)
//             + (the worker's first use of the problem ? reference allowance : 0)
//   expected run phase = warmup_ms + max_sampling_ms + (min_samples + 22) * T
//       with T the best median seen for the problem (0 until one is seen): one
//       validation launch, warm-up, the samples (at least min_samples, in batches of
//       10 that may overshoot the sampling cap by a batch) - see GpuEvaluator.
//   reference allowance = 2MNK / reference_gflops + 2 s: the CPU reference and the
//       inputs a worker builds the first time it sees a problem.
// A fixed deadline (compile_s / run_s > 0) replaces the scaled one (the reference
// allowance still applies).
//
// Thread-safe.

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "registry/problem.h"
#include "runtime/gpu_evaluator.h"

namespace tilesmith::worker {

struct DeadlineOptions {
  double min_compile_s = 60;
  double compile_factor = 10;
  double min_run_s = 30;
  double run_factor = 10;
  double start_s = 180;         // spawn to hello: driver start, device open, bandwidth check
  double reference_gflops = 5;  // assumed CPU reference speed (OpenBLAS on a busy host: low)
  double compile_s = 0;         // > 0: fixed compile deadline
  double run_s = 0;             // > 0: fixed run deadline
};

class DeadlinePolicy {
 public:
  DeadlinePolicy(DeadlineOptions options, TimingOptions timing)
      : options_(options), timing_(timing) {}

  std::chrono::milliseconds start() const;
  std::chrono::milliseconds compile() const;
  // `problem` may be null (the worker chooses it, as for a health check): the floor.
  std::chrono::milliseconds run(const GemmProblem* problem, bool first_use) const;

  // A compile that ran (cache hits say nothing about compile time).
  void note_compile_ms(double ms);
  // An ok measurement: the best per problem sets T.
  void note_kernel_ms(const GemmProblem& problem, double median_ms);
  // 0 when none is known.
  double expected_kernel_ms(const GemmProblem& problem) const;

  const DeadlineOptions& options() const { return options_; }

 private:
  DeadlineOptions options_;
  TimingOptions timing_;
  mutable std::mutex mu_;
  double slowest_compile_ms_ = 0;
  std::map<std::string, double> best_ms_;  // by GemmProblem::key()
};

// "42.0 s"
std::string seconds_text(std::chrono::milliseconds d);

}  // namespace tilesmith::worker
