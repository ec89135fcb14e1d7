#include "runtime/hip/hip_api.h"

#include <mutex>

#include "runtime/detail/dynamic_library.h"

namespace tilesmith::hip {
namespace {

#define TS_STR2(x) #x
#define TS_STR(x) TS_STR2(x)
#define TS_LOAD_FN(name) loader.load(api.name, TS_STR(name));

// The soname matching the headers we were compiled against comes first, so the
// structures we read (hipDeviceProp_t) have the layout this code expects.
std::vector<std::string> amdhip_candidates() {
  std::vector<std::string> c{"libamdhip64.so." + std::to_string(HIP_VERSION_MAJOR), "libamdhip64.so",
                             "/opt/rocm/lib/libamdhip64.so." + std::to_string(HIP_VERSION_MAJOR),
                             "/opt/rocm/lib/libamdhip64.so"};
  return c;
}

}  // namespace

Result<const HipApi*> hip_api() {
  auto r = detail::load_api_once<HipApi>(amdhip_candidates(), [](HipApi& api, detail::SymbolLoader& loader) {
    TS_HIP_RUNTIME_FUNCTIONS(TS_LOAD_FN)
    loader.load(api.hipMalloc, "hipMalloc");
  });
  if (!r.ok()) return Status::unavailable("HIP runtime (libamdhip64) not found (" + r.status().message() + ")");
  return r;
}

Result<const HiprtcApi*> hiprtc_api() {
  // ROCm <= 5 exports hipRTC from libamdhip64; ROCm 6 from libhiprtc.
  std::vector<std::string> c = amdhip_candidates();
  for (const char* s : {"libhiprtc.so.6", "libhiprtc.so", "/opt/rocm/lib/libhiprtc.so"}) c.push_back(s);
  std::string errors;
  // Try each library on its own: the first that has every hipRTC symbol wins.
  static std::once_flag once;
  static HiprtcApi api;
  static Status status;
  static std::vector<detail::DynamicLibrary> libs;
  std::call_once(once, [&] {
    for (const auto& name : c) {
      auto opened = detail::DynamicLibrary::open_first({name});
      if (!opened.ok()) {
        errors += (errors.empty() ? "" : "; ") + opened.status().message();
        continue;
      }
      libs.push_back(std::move(opened).value());
      detail::SymbolLoader loader(libs.back());
      HiprtcApi candidate;
      {
        HiprtcApi& api = candidate;  // the fill macro writes api.NAME
        TS_HIPRTC_FUNCTIONS(TS_LOAD_FN)
      }
      if (loader.status().ok()) {
        api = candidate;
        api.library_path = libs.back().path();
        return;
      }
      errors += (errors.empty() ? "" : "; ") + loader.status().message();
    }
    status = Status::unavailable("hipRTC not found (" + errors + ")");
  });
  if (!status.ok()) return status;
  return &api;
}

Result<const HipblasApi*> hipblas_api() {
  auto r = detail::load_api_once<HipblasApi>({"libhipblas.so", "libhipblas.so.2", "libhipblas.so.1", "libhipblas.so.0",
                                  "/opt/rocm/lib/libhipblas.so"},
                                 [](HipblasApi& api, detail::SymbolLoader& loader) {
                                   loader.load(api.hipblasCreate, "hipblasCreate");
                                   loader.load(api.hipblasDestroy, "hipblasDestroy");
                                   loader.load(api.hipblasSetStream, "hipblasSetStream");
                                   loader.load(api.hipblasSgemm, "hipblasSgemm");
                                 });
  if (!r.ok()) return Status::unavailable("hipBLAS not found (" + r.status().message() + ")");
  return r;
}

}  // namespace tilesmith::hip
