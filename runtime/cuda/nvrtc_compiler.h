#pragma once
// NVRTC as a Compiler: the templates' HIP source is plain CUDA C++ as far as NVRTC is
// concerned (that is what hipRTC does on NVIDIA). Produces a cubin for the exact
// target, with ptxas's resource report parsed from the log.

#include <memory>

#include "runtime/compiler.h"

namespace tilesmith::cuda {

// unavailable when NVRTC cannot be loaded.
Result<std::shared_ptr<Compiler>> make_nvrtc_compiler();

}  // namespace tilesmith::cuda
