#pragma once
// An Evaluator that answers from a Kernel Tuner recording instead of a GPU, for
// GPU-free tuning runs, tests and search benchmarks.
//
// evaluate(): a recorded configuration gives its recorded outcome. An ok one is
// "re-measured" by a bootstrap: as many repetitions as were recorded, drawn with
// replacement from the recorded `times` (Kernel Tuner's mean `time` alone when none
// were kept), summarised like a GPU measurement (median_ms, min, p20, p80, mean, cv),
// so repeated evaluations vary as real re-runs would, within the recorded spread.
// The draw is seeded by (seed, configuration, how many times this evaluator has
// evaluated it): the same seed gives the same answers whatever the evaluation order.
// tflops = 2*M*N*K / median, with M and N from the recording and K from the problem
// when it gives one (else the recording's, see Recording::problem). compile_ms is the
// recorded compile_time. A configuration that is off the space or not recorded gives
// outcome invalid with the reason; a problem of another size than recorded, too.
//
// Not thread-safe (like every Evaluator): use one per worker; the Recording is shared.

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "runtime/evaluator.h"
#include "runtime/replay/recording.h"

namespace tilesmith::replay {

class ReplayEvaluator : public Evaluator {
 public:
  ReplayEvaluator(std::shared_ptr<const Recording> recording, std::uint64_t seed);

  const Recording& recording() const { return *recording_; }

  const DeviceFacts& device() const override { return device_; }
  // No work: ok for a recorded ok configuration, its recorded failure otherwise,
  // invalid when it is not recorded. compile_ms is the recorded compile time.
  Evaluation prepare(const KernelTemplate& tmpl, const GemmProblem& problem,
                     const Config& config) override;
  Evaluation evaluate(const KernelTemplate& tmpl, const GemmProblem& problem,
                      const Config& config) override;
  Result<Evaluation> vendor_baseline(const GemmProblem& problem) override;
  // The recording's vendor time at its own problem (Recording::vendor_median_ms), as a
  // one-sample measurement; unavailable when it holds none or for another problem.
  std::string vendor_name() const override;
  // unavailable: recordings hold kernel times only.
  Result<ReadFloor> read_floor(const GemmProblem&) override {
    return Status::unavailable("the replay backend measures no read floor (recordings hold kernel times only)");
  }

 private:
  // The start of prepare and evaluate: the record for `config`, with its recorded
  // compile time and outcome in *e ("recorded as ..." when it failed); or nullptr, with
  // *e invalid and saying why.
  const KernelTunerRecord* lookup(const KernelTemplate& tmpl, const GemmProblem& problem,
                                  const Config& config, Evaluation* e) const;

  std::shared_ptr<const Recording> recording_;
  std::uint64_t seed_;
  DeviceFacts device_;
  std::unordered_map<const KernelTunerRecord*, std::uint64_t> evaluations_;
};

}  // namespace tilesmith::replay
