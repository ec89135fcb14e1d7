#pragma once
// Where a launch's binary comes from: the package's compiled kernel when its bytes match
// binary_hash and the device loads it; otherwise the shipped template source compiled
// for this device (NVRTC, cached on disk). The GPU step (loading a module) is passed in,
// so the whole fallback is tested without a GPU.

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "gemmlib/dispatch.h"
#include "gemmlib/package.h"
#include "runtime/compiler.h"

namespace tilesmith::gemmlib {

// Loads a binary into the device; ok, or why not (an arch mismatch, a corrupt image).
using ModuleLoader = std::function<Status(const std::string& binary)>;
// The compiler for the fallback, made on first need; unavailable says why there is none.
using CompilerSource = std::function<Result<Compiler*>()>;

// Compiles the launch's template source with its options and the package's headers for
// launch.arch. failed_precondition with the compiler's first error lines on a compile error.
Result<std::string> compile_launch(const Package& pkg, const Launch& launch, Compiler& compiler);

// Loads the launch's kernel: the package binary first (when the launch has one), then the
// compiled source. Returns where the loaded binary came from ("package binaries/x.cubin",
// "compiled from kernels/gemm_tiled.hip by nvrtc 13.0 (disk cache)"); every step that did
// not work is appended to `notes` (for the log). failed_precondition when nothing loads,
// naming each reason and what to do.
Result<std::string> load_launch_kernel(const Package& pkg, const Launch& launch, const CompilerSource& compiler,
                                       const ModuleLoader& load, std::vector<std::string>& notes);

}  // namespace tilesmith::gemmlib
