#pragma once
// Summary statistics of timing samples. Pure functions; no state.

#include <vector>

namespace tilesmith::analysis {

struct SampleSummary {
  int count = 0;
  double median = 0, min = 0, max = 0, p20 = 0, p80 = 0, mean = 0, stddev = 0;
  double cv = 0;  // stddev / mean (0 when mean is 0)
};

// Percentile by linear interpolation between closest ranks (q in [0, 1]).
// `sorted` must be sorted ascending and non-empty.
double percentile_sorted(const std::vector<double>& sorted, double q);

// Summary of any non-empty sample (copied and sorted internally).
SampleSummary summarize(std::vector<double> samples);

// Spearman's rank correlation of two equally long samples (ties share their mean rank): 1 when
// they are in the same order, -1 in the opposite, 0 when either is constant or shorter than 2.
double rank_correlation(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace tilesmith::analysis
