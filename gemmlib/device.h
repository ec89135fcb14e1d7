#pragma once
// The GPU side of the library behind a small interface: launching a package kernel and
// calling the vendor library on the caller's stream, with the caller's device pointers.
// Implementations are thread-safe (see docs/gemm-library.md, "Threads").

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "gemmlib/dispatch.h"
#include "gemmlib/package.h"
#include "registry/device_facts.h"
#include "registry/problem.h"

namespace tilesmith::gemmlib {

// level: 0 information (a decision, a kernel's origin), 1 warning (a package binary that
// could not be used, files changed after export).
using LogSink = std::function<void(int level, const std::string& line)>;

struct GemmArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  const void* bias = nullptr;
  void* stream = nullptr;  // CUstream / hipStream_t; nullptr: the default stream
};

class GemmDevice {
 public:
  virtual ~GemmDevice() = default;
  virtual const DeviceFacts& facts() const = 0;
  // Enqueues the decision's kernel (loaded on first use: package binary, else compiled).
  virtual Status launch(const Package& pkg, const Launch& launch, const GemmProblem& problem,
                        const GemmArgs& args) = 0;
  // Enqueues the vendor library's GEMM. unimplemented when it cannot do the problem.
  virtual Status vendor(const GemmProblem& problem, const GemmArgs& args) = 0;
};

struct DeviceOptions {
  std::filesystem::path cache_dir;  // for compiled fallbacks
  LogSink log;                      // never null
};

// Opens device `ordinal` of `backend` ("cuda"). unavailable (naming the driver's error)
// where the driver or the device is missing; unimplemented for a backend this build
// cannot run (built without CUDA; AMD packages).
Result<std::unique_ptr<GemmDevice>> open_gemm_device(const std::string& backend, int ordinal,
                                                     const DeviceOptions& options);

}  // namespace tilesmith::gemmlib
