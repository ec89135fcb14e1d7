#pragma once
// What we know about one GPU: enough to check configs against limits, compute peaks,
// build the LLM prompt and key results by device.

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "registry/dtype.h"

namespace tilesmith {

struct DeviceFacts {
  std::string backend;        // "cuda", "hip", "replay"
  int ordinal = 0;
  std::string name;           // "NVIDIA H200"
  std::string arch;           // "sm_90", "gfx90a"
  int multiprocessors = 0;    // SMs (NVIDIA) or CUs (AMD)
  int warp_size = 32;         // 32 NVIDIA, 64 AMD CDNA
  int max_threads_per_block = 1024;
  std::int64_t shared_per_block = 48 * 1024;        // default static limit
  std::int64_t shared_per_block_optin = 48 * 1024;  // with the opt-in attribute
  int registers_per_block = 65536;
  int registers_per_multiprocessor = 65536;
  std::int64_t l2_bytes = 0;
  std::int64_t global_memory_bytes = 0;
  int clock_khz = 0;          // peak SM clock
  int memory_clock_khz = 0;
  int memory_bus_bits = 0;
  std::string driver_version;   // "13.0" / "580.159.04" / HIP runtime version
  std::string runtime_version;  // NVRTC / hipRTC version
  int fp32_lanes_per_multiprocessor = 0;  // FMA units per SM/CU, from the architecture

  // FP32 FMA peak in FLOP/s: SMs * lanes * 2 * clock. 0 when unknown.
  double fp32_peak_flops() const;
  // The peak for a GEMM with inputs of this type: fp32_peak_flops() for fp32; the dense
  // matrix-unit peak (fp32 accumulation) for fp16/bf16 where the architecture is known,
  // twice that for e4m3/e5m2 where the matrix units take FP8 (sm_89, sm_90, gfx94x, gfx95x;
  // the half peak on other known architectures), else fp32_peak_flops().
  double peak_flops(DType input) const;
  // From memory clock and bus width (DDR); a lead only: the evaluator measures bandwidth.
  double theoretical_bandwidth() const;
  // name|arch|driver|runtime: what results are keyed by.
  std::string fingerprint() const;
};

// FP32 lanes per multiprocessor for an architecture string; 0 when unknown.
int fp32_lanes_for_arch(const std::string& arch);
// Dense fp16/bf16 matrix FLOPs per clock per multiprocessor; 0 when unknown.
int half_matrix_flops_per_clock(const std::string& arch);

// Facts for compiling without a device ("sm_90", "gfx90a"): backend, arch, warp size
// (64 on GCN/CDNA gfx9, 32 elsewhere) and the architecture's usual limits.
DeviceFacts nominal_facts_for_arch(const std::string& arch);

// The one JSON form of DeviceFacts (journal, best_config.json, worker wire): every field,
// plus the derived fp32_peak_tflops and fingerprint for readers. The decoder is strict
// about types, tolerant of missing fields (they keep their defaults) and of the derived
// ones; parse_error for a wrong type or a missing backend.
void to_json(nlohmann::json& j, const DeviceFacts& d);
Result<DeviceFacts> device_facts_from_json(const nlohmann::json& j);

}  // namespace tilesmith
