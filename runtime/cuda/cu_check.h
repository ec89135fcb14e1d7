#pragma once
// The one way a CUDA driver call's failure is checked and told, by the tuning backend
// (runtime/cuda) and libtilesmith_gemm (gemmlib) alike. A failure keeps the raw code, its
// name and text, the call's text, file and line, and says whether the context is lost for
// good (sticky: illegal address, launch failure, ...) or the launch asked for more than
// the kernel or device can give (resource). Two ways to deliver it, by the caller's
// contract:
//  - TS_CU(api, call) throws the GpuError: inside the GPU wrappers, where the evaluator
//    catches it once per candidate and turns it into an outcome (docs/reliability.md).
//  - TS_CU_STATUS(api, call) returns Status::internal with the GpuError's text: where the
//    contract is Status (gemmlib, which must never throw through its C API).
// A call checked by hand (a code read before deciding, a status other than internal) makes
// its error with cu_failure.

#include <cuda.h>

#include "base/status.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/gpu_error.h"

namespace tilesmith::cuda {

// The context cannot be used again after it (CUDA's "sticky" errors).
bool is_sticky(CUresult rc);
// Registers, threads or shared memory beyond the function's or the device's limit.
bool is_resource(CUresult rc);
// The error of `call` (its text as written) failing with `rc` at file:line.
GpuError cu_failure(const DriverApi& api, CUresult rc, const char* call, const char* file,
                    int line);

}  // namespace tilesmith::cuda

#define TS_CU(api, call)                                                           \
  do {                                                                             \
    const CUresult ts_rc_ = (api).call;                                            \
    if (ts_rc_ != CUDA_SUCCESS)                                                    \
      throw ::tilesmith::cuda::cu_failure(api, ts_rc_, #call, __FILE__, __LINE__); \
  } while (0)

#define TS_CU_STATUS(api, call)                                                          \
  do {                                                                                   \
    const CUresult ts_rc_ = (api).call;                                                  \
    if (ts_rc_ != CUDA_SUCCESS)                                                          \
      return ::tilesmith::Status::internal(                                              \
          ::tilesmith::cuda::cu_failure(api, ts_rc_, #call, __FILE__, __LINE__).what()); \
  } while (0)
