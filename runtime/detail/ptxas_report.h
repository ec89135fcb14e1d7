#pragma once
// Reads the resource report that ptxas writes into the compile log with -v
// ("Used 40 registers, used 1 barriers, 8448 bytes smem", "0 bytes stack frame,
// 0 bytes spill stores, 0 bytes spill loads") for the named entry function.

#include <string>

#include "runtime/evaluation.h"

namespace tilesmith::detail {

// Fields the log does not mention stay at their defaults (-1).
KernelResources parse_ptxas_report(const std::string& log, const std::string& entry);

}  // namespace tilesmith::detail
