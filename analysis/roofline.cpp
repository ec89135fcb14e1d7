#include "analysis/roofline.h"

#include <algorithm>

namespace tilesmith::analysis {

double Roofline::attainable(double flops, double bytes) const {
  double by_memory = (bandwidth > 0 && bytes > 0) ? flops / bytes * bandwidth : 0;
  if (peak_flops > 0 && by_memory > 0) return std::min(peak_flops, by_memory);
  return std::max(peak_flops, by_memory);
}

bool Roofline::memory_bound(double flops, double bytes) const {
  return bandwidth > 0 && bytes > 0 && flops / bytes * bandwidth < peak_flops;
}

double percent_of_attainable(const Roofline& r, double flops, double bytes, double seconds) {
  double bound = r.attainable(flops, bytes);
  if (bound <= 0 || seconds <= 0) return 0;
  return flops / seconds / bound * 100.0;
}

}  // namespace tilesmith::analysis
