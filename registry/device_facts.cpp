#include "registry/device_facts.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "base/json_fields.h"

namespace tilesmith {

int fp32_lanes_for_arch(const std::string& arch) {
  // FP32 FMA units per SM / CU, from the vendors' architecture whitepapers. CDNA's
  // packed-FP32 doubling is left out: plain scalar FP32 code cannot use it.
  if (arch.rfind("sm_", 0) == 0) {
    int sm = std::atoi(arch.c_str() + 3);
    if (sm >= 100) return 128;
    if (sm == 90) return 128;
    if (sm == 86 || sm == 87 || sm == 89) return 128;
    if (sm == 80) return 64;
    if (sm == 75 || sm == 70 || sm == 72) return 64;
    return 0;
  }
  if (arch.rfind("gfx9", 0) == 0 || arch.rfind("gfx10", 0) == 0 || arch.rfind("gfx11", 0) == 0)
    return 64;
  return 0;
}

int half_matrix_flops_per_clock(const std::string& arch) {
  // Dense fp16/bf16 matrix FLOPs (fp32 accumulation) per clock per SM / CU, from the
  // vendors' datasheets: A100 312 TFLOP/s at 108 SMs x 1.41 GHz is 2048; H100 4096; GA10x
  // and AD10x professional parts 512; MI100 512, MI250X 1024, MI300X 2048.
  if (arch.rfind("sm_", 0) == 0) {
    int sm = std::atoi(arch.c_str() + 3);
    if (sm == 90) return 4096;
    if (sm == 80) return 2048;
    if (sm == 86 || sm == 89) return 512;
    if (sm == 87) return 1024;
    return 0;
  }
  if (arch.rfind("gfx908", 0) == 0) return 512;
  if (arch.rfind("gfx90a", 0) == 0) return 1024;
  if (arch.rfind("gfx94", 0) == 0) return 2048;
  return 0;
}

namespace {
// Whether the matrix units take FP8 (OCP e4m3/e5m2) at twice the half rate: Ada (sm_89),
// Hopper (sm_90) and the CDNA3/4 parts.
bool has_fp8_matrix_units(const std::string& arch) {
  return arch.rfind("sm_89", 0) == 0 || arch.rfind("sm_90", 0) == 0 || arch.rfind("gfx94", 0) == 0 ||
         arch.rfind("gfx95", 0) == 0;
}
}  // namespace

double DeviceFacts::peak_flops(DType input) const {
  const int rate = dtype_info(input).matrix_rate;
  if (rate == 0) return fp32_peak_flops();
  int per_clock = half_matrix_flops_per_clock(arch);
  if (per_clock == 0) return fp32_peak_flops();
  // Elsewhere FP8 inputs are converted and run at the half rate at best.
  const double factor = rate >= 2 && has_fp8_matrix_units(arch) ? 2.0 : 1.0;
  return double(multiprocessors) * per_clock * factor * double(clock_khz) * 1e3;
}

double DeviceFacts::fp32_peak_flops() const {
  int lanes = fp32_lanes_per_multiprocessor ? fp32_lanes_per_multiprocessor : fp32_lanes_for_arch(arch);
  return double(multiprocessors) * lanes * 2.0 * double(clock_khz) * 1e3;
}

double DeviceFacts::theoretical_bandwidth() const {
  return 2.0 * double(memory_clock_khz) * 1e3 * double(memory_bus_bits) / 8.0;
}

std::string DeviceFacts::fingerprint() const {
  return name + "|" + arch + "|driver " + driver_version + "|rtc " + runtime_version;
}

DeviceFacts nominal_facts_for_arch(const std::string& arch) {
  DeviceFacts f;
  f.arch = arch;
  f.name = "(compile only: " + arch + ")";
  if (arch.rfind("gfx", 0) == 0) {
    f.backend = "hip";
    f.warp_size = arch.rfind("gfx9", 0) == 0 ? 64 : 32;
    f.shared_per_block = f.shared_per_block_optin = 64 * 1024;
  } else {
    f.backend = "cuda";
    f.warp_size = 32;
    int sm = arch.rfind("sm_", 0) == 0 ? std::atoi(arch.c_str() + 3) : 0;
    f.shared_per_block = 48 * 1024;
    f.shared_per_block_optin = sm >= 90 ? 227 * 1024 : sm >= 80 ? 163 * 1024 : 48 * 1024;
  }
  f.fp32_lanes_per_multiprocessor = fp32_lanes_for_arch(arch);
  return f;
}

// The one codec: the journal, best_config.json and the worker wire all write this form.
// The derived fp32_peak_tflops and fingerprint are for readers; the decoder ignores them.
void to_json(nlohmann::json& j, const DeviceFacts& d) {
  j = nlohmann::json{{"backend", d.backend},
                     {"ordinal", d.ordinal},
                     {"name", d.name},
                     {"arch", d.arch},
                     {"multiprocessors", d.multiprocessors},
                     {"warp_size", d.warp_size},
                     {"max_threads_per_block", d.max_threads_per_block},
                     {"shared_per_block", d.shared_per_block},
                     {"shared_per_block_optin", d.shared_per_block_optin},
                     {"registers_per_block", d.registers_per_block},
                     {"registers_per_multiprocessor", d.registers_per_multiprocessor},
                     {"l2_bytes", d.l2_bytes},
                     {"global_memory_bytes", d.global_memory_bytes},
                     {"clock_khz", d.clock_khz},
                     {"memory_clock_khz", d.memory_clock_khz},
                     {"memory_bus_bits", d.memory_bus_bits},
                     {"driver_version", d.driver_version},
                     {"runtime_version", d.runtime_version},
                     {"fp32_lanes_per_multiprocessor", d.fp32_lanes_per_multiprocessor},
                     {"fp32_peak_tflops", d.fp32_peak_flops() / 1e12},
                     {"fingerprint", d.fingerprint()}};
}

Result<DeviceFacts> device_facts_from_json(const nlohmann::json& j) {
  DeviceFacts d;
  FieldReader f(j, "device");
  f.get("backend", d.backend);
  f.get("ordinal", d.ordinal);
  f.get("name", d.name);
  f.get("arch", d.arch);
  f.get("multiprocessors", d.multiprocessors);
  f.get("warp_size", d.warp_size);
  f.get("max_threads_per_block", d.max_threads_per_block);
  f.get("shared_per_block", d.shared_per_block);
  f.get("shared_per_block_optin", d.shared_per_block_optin);
  f.get("registers_per_block", d.registers_per_block);
  f.get("registers_per_multiprocessor", d.registers_per_multiprocessor);
  f.get("l2_bytes", d.l2_bytes);
  f.get("global_memory_bytes", d.global_memory_bytes);
  f.get("clock_khz", d.clock_khz);
  f.get("memory_clock_khz", d.memory_clock_khz);
  f.get("memory_bus_bits", d.memory_bus_bits);
  f.get("driver_version", d.driver_version);
  f.get("runtime_version", d.runtime_version);
  f.get("fp32_lanes_per_multiprocessor", d.fp32_lanes_per_multiprocessor);
  if (f.status().ok() && d.backend.empty()) f.fail("backend is missing");
  if (!f.status().ok()) return f.status();
  return d;
}

}  // namespace tilesmith
