#pragma once
// Encodes a template's tensor map (registry/tensor_map.h) with the driver's
// cuTensorMapEncodeTiled: two dimensions, zero fill outside the matrix. Shared by the
// tuning backend and libtilesmith_gemm, so both launch a TMA kernel with the same map.

#include <cuda.h>

#include "base/status.h"
#include "registry/tensor_map.h"
#include "runtime/cuda/cuda_api.h"

namespace tilesmith::cuda {

// out: a CUtensorMap (128 bytes, 64-byte aligned). unavailable where the driver predates
// tensor maps; internal with the driver's error and the map where it refuses one.
Status encode_tensor_map(const DriverApi& api, const TensorMapSpec& spec, CUdeviceptr base, CUtensorMap* out);

}  // namespace tilesmith::cuda
