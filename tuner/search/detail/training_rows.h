#pragma once
// Which observations a surrogate is fitted on. Fitting costs grow with the rows (a
// forest's splits as rows x log rows, a Gaussian process's factorisation as rows
// cubed), so past a bound the model sees a well-chosen subset instead of everything:
//  - the fastest successes (best_share of the bound): where the search exploits, and
//    what expected improvement is measured against;
//  - the most recent rows (recent_share): where the search is now, so the model knows
//    what its last picks showed;
//  - the rest spread evenly over the remaining rows in history order: a sample
//    stratified over the run's course, failures in their proportion, so the model keeps
//    the shape of the whole space (and where configurations fail).
// Up to the bound every row is used, so short runs fit exactly what they always did.
// Generic and deterministic.

#include <cstddef>
#include <vector>

namespace tilesmith::proposers::detail {

struct TrainingBound {
  size_t max_rows = 500;  // 0: no bound
  double best_share = 0.4;
  double recent_share = 0.2;
};

// rows: the number of observations (history order 0 .. rows-1); best_first: indices of
// the successful ones, fastest first. Returns at most bound.max_rows distinct indices,
// ascending (history order), or every index when rows <= max_rows.
std::vector<size_t> training_rows(size_t rows, const std::vector<size_t>& best_first,
                                  const TrainingBound& bound);

}  // namespace tilesmith::proposers::detail
