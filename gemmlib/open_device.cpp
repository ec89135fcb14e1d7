// Picks the GemmDevice implementation for a package's backend.
#include "gemmlib/device.h"

namespace tilesmith::gemmlib {

#if TILESMITH_HAVE_CUDA
Result<std::unique_ptr<GemmDevice>> open_cuda_gemm_device(int ordinal, const DeviceOptions& options);
#endif

Result<std::unique_ptr<GemmDevice>> open_gemm_device(const std::string& backend, int ordinal,
                                                     const DeviceOptions& options) {
  if (backend == "cuda") {
#if TILESMITH_HAVE_CUDA
    return open_cuda_gemm_device(ordinal, options);
#else
    (void)ordinal;
    (void)options;
    return Status(StatusCode::kUnimplemented,
                  "this libtilesmith_gemm was built without CUDA (the CUDA toolkit was not found at build time): "
                  "rebuild it where the toolkit is installed");
#endif
  }
  if (backend == "hip")
    return Status(StatusCode::kUnimplemented,
                  "the package was tuned with the hip backend; libtilesmith_gemm runs CUDA packages only so far");
  return Status::invalid("the package names backend '" + backend + "'; expected cuda");
}

}  // namespace tilesmith::gemmlib
