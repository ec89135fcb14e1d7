#pragma once
// The read floor of a GEMM problem: the fastest way this process finds to read the
// problem's operands once (A and B, and C when beta != 0), timed exactly as kernels are
// (GpuEvaluator: warm-up by time, L2 flushed before every sample, median). A kernel
// that reads its inputs once cannot be faster than this, so for the bandwidth-bound
// shapes (small M) "% of floor" = floor / kernel time says how close a GEMM is to what
// the memory allows, measured on the same clock as the kernel and the vendor library.
//
// "Fastest way found" is a sweep, not one kernel: plain vector loads of 4, 8 or 16 bytes
// over a grid-stride loop with 2–8 blocks per SM (a persistent grid) or one contiguous
// chunk per block (a grid as large as the data), 4–16 loads in flight per thread, with
// and without L2 hints on NVIDIA (a 256-byte prefetch, an evict-first policy), and on
// NVIDIA sm_90+ bulk copies (cp.async.bulk, the TMA's 1-D form) into a ring of shared
// memory stages. Every variant's result is a 32-bit sum of every word it read: a check
// run compares it with the sum computed here, so a variant that skips data (or reads it
// twice) is rejected, and in the timed runs the sum decides a store the compiler cannot
// drop. Each variant is screened with a short timing; the fastest few are timed again
// with the evaluator's full timing and the fastest of those is the floor.
//
// The floor is an honest lower bound only as far as the sweep goes: the caller should
// compare it with the kernels it measures (bench-best flags a GEMM faster than the
// floor: then the floor is not one).
//
// The source of the read kernels is generated in read_floor_kernels.cpp (read_floor_source) and compiled
// through the backend's run-time compiler like a template (NVRTC for sm_XX, hipRTC for
// gfx targets; the L2 hints and bulk copies are NVIDIA-only and left out elsewhere).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "registry/device_facts.h"
#include "registry/problem.h"
#include "runtime/evaluation.h"

namespace tilesmith {

class Compiler;
class GpuDevice;
struct TimingOptions;

// The bytes a GEMM must read once: A, B, and C when beta != 0 (the bias, at most M or N
// elements, is left out). C's writes are not part of a read floor.
struct ReadBytes {
  std::uint64_t a = 0, b = 0, c = 0;
  std::uint64_t total() const { return a + b + c; }
};
ReadBytes read_floor_bytes(const GemmProblem& problem);

// The sum the read kernels compute over a buffer: its bytes as little-endian 32-bit
// words (the last one padded with zero bytes) added modulo 2^32.
std::uint32_t read_floor_checksum(const void* bytes, std::uint64_t count);

// floor / kernel time in percent (100: the kernel runs as fast as the read; above 100:
// the kernel beat the floor, which is then no floor). 0 when either is not positive.
double percent_of_floor(double floor_ms, double kernel_ms);

// One way of reading, as the sweep runs it.
struct ReadFloorVariant {
  enum class Kind { kStrided, kChunked, kBulk };
  Kind kind = Kind::kStrided;
  int vec_bytes = 16;      // bytes per load (4, 8, 16); 16 for bulk copies
  int unroll = 4;          // loads in flight per thread per step (strided, chunked)
  int threads = 256;       // per block
  int blocks_per_sm = 4;   // strided and bulk: the grid is SMs x this; chunked: unused
  int hint = 0;            // 0 none, 1 L2 256-byte prefetch, 2 L2 evict-first, 3 both
  int stages = 0;          // bulk: shared-memory stages
  int chunk_bytes = 0;     // bulk: bytes per copy (a stage)
  std::string name() const;   // "stride16_u8_t256_b4", "chunk16_u4_t256_pf256", "bulk32k_s6_b1"
  std::string entry() const;  // the kernel's name: "ts_read_" + name()
  // The blocks per SM the kernel is compiled for (its launch bounds): blocks_per_sm, or
  // for chunked grids enough blocks for 8192 loads in flight per SM.
  int min_blocks_per_sm() const;
  std::uint64_t dynamic_shared_bytes() const;  // bulk: stages x chunk; else 0
  // Blocks to launch over `bytes` (all segments) on `multiprocessors` SMs; at least 1.
  std::uint64_t grid(const ReadBytes& bytes, int multiprocessors) const;
};

// The sweep for a device: every variant its backend and architecture can run (no L2
// hints off NVIDIA sm_80+, no bulk copies off NVIDIA sm_90+, shared memory within the
// device's opt-in limit).
std::vector<ReadFloorVariant> read_floor_variants(const DeviceFacts& device);

// The kernels' source for these variants: shared code plus one extern "C" entry per
// variant. Compiles with the template macros the backend passes (TS_VENDOR_NVIDIA or
// TS_VENDOR_AMD).
std::string read_floor_source(const std::vector<ReadFloorVariant>& variants);
// The compile options beside the compiler's own (-DTS_VENDOR_..., -DTS_WARP_SIZE=...).
std::vector<std::string> read_floor_compile_options(const DeviceFacts& device);

struct ReadFloorVariantResult {
  std::string name;
  Outcome outcome = Outcome::kOk;  // ok, wrong_result (checksum), launch_error, resource_error
  std::string message;
  double screen_ms = 0;  // the short timing's median (ok only)
  double final_ms = 0;   // the full timing's median, for the finalists; 0 otherwise
};

struct ReadFloor {
  ReadBytes bytes;
  std::string variant;  // the fastest
  TimingStats timing;   // its full timing
  double gbps = 0;      // bytes.total() / median
  double compile_ms = 0;
  bool compile_cache_hit = false;
  std::vector<ReadFloorVariantResult> variants;  // in sweep order
};

void to_json(nlohmann::json& j, const ReadFloor& f);
Result<ReadFloor> read_floor_from_json(const nlohmann::json& j);

// What to read: device buffers of the problem's operands (ptr 0 where bytes is 0) and the
// checksum of their contents.
struct ReadTarget {
  std::uint64_t ptr[3] = {0, 0, 0};  // A, B, C (DevicePtr)
  ReadBytes bytes;
  std::uint32_t checksum = 0;  // read_floor_checksum of A + B + C
};

struct ReadFloorOptions {
  int finalists = 3;  // variants timed again with the full timing
  // The screening: a short warm-up and at most this much sampling per variant.
  double screen_warmup_ms = 5;
  int screen_min_samples = 10;
  int screen_max_samples = 100;
  double screen_max_sampling_ms = 50;
};

// How the evaluator times a launch (its warm-up, L2 flush and sampling).
using TimeLaunches = std::function<TimingStats(const std::function<void()>& launch, const TimingOptions& options)>;

// Compiles the sweep (through `compiler`, so the cache applies), checks every variant's
// sum, screens, and times the finalists with `full`. Errors: internal when the sweep
// does not compile or no variant reads the data correctly (the message lists each
// variant's outcome). Throws GpuError only for a sticky error (the context is lost);
// other GPU errors cost the variant they hit.
Result<ReadFloor> measure_read_floor(GpuDevice& device, Compiler& compiler, const ReadTarget& target,
                                     const TimingOptions& full, const TimeLaunches& time,
                                     const ReadFloorOptions& options = {});

}  // namespace tilesmith
