// The build without MPI: a single host only. Launched with several ranks (mpirun -n 2,
// srun -n 2) every copy would tune into the same results folder; refuse instead.
#include "tuner/assembly/scale_out.h"

namespace tilesmith {

Result<std::unique_ptr<ScaleOut>> join_scale_out(EvaluatorSettings* flags) {
  const LaunchInfo launch = launched_ranks();
  if (launch.ranks > 1)
    return Status::invalid("launched as " + std::to_string(launch.ranks) + " ranks (" + launch.launcher + "=" +
                           std::to_string(launch.ranks) +
                           "), but this build of autotune-loop has no MPI: install libopenmpi-dev and rebuild "
                           "(scripts/setup.sh does), or run one process per host without mpirun/srun");
  if (flags->devices == "local-rank") flags->devices = "0";
  return std::unique_ptr<ScaleOut>();
}

}  // namespace tilesmith
