#pragma once
// hipRTC as a Compiler: produces an AMD code object for --offload-arch=gfxXXX. Refuses
// targets the loaded hipRTC is known to crash on (it takes the whole process down).

#include <memory>

#include "runtime/compiler.h"

namespace tilesmith::hip {

Result<std::shared_ptr<Compiler>> make_hiprtc_compiler();

// ok, or why hipRTC `version_major`.`version_minor` must not compile for `arch`.
// ROCm 5.2's hipRTC (Debian 12) aborts the process on gfx94x and gfx11xx.
Status hiprtc_target_supported(const std::string& arch, int version_major, int version_minor);

}  // namespace tilesmith::hip
