#include "runtime/gpu_error.h"

namespace tilesmith {

GpuError::GpuError(std::string backend, int code, std::string code_name, std::string call, const char* file,
                   int line, bool sticky, std::string detail, bool resource)
    : std::runtime_error(backend + " error " + std::to_string(code) + " (" + code_name + ") in " + call + " at " +
                         file + ":" + std::to_string(line) + (detail.empty() ? "" : ": " + detail) +
                         (sticky ? " [the GPU context is unusable from here on]" : "")),
      code_(code),
      code_name_(std::move(code_name)),
      call_(std::move(call)),
      sticky_(sticky),
      resource_(resource) {}

}  // namespace tilesmith
