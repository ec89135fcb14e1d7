#include "runtime/replay/recorded_template.h"

namespace tilesmith::replay {

KernelTemplate recorded_template(const Recording& recording) {
  return KernelTemplate::recorded(recording.name(), recording.space(),
                                  "Kernel Tuner recording of " + recording.describe() + " (" +
                                      recording.origin() +
                                      "; constraints: " + recording.space_origin() + ")",
                                  recording.math());
}

}  // namespace tilesmith::replay
