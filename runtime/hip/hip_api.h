#pragma once
// Function tables for the HIP runtime and hipRTC, filled by dlopen/dlsym (see
// cuda/cuda_api.h for why). hipRTC lives inside libamdhip64 up to ROCm 5 and in
// libhiprtc from ROCm 6; both places are tried. Loaded once; thread-safe afterwards.

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>

#include <string>

#include "base/status.h"
#include "runtime/hip/hipblas_gemm_ex.h"

namespace tilesmith::hip {

#define TS_HIP_RUNTIME_FUNCTIONS(X)                                                                    \
  X(hipInit) X(hipDriverGetVersion) X(hipRuntimeGetVersion) X(hipGetDeviceCount) X(hipGetDeviceProperties) \
  X(hipSetDevice) X(hipStreamCreateWithFlags) X(hipStreamDestroy) X(hipStreamSynchronize)                  \
  X(hipFree) X(hipMemcpyHtoD) X(hipMemcpyDtoH) X(hipMemcpyDtoDAsync) X(hipMemsetD32Async)                \
  X(hipModuleLoadData) X(hipModuleUnload) X(hipModuleGetFunction) X(hipFuncGetAttribute)                 \
  X(hipModuleLaunchKernel) X(hipEventCreate) X(hipEventRecord) X(hipEventSynchronize)                   \
  X(hipEventElapsedTime) X(hipEventDestroy) X(hipGetErrorName) X(hipGetErrorString)

#define TS_HIPRTC_FUNCTIONS(X)                                                                          \
  X(hiprtcVersion) X(hiprtcGetErrorString) X(hiprtcCreateProgram) X(hiprtcCompileProgram)               \
  X(hiprtcGetProgramLogSize) X(hiprtcGetProgramLog) X(hiprtcGetCodeSize) X(hiprtcGetCode)               \
  X(hiprtcDestroyProgram)

#define TS_HIP_DECLARE_FN(name) decltype(&::name) name = nullptr;

struct HipApi {
  TS_HIP_RUNTIME_FUNCTIONS(TS_HIP_DECLARE_FN)
  hipError_t (*hipMalloc)(void**, size_t) = nullptr;  // overloaded in C++: declared apart
  hipError_t (*hipHostMalloc)(void**, size_t, unsigned int) = nullptr;  // likewise
  hipError_t (*hipHostFree)(void*) = nullptr;
  std::string library_path;
};
struct HiprtcApi {
  TS_HIPRTC_FUNCTIONS(TS_HIP_DECLARE_FN)
  std::string library_path;
};

// The minimal hipBLAS C API used for the baseline, declared here because hipBLAS is
// optional (Debian ships no hipBLAS headers): loaded from libhipblas.so at run time when
// present. Enums are ints in its C ABI.
struct HipblasApi {
  using Handle = void*;
  int (*hipblasCreate)(Handle*) = nullptr;
  int (*hipblasDestroy)(Handle) = nullptr;
  int (*hipblasSetStream)(Handle, hipStream_t) = nullptr;
  // hipblasSgemm(handle, transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)
  int (*hipblasSgemm)(Handle, int, int, int, int, int, const float*, const float*, int, const float*, int,
                      const float*, float*, int) = nullptr;
  // gemm_ex_symbol (hipblasGemmEx or hipblasGemmEx_v2; hipblas_gemm_ex.h says which and why):
  // (handle, transA, transB, m, n, k, alpha, A, aType, lda, B, bType, ldb, beta, C, cType, ldc,
  //  computeType, algo), types encoded per gemm_ex_abi. nullptr when the library lacks it.
  int (*gemm_ex)(Handle, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                 const void*, void*, int, int, int, int) = nullptr;
  const char* gemm_ex_symbol = "";
  GemmExAbi gemm_ex_abi = GemmExAbi::kHipblasDatatype;
  static constexpr int kOpN = kHipblasOpN;
  static constexpr int kOpT = kHipblasOpT;
  std::string library_path;  // the name it was opened by
  std::string library_file;  // the file behind it (symlinks resolved), whose soname tells the ABI
};

Result<const HipApi*> hip_api();
Result<const HiprtcApi*> hiprtc_api();
Result<const HipblasApi*> hipblas_api();

}  // namespace tilesmith::hip
