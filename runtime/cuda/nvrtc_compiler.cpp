#include "runtime/cuda/nvrtc_compiler.h"

#include <chrono>
#include <memory>

#include "runtime/cuda/cuda_api.h"
#include "runtime/detail/ptxas_report.h"

namespace tilesmith::cuda {
namespace {

// Destroys an nvrtcProgram on every path.
class ProgramGuard {
 public:
  ProgramGuard(const NvrtcApi& api, nvrtcProgram p) : api_(api), p_(p) {}
  ~ProgramGuard() { api_.nvrtcDestroyProgram(&p_); }
  ProgramGuard(const ProgramGuard&) = delete;
  ProgramGuard& operator=(const ProgramGuard&) = delete;

 private:
  const NvrtcApi& api_;
  nvrtcProgram p_;
};

class NvrtcCompiler final : public Compiler {
 public:
  explicit NvrtcCompiler(const NvrtcApi& api) : api_(api) {
    int major = 0, minor = 0;
    api_.nvrtcVersion(&major, &minor);
    version_ = "nvrtc " + std::to_string(major) + "." + std::to_string(minor);
  }

  std::string version() const override { return version_; }

  Status check_target(const std::string& arch) const override {
    if (arch.rfind("sm_", 0) != 0 || arch.size() < 5)
      return Status::invalid("NVRTC compiles for sm_XX targets, not '" + arch + "'");
    return {};
  }

  std::vector<std::string> base_options(const std::string& arch) const override {
    // -lineinfo costs nothing at run time and lets compute-sanitizer name source lines.
    return {"-arch=" + arch, "--std=c++17", "--ptxas-options=-v", "-lineinfo"};
  }

  CompileResult compile(const CompileRequest& req) override {
    CompileResult out;
    Status target = check_target(req.arch);
    if (!target.ok()) {
      out.log = target.message();
      return out;
    }
    auto t0 = std::chrono::steady_clock::now();
    nvrtcProgram prog = nullptr;
    std::vector<const char*> header_texts, header_names;
    for (const auto& [name, text] : req.headers) {
      header_names.push_back(name.c_str());
      header_texts.push_back(text.c_str());
    }
    nvrtcResult rc = api_.nvrtcCreateProgram(&prog, req.source.c_str(), req.name.c_str(), static_cast<int>(req.headers.size()),
                                           header_texts.data(), header_names.data());
    if (rc != NVRTC_SUCCESS) {
      out.log = std::string("nvrtcCreateProgram failed: ") + api_.nvrtcGetErrorString(rc);
      return out;
    }
    ProgramGuard guard(api_, prog);
    std::vector<std::string> opts = base_options(req.arch);
    opts.insert(opts.end(), req.options.begin(), req.options.end());
    std::vector<const char*> argv;
    for (const auto& o : opts) argv.push_back(o.c_str());
    rc = api_.nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
    size_t log_size = 0;
    api_.nvrtcGetProgramLogSize(prog, &log_size);
    if (log_size > 1) {
      out.log.resize(log_size);
      api_.nvrtcGetProgramLog(prog, out.log.data());
      while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
    }
    if (rc == NVRTC_SUCCESS) {
      size_t size = 0;
      api_.nvrtcGetCUBINSize(prog, &size);
      out.binary.resize(size);
      if (size > 0) api_.nvrtcGetCUBIN(prog, out.binary.data());
      out.ok = size > 0;
      if (!out.ok) out.log += "\nNVRTC produced no cubin for " + req.arch;
      out.resources = detail::parse_ptxas_report(out.log, req.entry);
    } else if (out.log.empty()) {
      out.log = std::string("nvrtcCompileProgram failed: ") + api_.nvrtcGetErrorString(rc);
    }
    out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }

private:
  const NvrtcApi& api_;
  std::string version_;
};

}  // namespace

Result<std::shared_ptr<Compiler>> make_nvrtc_compiler() {
  TS_ASSIGN_OR_RETURN(const NvrtcApi* api, nvrtc_api());
  return std::shared_ptr<Compiler>(std::make_shared<NvrtcCompiler>(*api));
}

}  // namespace tilesmith::cuda
