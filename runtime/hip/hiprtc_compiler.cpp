#include "runtime/hip/hiprtc_compiler.h"

#include "runtime/detail/rtc_compile.h"
#include "runtime/hip/hip_api.h"

namespace tilesmith::hip {
namespace {

// hipRTC's functions for detail::compile_with.
struct HiprtcCalls {
  using Program = hiprtcProgram;
  using Code = hiprtcResult;
  static constexpr Code kSuccess = HIPRTC_SUCCESS;
  static constexpr const char* kPrefix = "hiprtc";
  static constexpr const char* kCodeName = "code object";
  const HiprtcApi& api;
  Code create(Program* p, const char* src, const char* name, int n, const char** texts,
              const char** names) const {
    return api.hiprtcCreateProgram(p, src, name, n, texts, names);
  }
  Code compile(Program p, int n, const char** argv) const { return api.hiprtcCompileProgram(p, n, argv); }
  void log_size(Program p, size_t* n) const { api.hiprtcGetProgramLogSize(p, n); }
  void log(Program p, char* out) const { api.hiprtcGetProgramLog(p, out); }
  void code_size(Program p, size_t* n) const { api.hiprtcGetCodeSize(p, n); }
  void code(Program p, char* out) const { api.hiprtcGetCode(p, out); }
  void intermediate(Program, CompileResult&) const {}  // hipRTC: the code object only
  void destroy(Program* p) const { api.hiprtcDestroyProgram(p); }
  std::string error(Code rc) const { return api.hiprtcGetErrorString(rc); }
};

class HiprtcCompiler final : public Compiler {
 public:
  explicit HiprtcCompiler(const HiprtcApi& api) : api_(api) {
    // hiprtcVersion reports the bundled clang's numbering on some releases (ROCm 5.2
    // says 9.0), so the ROCm release comes from the HIP runtime, which answers without
    // a GPU (HIP_VERSION encoding: major*10000000 + minor*100000 + patch).
    int v = 0;
    if (auto hip = hip_api(); hip.ok() && (*hip)->hipRuntimeGetVersion(&v) == hipSuccess && v > 0) {
      major_ = v / 10000000;
      minor_ = (v / 100000) % 100;
      patch_ = v % 100000;
    } else {
      api_.hiprtcVersion(&major_, &minor_);
    }
  }

  std::string version() const override {
    return "hiprtc (ROCm " + std::to_string(major_) + "." + std::to_string(minor_) + "." + std::to_string(patch_) + ")";
  }

  Status check_target(const std::string& arch) const override {
    return hiprtc_target_supported(arch, major_, minor_);
  }

  std::vector<std::string> base_options(const std::string& arch) const override {
    return {"--offload-arch=" + arch, "-O3", "-std=c++17"};
  }

  CompileResult compile(const CompileRequest& req) override {
    CompileResult out;
    if (Status t = check_target(req.arch); !t.ok()) {
      out.log = t.message();
      return out;
    }
    std::vector<std::string> opts = base_options(req.arch);
    opts.insert(opts.end(), req.options.begin(), req.options.end());
    out = detail::compile_with(HiprtcCalls{api_}, req, opts);
    return out;
  }

 private:
  const HiprtcApi& api_;
  int major_ = 0, minor_ = 0, patch_ = 0;
};

}  // namespace

Status hiprtc_target_supported(const std::string& arch, int major, int minor) {
  if (arch.rfind("gfx", 0) != 0 || arch.size() < 6)
    return Status::invalid("hipRTC compiles for gfxXXX targets, not '" + arch + "'");
  // Below the release that added a target, this hipRTC aborts the process instead of
  // returning an error (seen with ROCm 5.2 on gfx940/941/942 and gfx1100).
  const bool gfx94 = arch.rfind("gfx94", 0) == 0;
  const bool gfx11 = arch.rfind("gfx11", 0) == 0;
  const bool gfx12 = arch.rfind("gfx12", 0) == 0;
  const int v = major * 100 + minor;
  auto refuse = [&](const char* need) {
    return Status::invalid("hipRTC " + std::to_string(major) + "." + std::to_string(minor) +
                           " is known to crash compiling for " + arch + "; it needs ROCm " + need +
                           " or newer. Install a newer ROCm, or pick another --arch.");
  };
  if (gfx94 && v < 600) return refuse("6.0");
  if (gfx11 && v < 505) return refuse("5.5");
  if (gfx12 && v < 602) return refuse("6.2");
  return {};
}

Result<std::shared_ptr<Compiler>> make_hiprtc_compiler() {
  TS_ASSIGN_OR_RETURN(const HiprtcApi* api, hiprtc_api());
  return std::shared_ptr<Compiler>(std::make_shared<HiprtcCompiler>(*api));
}

}  // namespace tilesmith::hip
