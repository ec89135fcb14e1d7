#pragma once
// "Never slower than the vendor": whether a tuned kernel beat the vendor library by more
// than the noise of the two measurements (docs/gemm-library.md, "Which kernel runs a
// problem"). The one place this rule lives: libtilesmith_gemm's dispatcher, the problem
// set's summary and `autotune-loop export` all call compare_with_vendor. Pure functions.
//
// The rule. Each measurement is a median with a relative spread (relative_spread: the
// width of its p20-p80 band over the median, else its coefficient of variation). The
// tuned kernel's gain is vendor_ms / tuned_ms - 1. The noise is the largest of the two
// spreads and kNoiseFloor (1%: what two sessions of one kernel differ by at least, clocks
// and placement). The tuned kernel runs when gain > noise; otherwise the vendor library
// runs: "vendor faster" when the vendor's median is lower, "within noise" when it is not.
// Without a vendor time (not measured, an old package) or a tuned time the tuned kernel
// runs, as before the rule.

#include <optional>
#include <string>

namespace tilesmith::analysis {

inline constexpr double kNoiseFloor = 0.01;

// The relative spread of one timing measurement: (p80 - p20) / median when both
// percentiles are known and ordered, else cv (standard deviation / mean), else nullopt.
// Non-finite or negative inputs count as unknown.
std::optional<double> relative_spread(double median_ms, std::optional<double> p20_ms, std::optional<double> p80_ms,
                                      std::optional<double> cv);

// A median and its relative spread (nullopt: not recorded; the floor stands in).
struct Measurement {
  double median_ms = 0;
  std::optional<double> spread;
};

enum class VendorVerdict {
  kTunedFaster,   // faster than the vendor by more than the noise: the tuned kernel runs
  kWithinNoise,   // not slower, but not faster by more than the noise: the vendor runs
  kVendorFaster,  // the vendor's median is lower: the vendor runs
  kNoVendorTime,  // nothing to compare with: the tuned kernel runs
  kNoTunedTime,   // no tuned median recorded (a hand-written package): the tuned kernel runs
};

struct VendorComparison {
  VendorVerdict verdict = VendorVerdict::kNoVendorTime;
  double tuned_ms = 0, vendor_ms = 0;  // 0 where not known
  double gain = 0;                     // vendor_ms / tuned_ms - 1 (both known)
  double noise = kNoiseFloor;          // max(tuned spread, vendor spread, kNoiseFloor)

  bool runs_tuned() const {
    return verdict == VendorVerdict::kTunedFaster || verdict == VendorVerdict::kNoVendorTime ||
           verdict == VendorVerdict::kNoTunedTime;
  }
  // One clause for a log line or an explanation, e.g.
  //   "tuned kernel 0.0231 ms vs vendor 0.0210 ms at tuning: vendor faster"
  //   "tuned kernel 0.0212 ms vs vendor 0.0215 ms at tuning: within noise (1.4% <= 2.0%)"
  //   "tuned kernel 0.0200 ms vs vendor 0.0250 ms at tuning: 25.0% faster (> noise 2.0%)"
  //   "no vendor time recorded"
  std::string describe() const;
};

// The rule above. `tuned` or `vendor` nullopt, or a median that is not a positive finite
// number: not compared (kNoTunedTime before kNoVendorTime).
VendorComparison compare_with_vendor(const std::optional<Measurement>& tuned,
                                     const std::optional<Measurement>& vendor);

}  // namespace tilesmith::analysis
