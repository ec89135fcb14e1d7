#pragma once
// A rank other than 0 of a run over several hosts: this host's devices opened from the
// same settings as rank 0's, the templates rank 0 may name, and what it sends measured
// until it says the run is over. Writes nothing but log lines.

#include "tuner/assembly/run_settings.h"
#include "tuner/assembly/scale_out.h"

namespace tilesmith {

// The process's exit code (ScaleOut::serve's, or ScaleOut::refuse's when this host's
// templates or devices do not open: rank 0 then stops the run with the reason).
int serve_rank(const RunSettings& settings, ScaleOut& scale_out);

}  // namespace tilesmith
