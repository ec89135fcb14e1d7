#pragma once
// The inputs and CPU reference of the problems a device worker has measured, kept so
// that coming back to a problem does not compute them again. A problem set measures its
// problems in slices, one after another and back again (docs/problem-sets.md), and the
// worker processes live for the whole run (on every host of a run under MPI,
// docs/scale-out.md): with this cache each worker computes a problem's reference once
// per run, not once per slice — seconds of OpenBLAS for the large shapes, paid while
// the GPU waits.
//
// Bounded by bytes (inputs + reference): the least recently used problems go first; the
// one just asked for is always kept, whatever its size. Deterministic: the inputs depend
// on (problem, seed) only, so a kept problem is exactly what a fresh computation gives.
//
// Not thread-safe (one per evaluator).

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <utility>

#include "registry/problem.h"
#include "runtime/cpu_reference.h"

namespace tilesmith {

struct ProblemInputs {
  ProblemData data;
  Reference reference;
  std::size_t bytes() const;
};

class ProblemInputsCache {
 public:
  static constexpr std::size_t kDefaultMaxBytes = std::size_t(2) << 30;

  ProblemInputsCache(std::uint64_t seed, std::size_t max_bytes = kDefaultMaxBytes)
      : seed_(seed), max_bytes_(max_bytes) {}

  // The problem's inputs and reference: kept ones, or computed now (make_problem_data
  // and compute_reference) and kept.
  std::shared_ptr<const ProblemInputs> get(const GemmProblem& problem);

  // How many times get() had to compute (for tests and logs).
  std::size_t computed() const { return computed_; }
  std::size_t kept() const { return entries_.size(); }
  std::size_t kept_bytes() const { return bytes_; }

 private:
  std::uint64_t seed_;
  std::size_t max_bytes_;
  std::list<std::pair<std::string, std::shared_ptr<const ProblemInputs>>> entries_;  // most recent first
  std::size_t bytes_ = 0;
  std::size_t computed_ = 0;
};

}  // namespace tilesmith
