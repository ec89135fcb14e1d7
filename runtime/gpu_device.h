#pragma once
// One opened GPU behind a small vendor-neutral interface. Every method that talks to
// the GPU throws GpuError on failure (the evaluator catches it once per candidate).
// Not thread-safe: one thread (one worker) drives one device. All work goes to one
// stream, in order.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "registry/device_facts.h"
#include "registry/problem.h"
#include "registry/tensor_map.h"
#include "runtime/evaluation.h"
#include "runtime/telemetry.h"

namespace tilesmith {

using DevicePtr = std::uint64_t;

// A loaded kernel function: what the runtime says about it.
struct FunctionAttributes {
  int registers = -1;
  std::int64_t static_shared_bytes = -1;
  std::int64_t local_bytes = -1;
  int max_threads_per_block = -1;
};

class GpuFunction {
 public:
  virtual ~GpuFunction() = default;
  virtual FunctionAttributes attributes() const = 0;
  // Raises the dynamic shared-memory limit (allow_dynamic_shared decides when it is needed).
  virtual void set_max_dynamic_shared(std::int64_t bytes) = 0;
};

// The shared memory a block gets without the opt-in attribute (CUDA and HIP): static and dynamic
// together, so a kernel with static shared memory needs the opt-in below 48 KiB of dynamic.
inline constexpr std::int64_t kSharedBytesWithoutOptIn = 48 * 1024;

// Lets `fn` launch with `dynamic` bytes of dynamic shared memory: opts in where its static and
// dynamic shared memory together exceed the default, or says why not (how much both need and what
// the device allows, `optin_limit`: DeviceFacts::shared_per_block_optin). Empty: launch as it is.
std::optional<std::string> allow_dynamic_shared(GpuFunction& fn, std::int64_t dynamic, std::int64_t optin_limit);

// Owns a loaded module; unloads it on destruction. Functions live as long as it.
class GpuModule {
 public:
  virtual ~GpuModule() = default;
  virtual GpuFunction& function(const std::string& name) = 0;
};

class GpuEvent {
 public:
  virtual ~GpuEvent() = default;
};

class GpuDevice {
 public:
  virtual ~GpuDevice() = default;
  virtual const DeviceFacts& facts() const = 0;

  virtual DevicePtr alloc(std::size_t bytes) = 0;
  virtual void free(DevicePtr p) noexcept = 0;
  virtual void copy_to_device(DevicePtr dst, const void* src, std::size_t bytes) = 0;  // synchronous
  virtual void copy_to_host(void* dst, DevicePtr src, std::size_t bytes) = 0;          // synchronous
  virtual void copy_on_device(DevicePtr dst, DevicePtr src, std::size_t bytes) = 0;    // async, on the stream
  virtual void fill_u32(DevicePtr dst, std::uint32_t value, std::size_t count) = 0;    // async, on the stream
  // Page-locked host memory, which device-to-host copies fill several times faster than
  // pageable memory (the output check copies all of C for every candidate). nullptr where
  // the backend has none or the allocation fails: callers fall back to ordinary memory.
  virtual void* alloc_host(std::size_t) noexcept { return nullptr; }
  virtual void free_host(void*) noexcept {}

  virtual std::unique_ptr<GpuModule> load_module(const std::string& binary) = 0;
  // Async launch on the stream; args as the kernel ABI expects (pointers to values).
  virtual void launch(GpuFunction& fn, std::array<std::uint32_t, 3> grid, std::array<std::uint32_t, 3> block,
                      std::uint64_t dynamic_shared_bytes, void** args) = 0;
  // Writes the tensor map of `spec` over the buffer at `base` into out (kTensorMapBytes,
  // 64-byte aligned), as a kernel takes it by value. Throws GpuError where the backend has
  // no tensor maps or the driver refuses this one.
  static constexpr std::size_t kTensorMapBytes = 128;
  virtual void encode_tensor_map(const TensorMapSpec& spec, DevicePtr base, void* out);
  // Waits for the stream and throws the first error it reports (faults show up here).
  virtual void synchronize() = 0;

  virtual std::unique_ptr<GpuEvent> create_event() = 0;
  virtual void record(GpuEvent& e) = 0;
  // Milliseconds between two recorded events (waits for `end`).
  virtual float elapsed_ms(GpuEvent& start, GpuEvent& end) = 0;

  // The vendor BLAS, for the baseline: C = epilogue(alpha*op(A)*op(B) + beta*C) on the
  // stream, for the problem's types and layouts, with fp32 accumulation. Buffers hold the
  // problem's element types (registry/dtype.h); bias (C's type, M or N entries) is 0 when
  // the problem has none. Where the library fuses the problem's epilogue it is fused, so
  // fused is compared with fused; invalid_argument (saying so) where it cannot be, so the
  // caller can time the plain GEMM instead; unavailable when there is no library. A
  // block-scaled FP8 problem (Scaling::kBlock) also hands over its scale grids as the host holds
  // them (VendorBlockScales); the backend lays them out for its library and keeps the copy on the
  // device while the grids stay the same.
  struct VendorBlockScales {
    const std::vector<float>* a = nullptr;  // M x ceil(K/128), row-major
    const std::vector<float>* b = nullptr;  // ceil(K/128) x ceil(N/128), row-major
  };
  virtual Status vendor_gemm(const GemmProblem& problem, DevicePtr a, DevicePtr b, DevicePtr c, DevicePtr bias,
                             const VendorBlockScales& scales) = 0;
  virtual std::string vendor_name() const = 0;

  // The device's clocks, power, temperature and energy counter (runtime/telemetry.h), or
  // unavailable saying why (no NVML, a backend that reads none). Called once per
  // evaluator; the source is used from the evaluator's thread.
  virtual Result<std::unique_ptr<TelemetrySource>> open_telemetry() {
    return Status::unavailable("this backend reads no telemetry");
  }
};

// A device allocation that frees itself. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(GpuDevice& dev, std::size_t bytes) : dev_(&dev), ptr_(dev.alloc(bytes)), bytes_(bytes) {}
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : dev_(o.dev_), ptr_(o.ptr_), bytes_(o.bytes_) { o.dev_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      dev_ = o.dev_;
      ptr_ = o.ptr_;
      bytes_ = o.bytes_;
      o.dev_ = nullptr;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void reset() noexcept {
    if (dev_) dev_->free(ptr_);
    dev_ = nullptr;
    ptr_ = 0;
    bytes_ = 0;
  }
  DevicePtr get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return dev_ != nullptr; }

 private:
  GpuDevice* dev_ = nullptr;
  DevicePtr ptr_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace tilesmith
