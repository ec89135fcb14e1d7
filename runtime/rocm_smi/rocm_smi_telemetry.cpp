#include "runtime/rocm_smi/rocm_smi_telemetry.h"

#include <cstring>

#include "runtime/detail/dynamic_library.h"

namespace tilesmith::rocm_smi {

Result<const Api*> api() {
  return detail::load_api_once<Api>(
      {"librocm_smi64.so.1", "librocm_smi64.so", "/opt/rocm/lib/librocm_smi64.so.1"},
      [](Api& a, detail::SymbolLoader& l) {
        l.load(a.rsmi_init, "rsmi_init");
        l.load(a.rsmi_shut_down, "rsmi_shut_down");
        l.load(a.rsmi_num_monitor_devices, "rsmi_num_monitor_devices");
        l.load(a.rsmi_dev_pci_id_get, "rsmi_dev_pci_id_get");
        l.load_optional(a.rsmi_status_string, "rsmi_status_string");
        l.load_optional(a.rsmi_version_get, "rsmi_version_get");
        l.load_optional(a.rsmi_dev_gpu_clk_freq_get, "rsmi_dev_gpu_clk_freq_get");
        l.load_optional(a.rsmi_dev_power_ave_get, "rsmi_dev_power_ave_get");
        l.load_optional(a.rsmi_dev_temp_metric_get, "rsmi_dev_temp_metric_get");
        l.load_optional(a.rsmi_dev_energy_count_get, "rsmi_dev_energy_count_get");
      });
}

std::uint64_t bdf_id(int domain, int bus, int device, int function) {
  return (std::uint64_t(std::uint32_t(domain)) << 32) | (std::uint64_t(bus & 0xff) << 8) |
         (std::uint64_t(device & 0x1f) << 3) | std::uint64_t(function & 0x7);
}

namespace {

// One layout of rsmi_frequencies_t: where its count, current index and table start.
struct Layout {
  std::size_t count, current, table;
};
constexpr Layout kRocm5{0, 4, 8};    // {uint32 num_supported; uint32 current; uint64 frequency[32]}
constexpr Layout kRocm6{4, 8, 16};   // {bool has_deep_sleep; uint32 ...; uint32 ...; uint64 frequency[32]}

std::optional<double> read_layout(const unsigned char* b, const Layout& l) {
  std::uint32_t count = 0, current = 0;
  std::memcpy(&count, b + l.count, 4);
  std::memcpy(&current, b + l.current, 4);
  if (count < 1 || count > std::uint32_t(kMaxFrequencies) || current >= count) return std::nullopt;
  std::uint64_t hz = 0;
  std::memcpy(&hz, b + l.table + 8 * current, 8);
  if (hz < 10'000'000ull || hz > 10'000'000'000ull) return std::nullopt;
  return double(hz) / 1e6;
}

// "error 8 (RSMI_STATUS_...)": the code and, where the library names it, its name.
std::string describe(const Api& api, Return r) {
  const char* s = nullptr;
  if (api.rsmi_status_string) api.rsmi_status_string(r, &s);
  return "error " + std::to_string(r) + (s ? std::string(" (") + s + ")" : std::string());
}

}  // namespace

std::optional<double> clock_mhz(const unsigned char* bytes, std::uint32_t major) {
  const Layout& first = major >= 6 ? kRocm6 : kRocm5;
  const Layout& second = major >= 6 ? kRocm5 : kRocm6;
  if (auto mhz = read_layout(bytes, first)) return mhz;
  return read_layout(bytes, second);
}

std::string Telemetry::error(Return r) const { return "ROCm SMI " + describe(api_, r); }

Result<std::unique_ptr<Telemetry>> Telemetry::open(const Api& api, std::uint64_t bdfid) {
  if (!api.rsmi_init || !api.rsmi_shut_down || !api.rsmi_num_monitor_devices || !api.rsmi_dev_pci_id_get)
    return Status::unavailable("ROCm SMI: the library lacks rsmi_init, rsmi_shut_down or the device lookup");
  auto named = [&](const char* call, Return r) { return std::string("ROCm SMI: ") + call + " failed: " + describe(api, r); };
  if (Return r = api.rsmi_init(0); r != kSuccess) return Status::unavailable(named("rsmi_init", r));
  std::uint32_t count = 0;
  if (Return r = api.rsmi_num_monitor_devices(&count); r != kSuccess) {
    api.rsmi_shut_down();
    return Status::unavailable(named("rsmi_num_monitor_devices", r));
  }
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint64_t id = 0;
    // The function bits vary with partitioning modes: the device is the same.
    if (api.rsmi_dev_pci_id_get(i, &id) == kSuccess && (id >> 3) == (bdfid >> 3)) {
      Version v;
      if (api.rsmi_version_get) api.rsmi_version_get(&v);
      return std::unique_ptr<Telemetry>(new Telemetry(api, i, v.major));
    }
  }
  api.rsmi_shut_down();
  char want[32];
  std::snprintf(want, sizeof want, "%04x:%02x:%02x", unsigned(bdfid >> 32), unsigned((bdfid >> 8) & 0xff),
                unsigned((bdfid >> 3) & 0x1f));
  return Status::unavailable("ROCm SMI: none of its " + std::to_string(count) + " devices is at PCI address " +
                             want);
}

Telemetry::~Telemetry() { api_.rsmi_shut_down(); }

TelemetryReading Telemetry::read() {
  TelemetryReading r;
  if (api_.rsmi_dev_gpu_clk_freq_get) {
    alignas(8) unsigned char table[kFrequenciesBytes] = {};
    if (api_.rsmi_dev_gpu_clk_freq_get(index_, kClockSys, table) == kSuccess) r.sm_clock_mhz = clock_mhz(table, major_);
    std::memset(table, 0, sizeof table);
    if (api_.rsmi_dev_gpu_clk_freq_get(index_, kClockMem, table) == kSuccess)
      r.mem_clock_mhz = clock_mhz(table, major_);
  }
  std::uint64_t uw = 0;
  if (api_.rsmi_dev_power_ave_get && api_.rsmi_dev_power_ave_get(index_, 0, &uw) == kSuccess) r.power_w = uw / 1e6;
  std::int64_t mc = 0;
  if (api_.rsmi_dev_temp_metric_get &&
      api_.rsmi_dev_temp_metric_get(index_, kTemperatureJunction, kTemperatureCurrent, &mc) == kSuccess)
    r.temperature_c = mc / 1000.0;
  return r;
}

std::optional<double> Telemetry::energy_j(std::string* why) {
  if (!api_.rsmi_dev_energy_count_get) {
    if (why) *why = "no energy counter: this ROCm SMI has no rsmi_dev_energy_count_get";
    return std::nullopt;
  }
  std::uint64_t counter = 0, timestamp = 0;
  float resolution_uj = 0;
  const Return r = api_.rsmi_dev_energy_count_get(index_, &counter, &resolution_uj, &timestamp);
  if (r != kSuccess) {
    if (why)
      *why = r == kNotSupported ? "no energy counter on this GPU (ROCm SMI: not supported; MI100 and later have one)"
                                : "the energy counter could not be read: " + error(r);
    return std::nullopt;
  }
  if (!(resolution_uj > 0)) {
    if (why) *why = "the energy counter gave no resolution";
    return std::nullopt;
  }
  return double(counter) * double(resolution_uj) * 1e-6;
}

}  // namespace tilesmith::rocm_smi
