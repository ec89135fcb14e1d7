#pragma once
// The one interface the tuner uses to measure candidates: a GPU evaluator (compile,
// validate, time), a replay of recorded measurements, or a proxy to a worker process.
// evaluate() and vendor_baseline() are driven from one thread. prepare() may be called
// from other threads at the same time (compile-ahead): implementations keep it free of
// GPU work and thread-safe.

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "registry/config.h"
#include "registry/device_facts.h"
#include "registry/kernel_template.h"
#include "registry/problem.h"
#include "runtime/evaluation.h"
#include "runtime/read_floor.h"

namespace tilesmith {

// One candidate handed to a queue of evaluations (a worker pool, the tuner's runners):
// what to evaluate, and the caller's tag that comes back with its result.
struct CandidateJob {
  const KernelTemplate* tmpl = nullptr;  // must outlive the candidate's result
  GemmProblem problem;
  Config config;
  std::uint64_t tag = 0;
  // Racing (analysis/race.h): sampling stops early once the candidate is clearly slower
  // than this many milliseconds; 0: sample in full.
  double race_ms = 0;
};

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual const DeviceFacts& device() const = 0;
  // Compiles (through the cache) without running, so a caller can compile ahead of the
  // GPU. Returns the outcome of the compile step alone (ok or compile_error/invalid).
  virtual Evaluation prepare(const KernelTemplate& tmpl, const GemmProblem& problem,
                             const Config& config) = 0;
  // Full evaluation: render, compile (cached), load, validate, time. Never throws;
  // every failure is an Outcome with a message.
  virtual Evaluation evaluate(const KernelTemplate& tmpl, const GemmProblem& problem,
                              const Config& config) = 0;
  // As evaluate(), racing the candidate against `race_ms` (analysis/race.h; 0: in full):
  // its timing stops once it is clearly slower, and says so (TimingStats::raced_above_ms).
  // Evaluators that sample nothing (replay) evaluate in full.
  virtual Evaluation evaluate_racing(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config,
                                     double race_ms) {
    (void)race_ms;
    return evaluate(tmpl, problem, config);
  }
  // The vendor library on the same problem with the same timing. unavailable when the
  // backend has none.
  virtual Result<Evaluation> vendor_baseline(const GemmProblem& problem) = 0;
  // "cuBLAS 13.0 (cublasGemmEx, CUBLAS_COMPUTE_32F_PEDANTIC)" or similar.
  virtual std::string vendor_name() const = 0;
  // The problem's read floor (runtime/read_floor.h): the fastest way found to read its
  // operands once, timed as evaluate() times kernels. unavailable where the evaluator
  // cannot measure one (the replay backend: recordings hold kernel times only).
  // Measures from the next call on in a fresh process, where the evaluator measures in one
  // (a worker): a re-measurement spread over processes then holds what differs between
  // them (where the buffers landed, the context's state), not one process's luck. false
  // where there is no process to renew (in-process, replay).
  virtual bool renew_process() { return false; }
  virtual Result<ReadFloor> read_floor(const GemmProblem& problem) {
    (void)problem;
    return Status::unavailable("this evaluator measures no read floor");
  }
};

}  // namespace tilesmith
