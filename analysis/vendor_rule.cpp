#include "analysis/vendor_rule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tilesmith::analysis {

namespace {
bool usable(const std::optional<double>& v) { return v && std::isfinite(*v) && *v >= 0; }
bool positive(double v) { return std::isfinite(v) && v > 0; }

std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f ms", v);
  return buf;
}

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * v);
  return buf;
}
}  // namespace

std::optional<double> relative_spread(double median_ms, std::optional<double> p20_ms, std::optional<double> p80_ms,
                                      std::optional<double> cv) {
  if (positive(median_ms) && usable(p20_ms) && usable(p80_ms) && *p80_ms >= *p20_ms)
    return (*p80_ms - *p20_ms) / median_ms;
  if (usable(cv)) return *cv;
  return std::nullopt;
}

VendorComparison compare_with_vendor(const std::optional<Measurement>& tuned,
                                     const std::optional<Measurement>& vendor) {
  VendorComparison c;
  if (tuned && positive(tuned->median_ms)) c.tuned_ms = tuned->median_ms;
  if (vendor && positive(vendor->median_ms)) c.vendor_ms = vendor->median_ms;
  if (c.tuned_ms == 0) {
    c.verdict = VendorVerdict::kNoTunedTime;
    return c;
  }
  if (c.vendor_ms == 0) {
    c.verdict = VendorVerdict::kNoVendorTime;
    return c;
  }
  auto spread = [](const std::optional<double>& s) { return s && std::isfinite(*s) && *s > 0 ? *s : 0.0; };
  c.noise = std::max({kNoiseFloor, spread(tuned->spread), spread(vendor->spread)});
  c.gain = c.vendor_ms / c.tuned_ms - 1;
  if (c.gain > c.noise) c.verdict = VendorVerdict::kTunedFaster;
  else if (c.vendor_ms < c.tuned_ms) c.verdict = VendorVerdict::kVendorFaster;
  else c.verdict = VendorVerdict::kWithinNoise;
  return c;
}

std::string VendorComparison::describe() const {
  switch (verdict) {
    case VendorVerdict::kNoVendorTime: return "no vendor time recorded";
    case VendorVerdict::kNoTunedTime: return "no tuned time recorded";
    default: break;
  }
  std::string s = "tuned kernel " + ms(tuned_ms) + " vs vendor " + ms(vendor_ms) + " at tuning: ";
  switch (verdict) {
    case VendorVerdict::kTunedFaster: return s + pct(gain) + " faster (> noise " + pct(noise) + ")";
    case VendorVerdict::kWithinNoise: return s + "within noise (" + pct(gain) + " <= " + pct(noise) + ")";
    case VendorVerdict::kVendorFaster: return s + "vendor faster";
    default: return s;
  }
}

}  // namespace tilesmith::analysis
