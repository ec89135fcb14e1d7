#pragma once
// Run-time compilers (NVRTC, hipRTC) behind one interface. A compile error is a result
// carrying the log verbatim, not an exception. Compilation needs no GPU.

#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/evaluation.h"

namespace tilesmith {

// What a compile hands back: the binary (to run it); also NVRTC's PTX (CompileResult::ptx); or
// NVRTC's PTX alone (compute_XX, no ptxas): no binary and no resource report, but the code
// digest, which is all a code hash needs. hipRTC, whose digest is of the code object, has no
// PTX and compiles as usual.
enum class CompileOutput { kBinary, kBinaryAndPtx, kPtxOnly };

struct CompileRequest {
  std::string name;                  // file name for messages ("gemm_tiled.hip")
  std::string source;
  std::vector<std::string> options;  // -D..., from the rendered kernel
  std::string arch;                  // "sm_90", "sm_90a", "gfx90a"
  std::string entry;                 // the kernel entry point, for the resource report
  std::vector<std::pair<std::string, std::string>> headers;  // #include "NAME" -> text
  CompileOutput output = CompileOutput::kBinary;
};

struct CompileResult {
  bool ok = false;
  std::string log;     // verbatim compiler output (errors, warnings, ptxas report)
  std::string binary;  // cubin / code object when ok (empty for NVRTC's kPtxOnly)
  std::string ptx;     // NVRTC's PTX when ok and the request kept it; empty from hipRTC and the cache
  // The code's identity without line information (runtime/code_identity.h) when ok: what a
  // tuned entry's code hash is built from. Empty from a compiler that cannot give it.
  std::string code_digest;
  KernelResources resources;  // from the compiler's report, where it gives one
  double compile_ms = 0;
  bool cache_hit = false;
};

class Compiler {
 public:
  virtual ~Compiler() = default;
  // "nvrtc 13.0" / "hiprtc 5.2": part of every cache key.
  virtual std::string version() const = 0;
  // ok, or why this compiler must not be asked for `arch` (e.g. a target it crashes on).
  virtual Status check_target(const std::string& arch) const = 0;
  // The options the compiler gets besides the request's own (-arch, -O3, ...): normalised
  // in one place and part of the cache key.
  virtual std::vector<std::string> base_options(const std::string& arch) const = 0;
  // Thread-safe: several compiles may run at once.
  virtual CompileResult compile(const CompileRequest& request) = 0;
};

}  // namespace tilesmith
