#pragma once
// GPU backends, discovered at run time: each loads its vendor libraries with dlopen, so
// one binary starts on a machine with either vendor's driver, both, or none, and says
// why a backend is unavailable instead of failing to load.

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "registry/device_facts.h"
#include "runtime/compiler.h"
#include "runtime/gpu_device.h"

namespace tilesmith {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cuda", "hip"
  // Devices found; unavailable with the reason when the driver or runtime is missing or
  // finds no GPU. Never throws.
  virtual Result<std::vector<DeviceFacts>> devices() = 0;
  // The run-time compiler, which works without a GPU. unavailable with the reason.
  virtual Result<std::shared_ptr<Compiler>> compiler() = 0;
  virtual Result<std::unique_ptr<GpuDevice>> open_device(int ordinal) = 0;
};

std::unique_ptr<Backend> make_cuda_backend();
std::unique_ptr<Backend> make_hip_backend();
// "cuda" or "hip"; invalid_argument for anything else.
Result<std::unique_ptr<Backend>> make_backend(const std::string& name);

}  // namespace tilesmith
