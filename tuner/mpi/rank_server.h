#pragma once
// A rank other than 0 in a run over several hosts (docs/scale-out.md): it measures what
// rank 0 sends on its own devices, through the runner the command opened on this host
// (worker processes over `--devices`, or replay workers), and writes nothing: rank 0
// is the run's only writer.
//
// It says hello (host, devices, width, fingerprint, compile slots), then serves evaluate
// and prepare (compile) requests until shutdown, reporting each candidate's start (rank 0 journals it as in flight)
// and its result, and a heartbeat every second. A request for a template this rank does
// not have (another --kernels-dir or --replay-file) is an error message: rank 0 stops using
// the rank and gives its candidates to the others.
//
// serve_rank() does every MPI call on the calling thread; compiles run on threads of their
// own and hand their results to it.

#include <cstdint>
#include <functional>
#include <string>

#include "registry/kernel_template.h"
#include "tuner/loop/candidate_runner.h"
#include "tuner/mpi/mpi_world.h"

namespace tilesmith::mpi {

// The template an evaluate request names; null when this rank has none of that name and
// source hash.
using TemplateFinder = std::function<const KernelTemplate*(const std::string& name, const std::string& source_hash)>;

struct RankServerOptions {
  std::string host;  // the rank's host name
  // A test hook (TILESMITH_MPI_TEST_KILL=RANK:N, read by the command): after sending its
  // N-th result this rank kills itself with SIGKILL, as a lost host would vanish. 0: never.
  std::uint64_t kill_after_results = 0;
  // Compiles run at once for rank 0 (prepare requests, on threads calling the runner's
  // evaluator().prepare()): the host's compile helpers, so a run over several hosts
  // compiles on all of them instead of on rank 0's alone. 0: none (rank 0 compiles).
  std::size_t compile_slots = 0;
};

struct ServeEnd {
  int exit_code = 0;  // 0: rank 0 said shutdown; 1: rank 0 cannot be reached
  // True when MPI_Finalize must be skipped: rank 0 lost a rank (finalize would wait for
  // the dead one) or cannot be reached itself.
  bool skip_finalize = false;
};

// Serves rank 0 until it says shutdown or cannot be reached.
ServeEnd serve_rank(MpiWorld& world, CandidateRunner& runner, const TemplateFinder& find,
                    const RankServerOptions& options);

// Says to rank 0 that this rank cannot serve (its devices did not open: `message`), and
// waits for the shutdown.
ServeEnd refuse_rank(MpiWorld& world, const std::string& message);

}  // namespace tilesmith::mpi
