#pragma once
// What a compiled kernel is, independent of the text it was written in: a tuned entry's
// "code hash" (best_config.md). A template's source hash changes with any edit to it or to
// a header it includes, a comment or a refactor included; the code hash changes only when
// the kernel itself does. bench-best therefore keeps an entry current when its template's
// source changed but its config still compiles to the same code and is launched the same
// way, so a change to one path of a template does not stale every row tuned with it.

#include <string>
#include <string_view>

#include "registry/kernel_template.h"

namespace tilesmith {

// NVRTC's PTX without what moves with source lines and paths: .loc and .file directives,
// the debug sections (-lineinfo puts them there) and comment lines (the compiler's banner
// names its build; the same instructions from another build are the same kernel).
std::string normalized_ptx(std::string_view ptx);

// The compiled code's identity: a hash of the normalised PTX where there is PTX (NVRTC),
// else of the binary (hipRTC's code object, which carries no line information).
std::string device_code_digest(std::string_view ptx, std::string_view binary);

// The kernel's identity: the code digest with everything else that decides what runs (the
// entry point, grid, block, dynamic shared memory, workspace and tensor maps). Empty where
// the digest is.
std::string kernel_code_hash(const RenderedKernel& rendered, const std::string& code_digest);

// Whether a recorded config (a best_config.json entry, an export's winner) still describes
// the kernel today's template builds for it: the same source; or another source but the
// same code hash; or a changed kernel; or, without a recorded code hash, not known.
enum class KernelMatch { kSameSource, kSameKernel, kChanged, kUnknown };
struct RecordedKernel {
  std::string source_hash;  // the template's, when it was recorded
  std::string code_hash;    // the config's kernel then (may be empty: recorded before code hashes)
};
// `code_now`: today's code hash of the config (compile_candidate); needed only where the
// source changed and a code hash was recorded (needs_compile).
bool needs_compile(const KernelTemplate& t, const RecordedKernel& recorded);
KernelMatch match_recorded_kernel(const KernelTemplate& t, const RecordedKernel& recorded,
                                  const std::string& code_now);
// What a person reads about it; empty for kSameSource. "template T changed since it was
// recorded (source hash A then, B now), but this config compiles to the same kernel (code
// hash C)" / ", and so did this config's kernel (code hash C then, D now)" / ", and no code
// hash was recorded to tell whether its kernel changed".
// "template T changed since it was recorded (source hash A then, B now)".
std::string describe_source_change(const KernelTemplate& t, const RecordedKernel& recorded);
std::string describe_kernel_match(KernelMatch match, const KernelTemplate& t, const RecordedKernel& recorded,
                                  const std::string& code_now);

}  // namespace tilesmith
