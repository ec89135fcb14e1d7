#include "runtime/cuda/cu_check.h"

namespace tilesmith::cuda {

bool is_sticky(CUresult rc) {
  switch (rc) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

bool is_resource(CUresult rc) {
  return rc == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES || rc == CUDA_ERROR_OUT_OF_MEMORY ||
         rc == CUDA_ERROR_INVALID_VALUE;  // block or shared memory beyond the function's limit
}

GpuError cu_failure(const DriverApi& api, CUresult rc, const char* call, const char* file,
                    int line) {
  const char* name = nullptr;
  const char* text = nullptr;
  api.cuGetErrorName(rc, &name);
  api.cuGetErrorString(rc, &text);
  return GpuError("CUDA", static_cast<int>(rc), name ? name : "?", call, file, line, is_sticky(rc),
                  text ? text : "", is_resource(rc));
}

}  // namespace tilesmith::cuda
