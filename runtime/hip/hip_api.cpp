#include "runtime/hip/hip_api.h"

#include <dlfcn.h>

#include <climits>
#include <cstdlib>
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

// The file a loaded symbol lives in, symlinks resolved ("/opt/rocm-6.2.0/lib/libhipblas.so.2.2.60200"),
// or "" when the loader cannot say.
std::string resolved_file(void* symbol) {
  Dl_info info{};
  if (!symbol || !::dladdr(symbol, &info) || !info.dli_fname) return {};
  char buf[PATH_MAX];
  return ::realpath(info.dli_fname, buf) ? std::string(buf) : std::string(info.dli_fname);
}

}  // namespace

Result<const HipApi*> hip_api() {
  auto r = detail::load_api_once<HipApi>(amdhip_candidates(), [](HipApi& api, detail::SymbolLoader& loader) {
    TS_HIP_RUNTIME_FUNCTIONS(TS_LOAD_FN)
    loader.load(api.hipMalloc, "hipMalloc");
    loader.load(api.hipHostMalloc, "hipHostMalloc");
    loader.load(api.hipHostFree, "hipHostFree");
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
  static std::once_flag once;
  static HipblasApi api;
  static Status status;
  static detail::DynamicLibrary lib;
  std::call_once(once, [] {
    // Newest soname first; the unversioned name (a development symlink) after them.
    std::vector<std::string> c;
    for (const char* dir : {"", "/opt/rocm/lib/"})
      for (const char* so : {"libhipblas.so.3", "libhipblas.so.2", "libhipblas.so.1", "libhipblas.so.0", "libhipblas.so"})
        c.push_back(std::string(dir) + so);
    auto opened = detail::DynamicLibrary::open_first(c);
    if (!opened.ok()) {
      status = opened.status();
      return;
    }
    lib = std::move(opened).value();
    detail::SymbolLoader loader(lib);
    loader.load(api.hipblasCreate, "hipblasCreate");
    loader.load(api.hipblasDestroy, "hipblasDestroy");
    loader.load(api.hipblasSetStream, "hipblasSetStream");
    loader.load(api.hipblasSgemm, "hipblasSgemm");
    status = loader.status();
    if (!status.ok()) return;
    api.library_path = lib.path();
    api.library_file = resolved_file(reinterpret_cast<void*>(api.hipblasCreate));
    // The same name takes different enum values across hipBLAS versions (hipblas_gemm_ex.h).
    const GemmExSymbol pick = choose_gemm_ex(lib.symbol("hipblasGemmEx_v2") != nullptr,
                                             soname_major(api.library_file.empty() ? api.library_path : api.library_file));
    api.gemm_ex = reinterpret_cast<decltype(api.gemm_ex)>(lib.symbol(pick.name));
    api.gemm_ex_symbol = pick.name;
    api.gemm_ex_abi = pick.abi;
  });
  if (!status.ok()) return Status::unavailable("hipBLAS not found (" + status.message() + ")");
  return &api;
}

}  // namespace tilesmith::hip
