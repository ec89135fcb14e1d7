#pragma once
// A kernel template: HIP source that compiles on its own with default parameters, its
// parameter space, which problems it serves, and how to launch it. Loaded from a pair
// of files, NAME.hip and NAME.json (see docs/templates.md), embedded at build time or
// read from a user's folder. A template with no source is a recorded space (replay only).
//
// Every GEMM template's entry point has this signature (the kernel ABI):
//   extern "C" __global__ void ENTRY(const ts_ab_t* A, const ts_ab_t* B, ts_c_t* C,
//       const ts_c_t* bias, float* workspace, int M, int N, int K, int lda, int ldb,
//       int ldc, float alpha, float beta, float epilogue_slope)
// and reads these macros, besides its parameters: TS_A_ROW_MAJOR, TS_B_ROW_MAJOR,
// TS_C_ROW_MAJOR (0/1), TS_HAS_BETA (0/1), TS_EPILOGUE (0 none, 1 bias_row, 2 bias_col,
// 3 relu, 4 leaky_relu, 5 gelu, 6 bias_gelu), TS_AB_DTYPE and TS_C_DTYPE (0 fp32, 1 fp16, 2 bf16,
// and for TS_AB_DTYPE only 3 e4m3, 4 e5m2; the element types ts_ab_t and ts_c_t of
// kernels/ts_dtype.h), TS_WARP_SIZE, TS_VENDOR_NVIDIA
// or TS_VENDOR_AMD. A template may ask for tensor maps of its operands (registry/tensor_map.h),
// passed after these parameters. A template lists the input types it serves in "supports.dtypes" and the
// C types in "supports.c_dtypes" (without it, C has the input type; a template taking an FP8 type
// must list them), and the FP8 scalings in "supports.scalings" (without it, "none" only). With
// per-tensor scales the kernel's alpha is the problem's alpha * scale_a * scale_b (the scales
// factor out of the sum, as cuBLASLt takes them). A block-scaled problem (Scaling::kBlock)
// defines TS_BLOCK_SCALES 1 and passes its scale grids after the tensor maps: const float*
// scale_a (M x ceil(K/128), row-major) and const float* scale_b (ceil(K/128) x ceil(N/128),
// row-major), as registry/problem.h defines them; rules may read BLOCK_SCALED (0/1).
//
// Immutable after loading; const methods are thread-safe.

#include <array>
#include <memory>
#include <utility>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "registry/config.h"
#include "registry/device_facts.h"
#include "registry/problem.h"
#include "registry/space.h"
#include "registry/tensor_map.h"

