#include "runtime/cuda/nvrtc_compiler.h"

#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_api.h"
#include "runtime/detail/ptxas_report.h"
#include "runtime/detail/rtc_compile.h"

namespace tilesmith::cuda {
namespace {

// NVRTC's functions for detail::compile_with.
struct NvrtcCalls {
  using Program = nvrtcProgram;
  using Code = nvrtcResult;
  static constexpr Code kSuccess = NVRTC_SUCCESS;
  static constexpr const char* kPrefix = "nvrtc";
  static constexpr const char* kCodeName = "cubin";
  const NvrtcApi& api;
  Code create(Program* p, const char* src, const char* name, int n, const char** texts,
              const char** names) const {
    return api.nvrtcCreateProgram(p, src, name, n, texts, names);
  }
  Code compile(Program p, int n, const char** argv) const { return api.nvrtcCompileProgram(p, n, argv); }
  void log_size(Program p, size_t* n) const { api.nvrtcGetProgramLogSize(p, n); }
  void log(Program p, char* out) const { api.nvrtcGetProgramLog(p, out); }
  void code_size(Program p, size_t* n) const { api.nvrtcGetCUBINSize(p, n); }
  void code(Program p, char* out) const { api.nvrtcGetCUBIN(p, out); }
  void intermediate(Program p, CompileResult& out) const {
    size_t n = 0;
    if (api.nvrtcGetPTXSize(p, &n) != NVRTC_SUCCESS || n == 0) return;
    out.ptx.resize(n);
    if (api.nvrtcGetPTX(p, out.ptx.data()) != NVRTC_SUCCESS) out.ptx.clear();
    while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  }
  void destroy(Program* p) const { api.nvrtcDestroyProgram(p); }
  std::string error(Code rc) const { return api.nvrtcGetErrorString(rc); }
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
    std::vector<std::string> opts = base_options(req.arch);
    const bool ptx_only = req.output == CompileOutput::kPtxOnly;
    if (ptx_only) {
      // The virtual architecture of the same name: NVRTC generates the same PTX (the code hash
      // agrees, tests/runtime/code_identity_test.cpp) and stops there.
      opts.front() = "-arch=compute_" + req.arch.substr(3);
      std::erase(opts, std::string("--ptxas-options=-v"));
    }
    opts.insert(opts.end(), req.options.begin(), req.options.end());
    out = detail::compile_with(NvrtcCalls{api_}, req, opts, ptx_only);
    if (out.ok && !ptx_only) out.resources = detail::parse_ptxas_report(out.log, req.entry);
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
