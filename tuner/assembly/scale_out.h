#pragma once
// autotune-loop under mpirun or srun: a run over several hosts (docs/scale-out.md).
// Rank 0 is the run as on one host (proposers, LLM, history.csv, best_config.json: the
// only writer), measuring on its own devices and, through an MpiRunner, on every other
// rank's; the other ranks open their own devices (`--devices` is per host) and measure
// what rank 0 sends.
//
// Two implementations, chosen at build time: scale_out_mpi.cpp (MPI found by CMake) and
// scale_out_none.cpp (without MPI: a launch with several ranks is refused, so R copies
// never write the same files). Without a launcher, or with one rank, there is no
// ScaleOut and the run is the single-host one.

#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "tuner/assembly/open_evaluator.h"
#include "registry/kernel_template.h"
#include "tuner/loop/candidate_runner.h"

namespace tilesmith {

// How many ranks a launcher started this command as, from its environment: OpenMPI's
// OMPI_COMM_WORLD_SIZE, PMI_SIZE (MPICH, Slurm's PMI-2), Slurm's SLURM_STEP_NUM_TASKS
// (srun, any --mpi plugin). 1 without a launcher. `launcher` names the variable read;
// `rank` is this process's, from the same launcher (OMPI_COMM_WORLD_RANK, PMI_RANK,
// SLURM_PROCID), -1 where it did not set one.
struct LaunchInfo {
  int ranks = 1;
  std::string launcher;
  int rank = -1;
};
LaunchInfo launched_ranks();

// A rank's templates by name and source hash (null: this rank has none such).
using RankTemplateFinder =
    std::function<const KernelTemplate*(const std::string& name, const std::string& source_hash)>;

class ScaleOut {
 public:
  virtual ~ScaleOut() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank 0: the runner the loop uses — the other ranks' devices beside `local`'s, and its
  // evaluator's compiles spread over every host's `compile_slots` (this host's given
  // here). Waits for every rank to open its devices. Errors name the rank (a device that
  // did not open, another device model).
  virtual Result<CandidateRunner*> connect(CandidateRunner& local, std::size_t compile_slots) = 0;
  // Rank 0, after the run: candidates per host and per minute, in all, and the ratio to
  // rank 0's host alone; one line each. Empty before connect().
  virtual std::string host_summary() const = 0;
  // Ranks > 0: measure what rank 0 sends, and compile what it asks for on up to
  // `compile_slots` threads, until it says the run is over. Exit code.
  virtual int serve(CandidateRunner& runner, const RankTemplateFinder& find, std::size_t compile_slots) = 0;
  // Ranks > 0 whose devices did not open: say so to rank 0 (which stops the run with the
  // message) and wait for its shutdown. Exit code.
  virtual int refuse(const std::string& message) = 0;
  // Rank 0: tells the ranks the run is over (when connect() never ran or failed, too)
  // and ends MPI. The runner from connect() is gone afterwards. Idempotent.
  virtual void end() = 0;
};

// nullptr for a single-host run. Otherwise this process's part of a run over several
// ranks, MPI initialised; `--devices local-rank` in *flags becomes this rank's index
// among the ranks of its host (one rank per GPU). invalid_argument when launched with
// several ranks by a build without MPI; unavailable when MPI does not start.
Result<std::unique_ptr<ScaleOut>> join_scale_out(EvaluatorSettings* flags);

}  // namespace tilesmith
