#pragma once
// Telemetry of an AMD GPU through ROCm SMI (librocm_smi64.so.1, part of ROCm), loaded at
// run time like NVML on NVIDIA (runtime/nvml/), so no binary needs it to start. The few
// functions used are declared here with ROCm SMI's own signatures and values (rocm_smi.h;
// tests/runtime/rocm_smi_telemetry_test.cpp checks them against the header where it is
// installed); the table is filled by dlsym, or by a test with functions of its own.
//
// Not run on an AMD GPU here (none is at hand): the units, the device lookup and both
// layouts of the clock table are checked against a scripted library only.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "runtime/telemetry.h"

namespace tilesmith::rocm_smi {

// rsmi_status_t and the values used here.
using Return = int;
inline constexpr Return kSuccess = 0;
inline constexpr Return kNotSupported = 2;  // RSMI_STATUS_NOT_SUPPORTED
// rsmi_clk_type_t, rsmi_temperature_type_t, rsmi_temperature_metric_t.
inline constexpr int kClockSys = 0;
inline constexpr int kClockMem = 4;
inline constexpr int kTemperatureJunction = 1;
inline constexpr int kTemperatureCurrent = 0;
inline constexpr int kMaxFrequencies = 32;  // RSMI_MAX_NUM_FREQUENCIES

// rsmi_version_t.
struct Version {
  std::uint32_t major = 0, minor = 0, patch = 0;
  const char* build = nullptr;
};

// rsmi_frequencies_t is passed as raw bytes: ROCm 6 put a `bool has_deep_sleep` in front
// of it, moving every field (clock_mhz() reads either layout).
inline constexpr std::size_t kFrequenciesBytes = 8 + 8 + 8 * kMaxFrequencies;  // the larger layout

struct Api {
  Return (*rsmi_init)(std::uint64_t flags) = nullptr;
  Return (*rsmi_shut_down)() = nullptr;
  Return (*rsmi_status_string)(Return, const char** text) = nullptr;
  Return (*rsmi_version_get)(Version*) = nullptr;
  Return (*rsmi_num_monitor_devices)(std::uint32_t* count) = nullptr;
  Return (*rsmi_dev_pci_id_get)(std::uint32_t index, std::uint64_t* bdfid) = nullptr;
  Return (*rsmi_dev_gpu_clk_freq_get)(std::uint32_t index, int clock, void* frequencies) = nullptr;
  Return (*rsmi_dev_power_ave_get)(std::uint32_t index, std::uint32_t sensor, std::uint64_t* microwatts) = nullptr;
  Return (*rsmi_dev_temp_metric_get)(std::uint32_t index, std::uint32_t sensor, int metric,
                                     std::int64_t* millidegrees) = nullptr;
  // The accumulated energy counter in units of `resolution` microjoules (MI100 and later).
  Return (*rsmi_dev_energy_count_get)(std::uint32_t index, std::uint64_t* counter, float* resolution_uj,
                                      std::uint64_t* timestamp_ns) = nullptr;
  std::string library_path;
};

// librocm_smi64 loaded once per process; unavailable with the loader's reason or the
// missing symbol.
Result<const Api*> api();

// ROCm SMI's PCI id of a device (domain << 32 | bus << 8 | device << 3 | function), as
// rsmi_dev_pci_id_get gives it.
std::uint64_t bdf_id(int domain, int bus, int device, int function = 0);

// The current clock in MHz from rsmi_frequencies_t's bytes: the layout of ROCm 6 and later
// (`has_deep_sleep` first) when `major` >= 6, that of ROCm 5 otherwise; the other layout is
// tried when the expected one does not hold together (a count of 1..32, a current index
// below it, a frequency in Hz between 10 MHz and 10 GHz). nullopt when neither does.
std::optional<double> clock_mhz(const unsigned char* bytes, std::uint32_t major);

// One device's readings through `api`, found by its PCI address (ROCm SMI's index order
// can differ from HIP's under HIP_VISIBLE_DEVICES). ROCm SMI is initialised for the
// source's lifetime. Throttle reasons are not read on AMD (ROCm SMI reports them only in
// a versioned metrics table); a reading leaves them unread.
class Telemetry final : public TelemetrySource {
 public:
  // unavailable naming the call and its error where initialisation or the lookup fails.
  // `api` must outlive the source.
  static Result<std::unique_ptr<Telemetry>> open(const Api& api, std::uint64_t bdfid);
  ~Telemetry() override;
  Telemetry(const Telemetry&) = delete;
  Telemetry& operator=(const Telemetry&) = delete;

  // Clocks in MHz (ROCm SMI: Hz), power in W (microwatts), junction temperature in °C
  // (millidegrees); a call that fails leaves its figure absent.
  TelemetryReading read() override;
  // The energy counter in joules (counter x resolution microjoules); nullopt where the
  // device has none, with the reason in *why.
  std::optional<double> energy_j(std::string* why = nullptr) override;

 private:
  Telemetry(const Api& api, std::uint32_t index, std::uint32_t major) : api_(api), index_(index), major_(major) {}
  std::string error(Return r) const;
  const Api& api_;
  std::uint32_t index_;
  std::uint32_t major_;
};

}  // namespace tilesmith::rocm_smi
