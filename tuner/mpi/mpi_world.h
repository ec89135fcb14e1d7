#pragma once
// The MPI transport of a run over several ranks (docs/scale-out.md): JSON messages
// (the worker protocol's payloads, rank_messages.h) between rank 0 and the others, one
// message per MPI message on one tag of MPI_COMM_WORLD. The only file that calls MPI.
//
// Sends are nonblocking (MPI_Isend, the buffer kept until it completes): two ranks that
// send each other a large message at the same moment must not wait for each other's
// receive. Receives poll (MPI_Iprobe), so the caller's loop never blocks in MPI.
//
// The communicator returns errors instead of aborting the job (MPI_ERRORS_RETURN): a
// peer that died is an error of that call, which the caller turns into a lost rank.
// Whether the job survives a dead rank at all is the launcher's decision (OpenMPI's
// mpirun ends the job by default; docs/scale-out.md).
//
// Threads: initialised with MPI_THREAD_SERIALIZED; every call after init() must come
// from one thread at a time (rank 0: its communication thread, and the main thread only
// before it starts and after it ends).

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"

namespace tilesmith::mpi {

struct Incoming {
  int source = -1;
  std::string payload;
};

class MpiWorld {
 public:
  // MPI_Init_thread; failed_precondition when the library cannot give serialized threads.
  static Result<std::unique_ptr<MpiWorld>> init();
  // MPI_Finalize, unless abandon() was called (a lost peer can make finalize hang).
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // This rank's index among the ranks of its host (MPI_COMM_TYPE_SHARED), for
  // `--devices local-rank`.
  int local_rank() const { return local_rank_; }

  // Queues `payload` for `dest`; io_error when MPI refuses at once (the peer is gone).
  Status send(int dest, std::string payload);
  // The next message from any rank, if one has arrived; io_error from MPI.
  Result<std::optional<Incoming>> poll();
  // Completes what it can of the sends in flight; io_error naming the destination of a
  // failed one (the sends to it are dropped; *failed_dest says which, when given).
  Status progress(int* failed_dest = nullptr);
  // True while sends are in flight.
  bool sending() const { return !sends_.empty(); }
  // Ends the whole job now (MPI_Abort): for a rank that cannot go on and must not leave
  // the others waiting.
  [[noreturn]] void abort(int code);
  // Skip MPI_Finalize at destruction.
  void abandon() { abandoned_ = true; }

 private:
  MpiWorld() = default;
  struct Send;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  bool abandoned_ = false;
  std::list<std::unique_ptr<Send>> sends_;
};

}  // namespace tilesmith::mpi
