#include "runtime/cuda/tensor_map_encode.h"

#include <cstring>

#include "runtime/cuda/cu_check.h"

namespace tilesmith::cuda {
namespace {

CUtensorMapDataType tensor_map_type(DType t) {
  switch (t) {
    case DType::kF16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::kBF16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    // TMA copies FP8 as bytes: it never converts, and no tensor-map type names FP8.
    case DType::kE4M3:
    case DType::kE5M2: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    case DType::kF32: break;  // every type named: a new one is a compile error here, not fp32
  }
  return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

CUtensorMapSwizzle tensor_map_swizzle(int bytes) {
  switch (bytes) {
    case 32: return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128: return CU_TENSOR_MAP_SWIZZLE_128B;
    default: return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

}  // namespace

Status encode_tensor_map(const DriverApi& api, const TensorMapSpec& spec, CUdeviceptr base, CUtensorMap* out) {
  if (spec.unused) {  // the config reads nothing through it (its declaration's "when" was 0)
    std::memset(out, 0, sizeof(CUtensorMap));
    return {};
  }
  if (!api.cuTensorMapEncodeTiled)
    return Status::unavailable("the NVIDIA driver has no cuTensorMapEncodeTiled (it predates CUDA 12); update the "
                               "driver to run kernels that read through tensor maps");
  cuuint64_t dims[2] = {spec.dims[0], spec.dims[1]};
  cuuint64_t strides[1] = {spec.row_stride_bytes};
  cuuint32_t box[2] = {spec.box[0], spec.box[1]};
  cuuint32_t elem_strides[2] = {1, 1};
  // 256-byte L2 promotion: a box's 128-byte rows are read as whole L2 lines.
  CUresult rc = api.cuTensorMapEncodeTiled(out, tensor_map_type(spec.dtype), 2, reinterpret_cast<void*>(base), dims,
                                           strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                           tensor_map_swizzle(spec.swizzle_bytes), CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (rc == CUDA_SUCCESS) return {};
  return Status::internal(
      std::string(cu_failure(api, rc, "cuTensorMapEncodeTiled", __FILE__, __LINE__).what()) +
      " for " + describe(spec) + (base % 16 ? " at an address not 16-byte aligned" : ""));
}

}  // namespace tilesmith::cuda
