#include "tuner/mpi/mpi_world.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>

namespace tilesmith::mpi {
namespace {

// One tag for every message: the payload's "type" says what it is, and MPI keeps the
// order of messages between two ranks on one tag, which the protocol relies on (a
// result is never overtaken by the next request's answer).
constexpr int kTag = 7041;

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}

}  // namespace

struct MpiWorld::Send {
  int dest = 0;
  std::string buffer;
  MPI_Request request = MPI_REQUEST_NULL;
};

Result<std::unique_ptr<MpiWorld>> MpiWorld::init() {
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  if (rc != MPI_SUCCESS) return Status::unavailable("MPI_Init_thread failed: " + mpi_error(rc));
  std::unique_ptr<MpiWorld> w(new MpiWorld());
  if (provided < MPI_THREAD_SERIALIZED) {
    w->abandoned_ = true;
    MPI_Finalize();
    return Status::failed_precondition("the MPI library gives no MPI_THREAD_SERIALIZED (it gave level " +
                                       std::to_string(provided) + "); rank 0 talks MPI from its own thread");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &w->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &w->size_);
  MPI_Comm local;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w->rank_, MPI_INFO_NULL, &local) == MPI_SUCCESS) {
    MPI_Comm_rank(local, &w->local_rank_);
    MPI_Comm_free(&local);
  }
  return w;
}

MpiWorld::~MpiWorld() {
  if (abandoned_) return;
  // What is still in flight is waited for: a shutdown message must reach its rank.
  for (auto& s : sends_) MPI_Wait(&s->request, MPI_STATUS_IGNORE);
  sends_.clear();
  MPI_Finalize();
}

Status MpiWorld::send(int dest, std::string payload) {
  if (payload.size() > static_cast<std::size_t>(INT_MAX)) return Status::invalid("message too large for MPI");
  auto s = std::make_unique<Send>();
  s->dest = dest;
  s->buffer = std::move(payload);
  int rc = MPI_Isend(s->buffer.data(), static_cast<int>(s->buffer.size()), MPI_CHAR, dest, kTag, MPI_COMM_WORLD,
                     &s->request);
  if (rc != MPI_SUCCESS) return Status::io_error("sending to rank " + std::to_string(dest) + ": " + mpi_error(rc));
  sends_.push_back(std::move(s));
  return {};
}

Status MpiWorld::progress(int* failed_dest) {
  for (auto it = sends_.begin(); it != sends_.end();) {
    int done = 0;
    int rc = MPI_Test(&(*it)->request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      const int dest = (*it)->dest;
      if (failed_dest) *failed_dest = dest;
      sends_.remove_if([dest](const std::unique_ptr<Send>& s) { return s->dest == dest; });
      return Status::io_error("sending to rank " + std::to_string(dest) + ": " + mpi_error(rc));
    }
    it = done ? sends_.erase(it) : std::next(it);
  }
  return {};
}

Result<std::optional<Incoming>> MpiWorld::poll() {
  int flag = 0;
  MPI_Status st;
  int rc = MPI_Iprobe(MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, &flag, &st);
  if (rc != MPI_SUCCESS) return Status::io_error("probing for messages: " + mpi_error(rc));
  if (!flag) return std::optional<Incoming>();
  int count = 0;
  MPI_Get_count(&st, MPI_CHAR, &count);
  Incoming in;
  in.source = st.MPI_SOURCE;
  in.payload.resize(static_cast<std::size_t>(count));
  rc = MPI_Recv(in.payload.data(), count, MPI_CHAR, st.MPI_SOURCE, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS)
    return Status::io_error("receiving from rank " + std::to_string(st.MPI_SOURCE) + ": " + mpi_error(rc));
  return std::optional<Incoming>(std::move(in));
}

void MpiWorld::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace tilesmith::mpi
