#include "runtime/nvml/nvml_telemetry.h"

#include "runtime/detail/dynamic_library.h"

namespace tilesmith::nvml {

Result<const Api*> api() {
  return detail::load_api_once<Api>(
      {"libnvidia-ml.so.1", "libnvidia-ml.so"}, [](Api& a, detail::SymbolLoader& l) {
        l.load(a.nvmlInit_v2, "nvmlInit_v2");
        l.load(a.nvmlShutdown, "nvmlShutdown");
        l.load(a.nvmlErrorString, "nvmlErrorString");
        l.load(a.nvmlDeviceGetHandleByPciBusId_v2, "nvmlDeviceGetHandleByPciBusId_v2");
        l.load(a.nvmlDeviceGetClockInfo, "nvmlDeviceGetClockInfo");
        l.load(a.nvmlDeviceGetPowerUsage, "nvmlDeviceGetPowerUsage");
        l.load(a.nvmlDeviceGetTemperature, "nvmlDeviceGetTemperature");
        l.load_optional(a.nvmlDeviceGetCurrentClocksThrottleReasons,
                        "nvmlDeviceGetCurrentClocksEventReasons");
        if (!a.nvmlDeviceGetCurrentClocksThrottleReasons)
          l.load_optional(a.nvmlDeviceGetCurrentClocksThrottleReasons,
                          "nvmlDeviceGetCurrentClocksThrottleReasons");
        l.load_optional(a.nvmlDeviceGetTotalEnergyConsumption,
                        "nvmlDeviceGetTotalEnergyConsumption");
      });
}

std::string Telemetry::error(Return r) const {
  const char* s = api_.nvmlErrorString ? api_.nvmlErrorString(r) : nullptr;
  return std::string("NVML error ") + std::to_string(r) +
         (s ? std::string(" (") + s + ")" : std::string());
}

Result<std::unique_ptr<Telemetry>> Telemetry::open(const Api& api, const std::string& pci_bus_id) {
  if (!api.nvmlInit_v2 || !api.nvmlShutdown || !api.nvmlDeviceGetHandleByPciBusId_v2)
    return Status::unavailable(
        "NVML: the library lacks nvmlInit_v2, nvmlShutdown or the PCI lookup");
  if (pci_bus_id.empty()) return Status::unavailable("NVML: the device's PCI bus id is unknown");
  const Return init = api.nvmlInit_v2();
  if (init != kSuccess) {
    const char* s = api.nvmlErrorString ? api.nvmlErrorString(init) : nullptr;
    return Status::unavailable("NVML: nvmlInit_v2 failed: error " + std::to_string(init) +
                               (s ? std::string(" (") + s + ")" : std::string()));
  }
  Device device = nullptr;
  const Return found = api.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.c_str(), &device);
  if (found != kSuccess) {
    const char* s = api.nvmlErrorString ? api.nvmlErrorString(found) : nullptr;
    api.nvmlShutdown();
    return Status::unavailable("NVML: no device at PCI bus id " + pci_bus_id + ": error " +
                               std::to_string(found) +
                               (s ? std::string(" (") + s + ")" : std::string()));
  }
  return std::unique_ptr<Telemetry>(new Telemetry(api, device));
}

Telemetry::~Telemetry() { api_.nvmlShutdown(); }

TelemetryReading Telemetry::read() {
  TelemetryReading r;
  unsigned int v = 0;
  if (api_.nvmlDeviceGetClockInfo) {
    if (api_.nvmlDeviceGetClockInfo(device_, kClockSm, &v) == kSuccess) r.sm_clock_mhz = v;
    if (api_.nvmlDeviceGetClockInfo(device_, kClockMem, &v) == kSuccess) r.mem_clock_mhz = v;
  }
  if (api_.nvmlDeviceGetPowerUsage && api_.nvmlDeviceGetPowerUsage(device_, &v) == kSuccess)
    r.power_w = v / 1000.0;
  if (api_.nvmlDeviceGetTemperature &&
      api_.nvmlDeviceGetTemperature(device_, kTemperatureGpu, &v) == kSuccess)
    r.temperature_c = v;
  unsigned long long reasons = 0;
  if (api_.nvmlDeviceGetCurrentClocksThrottleReasons &&
      api_.nvmlDeviceGetCurrentClocksThrottleReasons(device_, &reasons) == kSuccess)
    r.throttle_reasons = reasons;
  return r;
}

std::optional<double> Telemetry::energy_j(std::string* why) {
  if (!api_.nvmlDeviceGetTotalEnergyConsumption) {
    if (why) *why = "no energy counter: this NVML has no nvmlDeviceGetTotalEnergyConsumption";
    return std::nullopt;
  }
  unsigned long long mj = 0;
  const Return r = api_.nvmlDeviceGetTotalEnergyConsumption(device_, &mj);
  if (r != kSuccess) {
    if (why)
      *why = r == kErrorNotSupported
                 ? "no energy counter on this GPU (NVML: not supported; Volta and later have one)"
                 : "the energy counter could not be read: " + error(r);
    return std::nullopt;
  }
  return double(mj) / 1000.0;
}

}  // namespace tilesmith::nvml
