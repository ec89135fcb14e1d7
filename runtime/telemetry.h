#pragma once
// What the GPU was doing while a kernel was timed: clocks, power, temperature and the
// reasons its clocks were held down, read around the samples, and the energy of one
// launch from the device's energy counter. The source is the backend's (NVML on NVIDIA,
// runtime/nvml/); what is here is pure: the readings' summary, the throttle reasons'
// names and the energy window's arithmetic, so they are tested without a GPU.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tilesmith {

// One reading of the device. A field is absent where the device or driver does not
// report it (or the call failed).
struct TelemetryReading {
  std::optional<double> sm_clock_mhz, mem_clock_mhz;
  std::optional<double> power_w;
  std::optional<double> temperature_c;
  std::optional<std::uint64_t> throttle_reasons;  // NVML's clocks-event bitmask (below)
};

// NVML's clocks-event (throttle) reasons, as nvml.h numbers them.
namespace throttle {
inline constexpr std::uint64_t kGpuIdle = 0x1;
inline constexpr std::uint64_t kApplicationsClocks = 0x2;
inline constexpr std::uint64_t kSwPowerCap = 0x4;
inline constexpr std::uint64_t kHwSlowdown = 0x8;
inline constexpr std::uint64_t kSyncBoost = 0x10;
inline constexpr std::uint64_t kSwThermal = 0x20;
inline constexpr std::uint64_t kHwThermal = 0x40;
inline constexpr std::uint64_t kHwPowerBrake = 0x80;
inline constexpr std::uint64_t kDisplayClocks = 0x100;
// The reasons that slow a running kernel down (power, heat, the board's slowdown
// signals); idle, a clock setting or sync boost do not make a sample a throttled one.
inline constexpr std::uint64_t kSlowdown =
    kSwPowerCap | kHwSlowdown | kSwThermal | kHwThermal | kHwPowerBrake;
}  // namespace throttle

// "sw_power_cap+hw_thermal": the names of the bits set, in bit order, joined by '+'; an
// unnamed bit as "0x..."; "" for none.
std::string throttle_reason_names(std::uint64_t reasons);
// The inverse, for history.csv; parse_error naming the unknown word.
Result<std::uint64_t> parse_throttle_reason_names(const std::string& text);

// What travels with an Evaluation: the readings taken while its samples ran, summarised.
struct TelemetrySummary {
  int readings = 0;
  std::optional<double> sm_clock_mhz;       // median of the readings
  std::optional<double> mem_clock_mhz;      // median
  std::optional<double> power_w;            // mean
  std::optional<double> max_temperature_c;  // highest
  std::uint64_t throttle_reasons = 0;       // every reason seen in any reading
  int throttled_readings = 0;               // readings with a slowdown reason
  std::optional<double> joules_per_launch;  // from the energy counter (EnergyWindow)
  bool throttled() const { return (throttle_reasons & throttle::kSlowdown) != 0; }
};

// The summary of the readings (joules_per_launch left for the caller). No readings: a
// summary with readings = 0 and every figure absent.
TelemetrySummary summarize_telemetry(const std::vector<TelemetryReading>& readings);

// A device's telemetry, read by the evaluator around its samples. One thread.
class TelemetrySource {
 public:
  virtual ~TelemetrySource() = default;
  virtual TelemetryReading read() = 0;
  // The energy counter in joules (since the driver loaded), or nullopt where the device
  // has none; `why` (when given) says why not, once per source.
  virtual std::optional<double> energy_j(std::string* why = nullptr) = 0;
};

// Whether the SM clock has reached a steady state during a warm-up: the readings taken
// between warm-up slices, settled once `steady` readings in a row are within `tolerance`
// (relative) of the one before. A device that reports no clock is settled at once: there
// is nothing to wait for. Pure.
class ClockSettle {
 public:
  explicit ClockSettle(double tolerance = 0.01, int steady = 2)
      : tolerance_(tolerance), steady_(steady) {}
  // One reading; true once settled.
  bool observe(std::optional<double> sm_clock_mhz);

 private:
  double tolerance_;
  int steady_;
  int in_a_row_ = 0;
  std::optional<double> last_;
};

// The energy of one launch from an energy counter that advances in steps (NVML's updates
// every few milliseconds): kernels run back to back, the counter is read after each
// synchronised chunk, and the window spans whole counter steps, from the first change
// seen to the first change after `min_ms`, so the counter's step does not quantise the
// answer. Pure arithmetic over what the caller observed.
class EnergyWindow {
 public:
  EnergyWindow(double min_ms, double max_ms) : min_ms_(min_ms), max_ms_(max_ms) {}
  // One observation after a chunk: launches run so far, the counter, the time since the
  // window began. Returns true when the window is complete (or has given up at max_ms).
  bool observe(std::int64_t launches, double energy_j, double elapsed_ms);
  // Joules per launch once complete; nullopt (with why_none()) when the counter never
  // spanned min_ms, or went backwards.
  std::optional<double> joules_per_launch() const;
  std::string why_none() const;

 private:
  double min_ms_, max_ms_;
  bool have_first_ = false, started_ = false, done_ = false, backwards_ = false;
  double first_j_ = 0, start_j_ = 0, start_ms_ = 0, end_j_ = 0, last_ms_ = 0;
  std::int64_t start_launches_ = 0, end_launches_ = 0;
};

}  // namespace tilesmith
