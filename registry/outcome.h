#pragma once
// Every evaluated candidate ends with one of these; never a sentinel time.

#include <string>

#include "base/status.h"

namespace tilesmith {

enum class Outcome {
  kOk,             // compiled, ran, validated, timed
  kInvalid,        // rejected before compiling (domain, constraint, device limit, unsupported problem)
  kCompileError,   // the compiler rejected the source; the log is kept
  kResourceError,  // compiled but cannot launch: too many registers/threads/shared memory
  kLaunchError,    // the launch or the run reported an error
  kWrongResult,    // ran, but the output did not match the CPU reference
  kTimeout,        // compile or run passed its deadline
  kCrash,          // the worker or the compiler died
};

const char* outcome_name(Outcome o);  // "ok", "invalid", "compile_error", ...
Result<Outcome> parse_outcome(const std::string& s);

}  // namespace tilesmith
