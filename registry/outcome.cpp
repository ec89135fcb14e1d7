#include "registry/outcome.h"

namespace tilesmith {

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kOk: return "ok";
    case Outcome::kInvalid: return "invalid";
    case Outcome::kCompileError: return "compile_error";
    case Outcome::kResourceError: return "resource_error";
    case Outcome::kLaunchError: return "launch_error";
    case Outcome::kWrongResult: return "wrong_result";
    case Outcome::kTimeout: return "timeout";
    case Outcome::kCrash: return "crash";
  }
  return "?";
}

Result<Outcome> parse_outcome(const std::string& s) {
  for (Outcome o : {Outcome::kOk, Outcome::kInvalid, Outcome::kCompileError, Outcome::kResourceError,
                    Outcome::kLaunchError, Outcome::kWrongResult, Outcome::kTimeout, Outcome::kCrash})
    if (s == outcome_name(o)) return o;
  return Status::invalid("unknown outcome '" + s + "'");
}

}  // namespace tilesmith
