#pragma once
// Function tables for the CUDA driver API, NVRTC, cuBLAS and cuBLASLt, filled by dlopen/dlsym.
// The vendor headers give the types; the names resolved are the versioned ones the
// headers' macros select (cuMemAlloc -> cuMemAlloc_v2), so the table matches the ABI
// the code was compiled against. Loaded once per process; thread-safe after loading.

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <nvrtc.h>

#include <string>
#include <vector>

#include "base/status.h"

namespace tilesmith::cuda {

#define TS_CUDA_DRIVER_FUNCTIONS(X)                                                                  \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount)           \
  X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem)                       \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuStreamCreate)        \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) \
  X(cuMemcpyDtoDAsync) X(cuMemsetD32Async) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) \
  X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuEventCreate) X(cuEventRecord)      \
  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy) X(cuCtxGetLimit) X(cuMemGetInfo)      \
  X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuMemAllocHost) X(cuMemFreeHost)

#define TS_NVRTC_FUNCTIONS(X)                                                                       \
  X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram) X(nvrtcCompileProgram)                \
  X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN)              \
  X(nvrtcGetPTXSize) X(nvrtcGetPTX) X(nvrtcDestroyProgram)

// cublasGemmEx is overloaded in C++ (a compatibility inline), so it is declared apart.
#define TS_CUBLAS_FUNCTIONS(X) \
  X(cublasCreate) X(cublasDestroy) X(cublasSetStream) X(cublasGetVersion) X(cublasSetMathMode)

// cuBLASLt: the vendor baseline's matmul with fused epilogues (runtime/cuda/cublaslt_gemm.h).
#define TS_CUBLASLT_FUNCTIONS(X)                                                                     \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetVersion) X(cublasLtMatmulDescCreate)               \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)         \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulPreferenceCreate) \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute)                          \
  X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)

#define TS_DECLARE_FN(name) decltype(&::name) name = nullptr;

struct DriverApi {
  TS_CUDA_DRIVER_FUNCTIONS(TS_DECLARE_FN)
  // Tensor maps for TMA (drivers of CUDA 12 and later); null on older drivers.
  decltype(&::cuTensorMapEncodeTiled) cuTensorMapEncodeTiled = nullptr;
  std::string library_path;
};
struct NvrtcApi {
  TS_NVRTC_FUNCTIONS(TS_DECLARE_FN)
  std::string library_path;
};
struct CublasApi {
  TS_CUBLAS_FUNCTIONS(TS_DECLARE_FN)
  cublasStatus_t (*cublasGemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                 const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                 cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  std::string library_path;
};
struct CublasLtApi {
  TS_CUBLASLT_FUNCTIONS(TS_DECLARE_FN)
  std::string library_path;
};

// Each loads its library on first call and returns the same table afterwards, or
// unavailable with the loader's reasons (e.g. "libcuda.so.1: cannot open shared object
// file" on a machine without the NVIDIA driver).
Result<const DriverApi*> driver_api();
Result<const NvrtcApi*> nvrtc_api();
Result<const CublasApi*> cublas_api();
Result<const CublasLtApi*> cublaslt_api();

// Where to look for toolkit libraries (NVRTC, cuBLAS, cuBLASLt) that are not on the loader's path:
// the soname first, then $CUDA_HOME/lib64, $CUDA_PATH/lib64, the toolkit found at build
// time, /usr/local/cuda/lib64.
std::vector<std::string> toolkit_library_candidates(const std::string& soname);

}  // namespace tilesmith::cuda
