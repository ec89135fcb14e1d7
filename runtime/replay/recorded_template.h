#pragma once
// A recording as a KernelTemplate (source-less: replay only), named after the
// recording so a ReplayEvaluator over the same recording accepts it.

#include "registry/kernel_template.h"
#include "runtime/replay/recording.h"

namespace tilesmith::replay {

KernelTemplate recorded_template(const Recording& recording);

}  // namespace tilesmith::replay
