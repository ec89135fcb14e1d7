#include "runtime/gpu_device.h"

#include "runtime/gpu_error.h"

namespace tilesmith {

// Backends without a tensor memory accelerator (HIP) keep this answer; rendering already
// refuses tensor-map templates off NVIDIA sm_90+, so reaching it means a mismatch.
void GpuDevice::encode_tensor_map(const TensorMapSpec& spec, DevicePtr, void*) {
  throw GpuError(facts().backend, -1, "unsupported", "encode_tensor_map", __FILE__, __LINE__, false,
                 "this backend has no tensor maps (" + describe(spec) + ")");
}

}  // namespace tilesmith
