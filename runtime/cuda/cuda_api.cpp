#include "runtime/cuda/cuda_api.h"

#include <cstdlib>
#include <mutex>

#include "runtime/detail/dynamic_library.h"

namespace tilesmith::cuda {
namespace {

#define TS_STR2(x) #x
#define TS_STR(x) TS_STR2(x)
// TS_STR(cuMemAlloc) expands the header's macro first and yields "cuMemAlloc_v2".
#define TS_LOAD_FN(name) loader.load(api.name, TS_STR(name));

constexpr int kCudaMajor = CUDA_VERSION / 1000;

}  // namespace

std::vector<std::string> toolkit_library_candidates(const std::string& soname) {
  std::vector<std::string> c{soname};
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v) c.push_back(std::string(v) + "/lib64/" + soname);
#ifdef TILESMITH_CUDA_LIBRARY_DIR
  c.push_back(std::string(TILESMITH_CUDA_LIBRARY_DIR) + "/" + soname);
#endif
  c.push_back("/usr/local/cuda/lib64/" + soname);
  return c;
}

Result<const DriverApi*> driver_api() {
  auto r = detail::load_api_once<DriverApi>({"libcuda.so.1"}, [](DriverApi& api, detail::SymbolLoader& loader) {
    TS_CUDA_DRIVER_FUNCTIONS(TS_LOAD_FN)
    loader.load_optional(api.cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled");
  });
  if (!r.ok()) return Status::unavailable("NVIDIA driver library not found (" + r.status().message() + ")");
  return r;
}

Result<const NvrtcApi*> nvrtc_api() {
  std::string so = "libnvrtc.so." + std::to_string(kCudaMajor);
  auto r = detail::load_api_once<NvrtcApi>(toolkit_library_candidates(so), [](NvrtcApi& api, detail::SymbolLoader& loader) {
    TS_NVRTC_FUNCTIONS(TS_LOAD_FN)
  });
  if (!r.ok())
    return Status::unavailable("NVRTC (" + so + ") not found; install the CUDA toolkit or set CUDA_HOME (" +
                               r.status().message() + ")");
  return r;
}

Result<const CublasApi*> cublas_api() {
  std::string so = "libcublas.so." + std::to_string(kCudaMajor);
  auto r = detail::load_api_once<CublasApi>(toolkit_library_candidates(so), [](CublasApi& api, detail::SymbolLoader& loader) {
    TS_CUBLAS_FUNCTIONS(TS_LOAD_FN)
    loader.load(api.cublasGemmEx, "cublasGemmEx");
  });
  if (!r.ok()) return Status::unavailable("cuBLAS (" + so + ") not found (" + r.status().message() + ")");
  return r;
}

Result<const CublasLtApi*> cublaslt_api() {
  std::string so = "libcublasLt.so." + std::to_string(kCudaMajor);
  auto r = detail::load_api_once<CublasLtApi>(toolkit_library_candidates(so),
                                              [](CublasLtApi& api, detail::SymbolLoader& loader) {
                                                TS_CUBLASLT_FUNCTIONS(TS_LOAD_FN)
                                              });
  if (!r.ok()) return Status::unavailable("cuBLASLt (" + so + ") not found (" + r.status().message() + ")");
  return r;
}

}  // namespace tilesmith::cuda