namespace tilesmith {

// Headers a template may #include "NAME.h": every *.h beside the templates, given to
// the run-time compiler by name (no include paths on disk are involved).
using KernelHeaders = std::vector<std::pair<std::string, std::string>>;  // name, text

// Everything a backend needs to compile and launch one candidate.
struct RenderedKernel {
  std::string template_name;
  std::string source;                // the template's source, verbatim
  std::shared_ptr<const KernelHeaders> headers;  // may be null
  std::vector<std::string> options;  // -D definitions, in a stable order
  std::string entry;
  std::string arch;                  // compile target: "sm_90", "sm_90a", "gfx90a"
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  std::uint64_t dynamic_shared_bytes = 0;
  std::uint64_t workspace_bytes = 0;
  // Extra kernel parameters after the ABI's fourteen, in order (registry/tensor_map.h).
  std::vector<TensorMapSpec> tensor_maps;
  std::int64_t threads() const { return std::int64_t(block[0]) * block[1] * block[2]; }
};

// What KernelTemplate::update_config did to a recorded config.
struct ConfigUpdate {
  Config config;                     // the config to use
  Config filled;                     // parameters added with the template's default
  Config dropped;                    // parameters the template no longer has, with the recorded value
  bool changed() const { return !filled.empty() || !dropped.empty(); }
  // One line per change, for the output: "VEC=1 filled in: the entry predates the
  // parameter (the template's default)", "OLD=3 left out: the template no longer has it".
  std::vector<std::string> notes() const;
};

class KernelTemplate {
 public:
  // json_text: the NAME.json description; source: the NAME.hip text (may be empty
  // only for recorded spaces). origin names where it came from, for messages.
  static Result<KernelTemplate> from_text(const std::string& json_text, const std::string& source,
                                          const std::string& origin,
                                          std::shared_ptr<const KernelHeaders> headers = nullptr);
  // A source-less template around a parameter space (replay of recorded measurements).
  // `math`: the recorded template's math units (math()), where the recording names them.
  static KernelTemplate recorded(const std::string& name, ParamSpace space,
                                 const std::string& description, const std::string& math = "");

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  const std::string& source() const { return source_; }
  // The NAME.json text it was loaded from, verbatim (empty for a recorded space): what
  // an exported package ships beside the source (docs/package.md).
  const std::string& description_json() const { return json_text_; }
  // The headers the source may include (may be null).
  const std::shared_ptr<const KernelHeaders>& headers() const { return headers_; }
  // short_hash of the source, the JSON and the headers the source includes (directly or
  // through another header, every `#include "NAME"` line counted whatever #if surrounds it):
  // changes whenever one of them changes, and only then, so a new or edited header that a
  // template does not include leaves its tuned folders current.
  const std::string& source_hash() const { return source_hash_; }
  // Whether `recorded` (a results folder's, a package's) names this source: today's hash,
  // or the hash over every header of the library that versions before the included-headers
  // hash recorded (equal only while no header has changed since).
  bool matches_source_hash(const std::string& recorded) const {
    return recorded == source_hash_ || (!legacy_hash_.empty() && recorded == legacy_hash_);
  }
  // The headers the source includes, by name, sorted (empty without headers).
  std::vector<std::string> included_headers() const;
  const std::string& entry() const { return entry_; }
  const ParamSpace& space() const { return space_; }
  // Parameter values that compile on their own (the template's defaults).
  const Config& defaults() const { return defaults_; }
  // The template's seeds ("seeds" in its JSON: partial configs over the defaults): schedules
  // its author knows to be good on the hardware it targets, which a search may try first.
  // Each is a whole config with every value in its domain; whether it is valid for a
  // problem is the search's to check. Empty when the file lists none.
  const std::vector<Config>& seeds() const { return seeds_; }
  // A config recorded against an earlier version of this template (best_config.json,
  // --warm-start), brought up to date: a parameter the template has gained since takes
  // its default; a parameter it no longer has is left out. A parameter without a default
  // stays missing (validation then names it).
  ConfigUpdate update_config(const Config& recorded) const;
  bool is_recorded() const { return source_.empty(); }
  // The tensor maps it reads its operands through (empty for most templates).
  const std::vector<TensorMapDecl>& tensor_maps() const { return tensor_maps_; }
  // The units its inner product runs on where that bounds its speed ("math" in its JSON):
  // "fma", the FP32 FMA pipe (SIMT: no matrix units); "" where not said (matrix units, whose
  // bound no run of ours comes near).
  const std::string& math() const { return math_; }
  // The fastest the problem can run on this template and device, in ms: its FLOPs at the
  // peak of math()'s units (fp32: DeviceFacts::fp32_peak_flops; 16-bit inputs: twice that,
  // packed half FMAs; on AMD twice again, packed or dual-issued FP32). 0 when there is no
  // such bound or the device does not say its clock and units. The allocation over
  // templates leaves out a template that cannot beat what the run has measured
  // (tuner/search/template_allocation.h).
  double fastest_possible_ms(const GemmProblem& problem, const DeviceFacts& device) const;
  // "" or a suffix the NVIDIA target needs ("a" turns sm_90 into sm_90a).
  const std::string& nvidia_arch_suffix() const { return nvidia_arch_suffix_; }

  // Input types (A and B) and C types it serves, by name ("fp32", "bf16", ...); c_dtypes()
  // empty means C has the input type.
  const std::vector<std::string>& dtypes() const { return dtypes_; }
  const std::vector<std::string>& c_dtypes() const { return c_dtypes_; }
  const std::vector<std::string>& layouts() const { return layouts_; }  // "NN", "NT", ... it claims
  // ok, or invalid_argument saying why this template cannot serve the problem.
  Status supports(const GemmProblem& problem) const;
  // supports(), and at least one configuration of the space valid for the problem on this
  // device (a space may rule out a whole GPU family or an unaligned leading dimension);
  // otherwise invalid_argument saying why, with the rule its defaults break.
  Status can_serve(const GemmProblem& problem, const DeviceFacts& device) const;
  // Constants for expressions: M, N, K, LDA, LDB, LDC, A_ROW_MAJOR, B_ROW_MAJOR, C_ROW_MAJOR,
  // DTYPE_BYTES (A and B), C_DTYPE_BYTES, HAS_BETA, WARP_SIZE, NVIDIA_SM (80, 90, ...; 0 elsewhere), AMD_CDNA (0/1),
  // NUM_SMS (with a device), and the device's limits.
  SpaceContext context(const GemmProblem& problem, const DeviceFacts* device) const;
  // Validates the config (domains, constraints, device limits) and the problem, then
  // evaluates the launch geometry. Errors are invalid_argument with the reason.
  Result<RenderedKernel> render(const GemmProblem& problem, const Config& config,
                                const DeviceFacts& device) const;

 private:
  std::string name_, description_, source_, json_text_, source_hash_, entry_, nvidia_arch_suffix_, math_;
  ParamSpace space_;
  std::shared_ptr<const KernelHeaders> headers_;
  std::string legacy_hash_;  // the hash over every header (see matches_source_hash)
  Config defaults_;
  std::vector<Config> seeds_;
  std::vector<std::string> dtypes_, c_dtypes_, layouts_, epilogues_, c_layouts_, scalings_;
  bool supports_beta_ = true;
  bool mixed_fp8_ = false;
  std::array<std::string, 3> grid_exprs_, block_exprs_;
  std::string shared_expr_ = "0", workspace_expr_ = "0";
  std::vector<TensorMapDecl> tensor_maps_;
};

}  // namespace tilesmith
