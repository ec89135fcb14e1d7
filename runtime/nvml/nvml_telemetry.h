#pragma once
// Telemetry of an NVIDIA GPU through NVML (libnvidia-ml.so.1, part of the driver),
// loaded at run time like the other vendor libraries, so no binary needs it to start.
// The toolkit ships no nvml.h on every machine, so the few functions used are declared
// here with NVML's own signatures and values (nvml.h, NVML API reference); the table is
// filled by dlsym, or by a test with functions of its own.

#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "runtime/telemetry.h"

namespace tilesmith::nvml {

// nvmlReturn_t and the values used here.
using Return = int;
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorNotSupported = 3;
struct DeviceSt;
using Device = DeviceSt*;  // nvmlDevice_t
// nvmlClockType_t, nvmlTemperatureSensors_t.
inline constexpr int kClockSm = 1;
inline constexpr int kClockMem = 2;
inline constexpr int kTemperatureGpu = 0;

struct Api {
  Return (*nvmlInit_v2)() = nullptr;
  Return (*nvmlShutdown)() = nullptr;
  const char* (*nvmlErrorString)(Return) = nullptr;
  Return (*nvmlDeviceGetHandleByPciBusId_v2)(const char* pci_bus_id, Device* device) = nullptr;
  Return (*nvmlDeviceGetClockInfo)(Device, int type, unsigned int* mhz) = nullptr;
  Return (*nvmlDeviceGetPowerUsage)(Device, unsigned int* milliwatts) = nullptr;
  Return (*nvmlDeviceGetTemperature)(Device, int sensor, unsigned int* celsius) = nullptr;
  // Renamed nvmlDeviceGetCurrentClocksEventReasons in newer drivers; either is loaded.
  Return (*nvmlDeviceGetCurrentClocksThrottleReasons)(Device,
                                                      unsigned long long* reasons) = nullptr;
  Return (*nvmlDeviceGetTotalEnergyConsumption)(Device, unsigned long long* millijoules) =
      nullptr;  // Volta and later
  std::string library_path;
};

// libnvidia-ml.so.1 loaded once per process; unavailable with the loader's reason
// ("libnvidia-ml.so.1: cannot open shared object file") or the missing symbol.
Result<const Api*> api();

// One device's readings through `api`, found by its PCI bus id ("0000:3b:00.0", as the
// CUDA driver gives it: NVML's own index order can differ from CUDA's). NVML is
// initialised for the source's lifetime (NVML counts its initialisations).
class Telemetry final : public TelemetrySource {
 public:
  // unavailable naming the NVML call and its error where initialisation or the device
  // lookup fails. `api` must outlive the source.
  static Result<std::unique_ptr<Telemetry>> open(const Api& api, const std::string& pci_bus_id);
  ~Telemetry() override;
  Telemetry(const Telemetry&) = delete;
  Telemetry& operator=(const Telemetry&) = delete;

  // Each figure NVML answers; a call that fails leaves its figure absent. Power in watts
  // (NVML: milliwatts), clocks in MHz, temperature in °C.
  TelemetryReading read() override;
  // The total-energy counter in joules (NVML: millijoules); nullopt where the device has
  // none (before Volta: NVML's "Not Supported"), with the reason in *why.
  std::optional<double> energy_j(std::string* why = nullptr) override;

 private:
  Telemetry(const Api& api, Device device) : api_(api), device_(device) {}
  std::string error(Return r) const;
  const Api& api_;
  Device device_;
};

}  // namespace tilesmith::nvml
