#pragma once
// Racing (issue 33): a candidate whose first samples are clearly slower than the best so
// far stops sampling early, so a night's samples go to contenders. "Clearly" accounts for
// the noise on both sides: the best's 80th percentile (its slow side) times 1 + margin
// is the bound, and the candidate's 20th percentile (its fast side) must be above it,
// after at least min_samples samples. A raced candidate keeps its measured median (it is
// recorded as measured, with fewer samples); the end-of-run re-timing of the finalists
// still measures in full.

#include <vector>

namespace tilesmith::analysis {

struct RaceRule {
  int min_samples = 10;
  double quantile = 0.2;  // the candidate's fast side
};

// The bound for the next candidates: the best so far's p80 (its median where p80 is not
// known) times 1 + margin; 0 (no racing) when margin <= 0 or there is no best.
double race_bound_ms(double best_p80_ms, double best_median_ms, double margin);

// True when there are at least rule.min_samples samples (ms, any order) and their
// rule.quantile is above bound_ms; never when bound_ms <= 0.
bool race_lost(const std::vector<double>& samples_ms, double bound_ms, const RaceRule& rule = {});

}  // namespace tilesmith::analysis
