#include "runtime/telemetry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "analysis/stats.h"

namespace tilesmith {

namespace {
struct ReasonName {
  std::uint64_t bit;
  const char* name;
};
constexpr ReasonName kReasonNames[] = {
    {throttle::kGpuIdle, "gpu_idle"},
    {throttle::kApplicationsClocks, "applications_clocks"},
    {throttle::kSwPowerCap, "sw_power_cap"},
    {throttle::kHwSlowdown, "hw_slowdown"},
    {throttle::kSyncBoost, "sync_boost"},
    {throttle::kSwThermal, "sw_thermal"},
    {throttle::kHwThermal, "hw_thermal"},
    {throttle::kHwPowerBrake, "hw_power_brake"},
    {throttle::kDisplayClocks, "display_clocks"},
};
}  // namespace

std::string throttle_reason_names(std::uint64_t reasons) {
  std::string out;
  for (int b = 0; b < 64; ++b) {
    const std::uint64_t bit = std::uint64_t(1) << b;
    if (!(reasons & bit)) continue;
    std::string name;
    for (const auto& r : kReasonNames)
      if (r.bit == bit) name = r.name;
    if (name.empty()) {
      char buf[24];
      std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(bit));
      name = buf;
    }
    out += (out.empty() ? "" : "+") + name;
  }
  return out;
}

Result<std::uint64_t> parse_throttle_reason_names(const std::string& text) {
  std::uint64_t reasons = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t plus = text.find('+', pos);
    const std::string word =
        text.substr(pos, plus == std::string::npos ? std::string::npos : plus - pos);
    pos = plus == std::string::npos ? text.size() : plus + 1;
    bool known = false;
    for (const auto& r : kReasonNames)
      if (word == r.name) {
        reasons |= r.bit;
        known = true;
      }
    if (!known && word.rfind("0x", 0) == 0 && word.size() > 2) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(word.c_str() + 2, &end, 16);
      if (end && *end == '\0') {
        reasons |= v;
        known = true;
      }
    }
    if (!known)
      return Status::parse_error("'" + word +
                                 "' is not a throttle reason (docs/history.md names them)");
  }
  return reasons;
}

TelemetrySummary summarize_telemetry(const std::vector<TelemetryReading>& readings) {
  TelemetrySummary s;
  s.readings = static_cast<int>(readings.size());
  std::vector<double> sm, mem, power;
  for (const auto& r : readings) {
    if (r.sm_clock_mhz) sm.push_back(*r.sm_clock_mhz);
    if (r.mem_clock_mhz) mem.push_back(*r.mem_clock_mhz);
    if (r.power_w) power.push_back(*r.power_w);
    if (r.temperature_c)
      s.max_temperature_c =
          std::max(s.max_temperature_c.value_or(*r.temperature_c), *r.temperature_c);
    if (r.throttle_reasons) {
      s.throttle_reasons |= *r.throttle_reasons;
      if (*r.throttle_reasons & throttle::kSlowdown) ++s.throttled_readings;
    }
  }
  if (!sm.empty()) s.sm_clock_mhz = analysis::summarize(sm).median;
  if (!mem.empty()) s.mem_clock_mhz = analysis::summarize(mem).median;
  if (!power.empty()) s.power_w = analysis::summarize(power).mean;
  return s;
}

bool ClockSettle::observe(std::optional<double> mhz) {
  if (!mhz) return true;
  if (last_ && *last_ > 0 && std::fabs(*mhz - *last_) <= tolerance_ * *last_)
    ++in_a_row_;
  else
    in_a_row_ = 0;
  last_ = mhz;
  return in_a_row_ >= steady_;
}

bool EnergyWindow::observe(std::int64_t launches, double energy_j, double elapsed_ms) {
  if (done_) return true;
  last_ms_ = elapsed_ms;
  if (!have_first_) {
    have_first_ = true;
    first_j_ = energy_j;
  } else if (energy_j < (started_ ? end_j_ : first_j_)) {
    backwards_ = done_ = true;  // a counter reset (driver reload): nothing to say
    return true;
  } else if (!started_ && energy_j != first_j_) {
    // The first step seen: the window starts on a step, as it will end on one.
    started_ = true;
    start_j_ = end_j_ = energy_j;
    start_ms_ = elapsed_ms;
    start_launches_ = end_launches_ = launches;
  } else if (started_ && energy_j != end_j_) {
    end_j_ = energy_j;
    end_launches_ = launches;
    if (elapsed_ms - start_ms_ >= min_ms_) done_ = true;
  }
  if (elapsed_ms >= max_ms_) done_ = true;
  return done_;
}

std::optional<double> EnergyWindow::joules_per_launch() const {
  if (!done_ || backwards_ || !started_ || end_launches_ <= start_launches_ || end_j_ <= start_j_)
    return std::nullopt;
  return (end_j_ - start_j_) / double(end_launches_ - start_launches_);
}

std::string EnergyWindow::why_none() const {
  if (joules_per_launch()) return {};
  if (backwards_) return "the energy counter went backwards (reset?)";
  char buf[160];
  // The cap, not the time it stopped at: the same words for every candidate, said once.
  std::snprintf(buf, sizeof buf, "the energy counter did not advance over %.0f ms of launches",
                max_ms_);
  return buf;
}

}  // namespace tilesmith
