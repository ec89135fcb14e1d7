#pragma once
// Which problem of a set gets the next slice of the shared budget, and how big it is
// (docs/problem-sets.md, "How the budget is split"). Pure: a function of each problem's
// standing, which the run derives from the problems' folders, so a stopped set resumes
// with the same choices and there is no scheduler state to keep on disk.
//
//  1. Minimum slices: every problem not done gets `min_slice` evaluations first, heaviest
//     first (the weight below; ties in set order), so each one has a result and a run cut
//     short leaves the cheapest without one (with a total budget smaller than problems x
//     min_slice, the minimum shrinks to total / problems, at least 1).
//  2. Then the problem with the fewest evaluations per unit of priority gets the next
//     `slice`, where priority = weight x max(recent gain, gain_floor): weight is what the
//     GEMM costs per step (vendor ms x count; before the vendor is timed, flops x count
//     in the same unit), recent gain the relative speed-up its best made over its last
//     slice. So evaluations go where time per step is and where the search still pays.
//  3. A problem that is done (plateau, space exhausted, nothing new proposed) gets no
//     more: its share goes to the others.
// The budget is never exceeded: Σ evals + the slice <= total_evals.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace tilesmith {

struct ProblemStanding {
  std::int64_t evals = 0;   // candidates evaluated so far
  double flops = 0;         // of one GEMM: the weight's stand-in before the vendor is timed
  std::int64_t count = 1;   // runs per step
  std::optional<double> vendor_ms;
  double recent_gain = 1;   // see recent_gain(); 1 while nothing is known
  bool done = false;
};

struct SchedulerOptions {
  std::int64_t total_evals = 0;  // the set's budget; 0: no limit
  std::int64_t min_slice = 16;   // evaluations every problem gets first
  std::int64_t slice = 16;       // evaluations per later slice
  double gain_floor = 0.02;      // a plateaued problem keeps this much of its weight
};

struct Slice {
  std::size_t problem = 0;
  std::int64_t evals = 0;  // to spend in this slice (> 0)
  bool minimum = false;    // part of the first round of minimum slices
};

// Each problem's cost per step: vendor_ms x count, or for one not timed yet flops x count
// converted to ms at the median vendor rate of those timed (in flops when none is).
std::vector<double> problem_weights(const std::vector<ProblemStanding>& problems);

// The minimum slice in effect: min_slice, or less when the budget cannot give every
// problem that much.
std::int64_t effective_min_slice(std::size_t problems, const SchedulerOptions& options);

// The next slice, or nullopt when the budget is spent or every problem is done.
std::optional<Slice> next_slice(const std::vector<ProblemStanding>& problems, const SchedulerOptions& options);

// How much better the best got over the last `window` evaluations: best before / best
// now - 1 (0: no gain). `evaluated` has one entry per evaluation in order, its value under
// the run's objective (the median time by default) for an ok one. 1 when the window found
// the first ok result or there is none yet (a problem without a result is worth trying).
double recent_gain(const std::vector<std::optional<double>>& evaluated, std::int64_t window);

}  // namespace tilesmith
