#pragma once
// The Evaluator for a real GPU: render -> compile (cached) -> load -> run on a NaN-
// poisoned output -> compare every element with the CPU reference -> time. See
// docs/timing-and-tolerances.md for the method. One instance drives one device from
// one thread. After a fault that poisons the GPU context (sticky error) every later
// evaluation reports launch_error until the process is restarted.

#include <filesystem>
#include <memory>

#include "base/status.h"
#include "runtime/backend.h"
#include "runtime/compile_cache.h"
#include "runtime/cpu_reference.h"
#include "runtime/evaluator.h"

namespace tilesmith {

struct TimingOptions {
  double warmup_ms = 25;        // time-based warm-up before sampling
  int min_samples = 20;
  int max_samples = 400;
  double target_cv = 0.01;      // keep sampling past min_samples while the spread is larger
  double max_sampling_ms = 1500;  // cap on wall time spent sampling one kernel
  bool flush_l2 = true;         // overwrite a buffer of 2x L2 before every sample
  // After sampling, where the device has an energy counter: launches back to back for at
  // least this long, spanning whole counter steps, for the energy of one launch
  // (runtime/telemetry.h, EnergyWindow); 0: no energy figure. Off by default: the window
  // costs 100-500 ms per evaluation, a search's throughput; bench-best turns it on.
  double energy_ms = 0;
  // After sampling: three spans of launches back to back (no flush) of at least this long
  // each, for TimingStats::steady_ms; 0: not measured. bench-best turns it on.
  double steady_ms = 0;
};

struct GpuEvaluatorOptions {
  std::filesystem::path cache_dir;  // empty: default_cache_dir()/kernels
  std::uint64_t cache_max_bytes = CompileCache::kDefaultMaxBytes;
  TimingOptions timing;
  std::uint64_t seed = 1;  // input data seed
};

class GpuEvaluator final : public Evaluator {
 public:
  // Opens the device, loads the compiler and measures device-to-device bandwidth once.
  static Result<std::unique_ptr<GpuEvaluator>> open(Backend& backend, int ordinal, GpuEvaluatorOptions options);
  ~GpuEvaluator() override;

  const DeviceFacts& device() const override;
  Evaluation prepare(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) override;
  Evaluation evaluate(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) override;
  Evaluation evaluate_racing(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config,
                             double race_ms) override;
  Result<Evaluation> vendor_baseline(const GemmProblem& problem) override;
  std::string vendor_name() const override;
  // The sweep of runtime/read_floor.h on the problem's own input buffers, timed with this
  // evaluator's timing; internal when the sweep fails (a lost context also marks the
  // evaluator broken, as a candidate's fault does).
  Result<ReadFloor> read_floor(const GemmProblem& problem) override;

  // Bytes read + written per second by a large device-to-device copy, measured at open.
  double measured_bandwidth() const;
  // FP32 FMA peak (FLOP/s) from SM count, lanes and clock.
  double peak_flops() const;
  // Empty while the context is usable; else what broke it.
  const std::string& broken_reason() const;
  Compiler& compiler();

  struct State;  // problem buffers, reference, flush buffer (defined in the .cpp)

 private:
  explicit GpuEvaluator(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace tilesmith
