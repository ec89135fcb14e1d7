#pragma once
// The create / compile / read-log / read-code flow of a run-time compiler. NVRTC and
// hipRTC have C APIs of the same shape, so one flow serves both; each backend hands in a
// small adapter (Calls) naming its functions:
//   using Program; using Code; static constexpr Code kSuccess;
//   static constexpr const char* kPrefix ("nvrtc"), kCodeName ("cubin");
//   create, compile, log_size, log, code_size, code, destroy, error,
//   and intermediate(program, result): what else a successful compile hands back (NVRTC:
//   the PTX; hipRTC: nothing). The PTX gives the code digest (runtime/code_identity.h) and
//   is kept in the result only where the request asks for it.

#include <chrono>
#include <string>
#include <vector>

#include "runtime/code_identity.h"
#include "runtime/compiler.h"

namespace tilesmith::detail {

// Compiles req.source with `options` (the compiler's base options, then the request's).
// The log is kept verbatim; ok only when code came out, or with `intermediate_only` (options
// that stop at it: NVRTC's compute_XX) when the intermediate did.
template <typename Calls>
CompileResult compile_with(const Calls& calls, const CompileRequest& req, const std::vector<std::string>& options,
                           bool intermediate_only = false) {
  CompileResult out;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : req.headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  typename Calls::Program prog = nullptr;
  typename Calls::Code rc = calls.create(&prog, req.source.c_str(), req.name.c_str(), static_cast<int>(req.headers.size()),
                                         header_texts.data(), header_names.data());
  if (rc != Calls::kSuccess) {
    out.log = std::string(Calls::kPrefix) + "CreateProgram failed: " + calls.error(rc);
    return out;
  }
  // Destroys the program on every path below.
  struct Guard {
    const Calls& calls;
    typename Calls::Program prog;
    ~Guard() { calls.destroy(&prog); }
  } guard{calls, prog};

  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  rc = calls.compile(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  calls.log_size(prog, &log_size);
  if (log_size > 1) {
    out.log.resize(log_size);
    calls.log(prog, out.log.data());
    while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
  }
  if (rc == Calls::kSuccess) {
    size_t size = 0;
    if (!intermediate_only) calls.code_size(prog, &size);
    out.binary.resize(size);
    if (size > 0) calls.code(prog, out.binary.data());
    calls.intermediate(prog, out);
    out.ok = size > 0 || (intermediate_only && !out.ptx.empty());
    if (out.ok) out.code_digest = device_code_digest(out.ptx, out.binary);
    if (req.output == CompileOutput::kBinary) out.ptx.clear();
    if (!out.ok)
      out.log += std::string("\n") + Calls::kPrefix + " produced no " + (intermediate_only ? "PTX" : Calls::kCodeName) +
                 " for " + req.arch;
  } else if (out.log.empty()) {
    out.log = std::string(Calls::kPrefix) + "CompileProgram failed: " + calls.error(rc);
  }
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace tilesmith::detail
