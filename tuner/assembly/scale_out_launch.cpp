#include <cstdlib>
#include <string>
#include <utility>

#include "tuner/assembly/scale_out.h"

namespace tilesmith {

namespace {
// A non-negative integer environment variable, or -1.
long env_count(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return end && *end == '\0' && n >= 0 ? n : -1;
}
}  // namespace

LaunchInfo launched_ranks() {
  // Each launcher's size variable, with its rank variable beside it.
  const std::pair<const char*, const char*> launchers[] = {
      {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"}, {"PMI_SIZE", "PMI_RANK"}, {"SLURM_STEP_NUM_TASKS", "SLURM_PROCID"}};
  for (const auto& [size_var, rank_var] : launchers) {
    const long n = env_count(size_var);
    if (n >= 1) return LaunchInfo{static_cast<int>(n), size_var, static_cast<int>(env_count(rank_var))};
  }
  return {};
}

}  // namespace tilesmith
