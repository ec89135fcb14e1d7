#include <cstdlib>
#include <string>

#include "cli/scale_out.h"

namespace tilesmith::cli {

LaunchInfo launched_ranks() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"}) {
    const char* v = std::getenv(name);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end && *end == '\0' && n >= 1) return LaunchInfo{static_cast<int>(n), name};
  }
  return {};
}

}  // namespace tilesmith::cli
