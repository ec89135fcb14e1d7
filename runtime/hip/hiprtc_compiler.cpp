#include "runtime/hip/hiprtc_compiler.h"

#include <chrono>

#include "runtime/hip/hip_api.h"

namespace tilesmith::hip {
namespace {

class ProgramGuard {
 public:
  ProgramGuard(const HiprtcApi& api, hiprtcProgram p) : api_(api), p_(p) {}
  ~ProgramGuard() { api_.hiprtcDestroyProgram(&p_); }
  ProgramGuard(const ProgramGuard&) = delete;
  ProgramGuard& operator=(const ProgramGuard&) = delete;

 private:
  const HiprtcApi& api_;
  hiprtcProgram p_;
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
    auto t0 = std::chrono::steady_clock::now();
    hiprtcProgram prog = nullptr;
    std::vector<const char*> header_texts, header_names;
    for (const auto& [name, text] : req.headers) {
      header_names.push_back(name.c_str());
      header_texts.push_back(text.c_str());
    }
    hiprtcResult rc = api_.hiprtcCreateProgram(&prog, req.source.c_str(), req.name.c_str(), static_cast<int>(req.headers.size()),
                                           header_texts.data(), header_names.data());
    if (rc != HIPRTC_SUCCESS) {
      out.log = std::string("hiprtcCreateProgram failed: ") + api_.hiprtcGetErrorString(rc);
      return out;
    }
    ProgramGuard guard(api_, prog);
    std::vector<std::string> opts = base_options(req.arch);
    opts.insert(opts.end(), req.options.begin(), req.options.end());
    std::vector<const char*> argv;
    for (const auto& o : opts) argv.push_back(o.c_str());
    rc = api_.hiprtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
    size_t log_size = 0;
    api_.hiprtcGetProgramLogSize(prog, &log_size);
    if (log_size > 1) {
      out.log.resize(log_size);
      api_.hiprtcGetProgramLog(prog, out.log.data());
      while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
    }
    if (rc == HIPRTC_SUCCESS) {
      size_t size = 0;
      api_.hiprtcGetCodeSize(prog, &size);
      out.binary.resize(size);
      if (size > 0) api_.hiprtcGetCode(prog, out.binary.data());
      out.ok = size > 0;
      if (!out.ok) out.log += "\nhipRTC produced no code object for " + req.arch;
    } else if (out.log.empty()) {
      out.log = std::string("hiprtcCompileProgram failed: ") + api_.hiprtcGetErrorString(rc);
    }
    out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
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
