#include "runtime/gpu_device.h"

#include <algorithm>

#include "runtime/gpu_error.h"

namespace tilesmith {

std::optional<std::string> allow_dynamic_shared(GpuFunction& fn, std::int64_t dynamic, std::int64_t optin_limit) {
  const std::int64_t static_bytes = std::max<std::int64_t>(fn.attributes().static_shared_bytes, 0);
  if (dynamic + static_bytes <= kSharedBytesWithoutOptIn) return std::nullopt;
  if (dynamic + static_bytes > optin_limit)
    return "needs " + std::to_string(dynamic) + " bytes of dynamic shared memory (and " + std::to_string(static_bytes) +
           " static); the device allows " + std::to_string(optin_limit);
  fn.set_max_dynamic_shared(dynamic);
  return std::nullopt;
}

// Backends without a tensor memory accelerator (HIP) keep this answer; rendering already
// refuses tensor-map templates off NVIDIA sm_90+, so reaching it means a mismatch.
void GpuDevice::encode_tensor_map(const TensorMapSpec& spec, DevicePtr, void*) {
  throw GpuError(facts().backend, -1, "unsupported", "encode_tensor_map", __FILE__, __LINE__, false,
                 "this backend has no tensor maps (" + describe(spec) + ")");
}

}  // namespace tilesmith
