#pragma once
// A distribution-free confidence interval for the median of a population, from n
// independent samples: the order statistics [x_(l), x_(n+1-l)]. The count of samples
// below the true median is Binomial(n, 1/2) whatever the distribution, so the interval
// covers the median with probability 1 - 2 P(Bin(n, 1/2) <= l - 1) exactly (for a
// continuous distribution; at least that in general). No normality, no resampling, and
// an outlier moves the interval only when it displaces one of its two end samples, which
// it cannot once n leaves l >= 2 (n >= 9 at 95%). The sign test's interval, as in
// Hollander, Wolfe & Chicken, Nonparametric Statistical Methods, ch. 3.6. Pure functions.

#include <optional>
#include <vector>

namespace tilesmith::analysis {

struct MedianInterval {
  double median = 0;
  double lo = 0, hi = 0;
  int lower_rank = 0;   // l (1-based): lo = x_(l), hi = x_(n+1-l)
  double coverage = 0;  // the exact coverage of this interval, >= the level asked for
};

// 1 - 2 P(Bin(n, 1/2) <= l - 1): the coverage of [x_(l), x_(n+1-l)] for n samples.
// 0 when l is out of 1..n/2 rounded up.
double median_interval_coverage(int n, int lower_rank);

// The narrowest interval of that form whose coverage is at least `level` (in (0, 1)).
// nullopt when even [min, max] covers less (n too small: at 95% n >= 6), or when the
// sample is empty or holds a non-finite value.
std::optional<MedianInterval> median_interval(std::vector<double> samples, double level);

// The median absolute deviation from the median divided by the median: a spread that
// one outlier cannot inflate. 0 for an empty sample or a zero median.
double relative_mad(std::vector<double> samples);

}  // namespace tilesmith::analysis
