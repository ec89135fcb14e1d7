#pragma once
// The roofline: how fast a kernel could go given its arithmetic intensity, a compute
// peak and a memory bandwidth. Units: FLOP, bytes, seconds.

namespace tilesmith::analysis {

struct Roofline {
  double peak_flops = 0;       // FLOP/s
  double bandwidth = 0;        // bytes/s
  // min(peak, intensity * bandwidth); whichever is known when the other is 0.
  double attainable(double flops, double bytes) const;
  // true when the problem's bound is memory bandwidth rather than compute.
  bool memory_bound(double flops, double bytes) const;
};

// Achieved FLOP/s over the attainable bound, in percent (0 when the bound is unknown).
double percent_of_attainable(const Roofline& r, double flops, double bytes, double seconds);

}  // namespace tilesmith::analysis
