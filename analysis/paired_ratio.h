#pragma once
// Ours against the vendor library as a ratio that drift cannot bias: the two are measured
// in alternating rounds (ours, vendor, vendor, ours, ...), each round one median of each,
// and the ratio is taken round by round (vendor ms / ours ms: above 1, ours is faster).
// A GPU at its power limit changes its clocks over seconds; measured one after the other in
// separate blocks, whichever came second ran at other clocks than the first, and one pass
// moved a ratio by up to 0.15 on an H200 (notes/device-runs.md, run 120). Paired, a clock
// change between rounds divides out of each round's ratio, and the alternating order
// cancels a drift within a round. The interval is the median's distribution-free one
// (analysis/median_interval.h). Pure.

#include <optional>
#include <string>
#include <vector>

#include "analysis/median_interval.h"

namespace tilesmith::analysis {

struct PairedRatio {
  int rounds = 0;
  double median = 0;                      // of vendor_ms / ours_ms over the rounds
  std::optional<MedianInterval> interval;  // of that median; nullopt when too few rounds
  double ours_median_ms = 0, vendor_median_ms = 0;  // each side's median over its rounds

  // "ours faster" when the interval lies above 1, "vendor faster" below it, "tie" when it
  // holds 1, "too few rounds" without an interval.
  std::string verdict() const;
};

// The round order: true when ours goes first in `round` (0-based): ours, vendor, then
// vendor, ours, and so on.
bool ours_first(int round);

// From one sample of each per round, in round order (equal counts; every time > 0).
// nullopt when there is no round or the counts differ or a time is not positive.
std::optional<PairedRatio> paired_ratio(const std::vector<double>& ours_ms, const std::vector<double>& vendor_ms,
                                        double level = 0.95);

}  // namespace tilesmith::analysis
