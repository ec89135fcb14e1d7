#include "runtime/worker/fd_io.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace tilesmith::worker {
namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// A write to a pipe without a reader raises SIGPIPE, whose default action ends the
// whole orchestrator. Blocking it for this thread turns it into EPIPE; a SIGPIPE that
// our write left pending is then consumed, so the caller's signal state is unchanged.
// (The usual library technique: the process-wide disposition is the application's.)
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_set_);
    sigaddset(&pipe_set_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set_, &old_);
  }
  void note_epipe() { raised_ = true; }
  ~SigpipeGuard() {
    if (raised_ && !was_pending_) {
      timespec zero{};
      while (sigtimedwait(&pipe_set_, nullptr, &zero) == -1 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_set_, old_;
  bool was_pending_ = false, raised_ = false;
};

}  // namespace

void UniqueFd::reset() noexcept {
  if (fd_ >= 0) {
    // Linux releases the descriptor even when close() reports EINTR: never retry.
    ::close(fd_);
    fd_ = -1;
  }
}

Result<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Status::io_error(errno_text("pipe2"));
  Pipe p;
  p.read = UniqueFd(fds[0]);
  p.write = UniqueFd(fds[1]);
  return p;
}

Status set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
    return Status::io_error(errno_text("fcntl O_NONBLOCK"));
  return {};
}

Status set_cloexec(int fd) {
  int flags = ::fcntl(fd, F_GETFD);
  if (flags < 0 || ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC) != 0)
    return Status::io_error(errno_text("fcntl FD_CLOEXEC"));
  return {};
}

Status write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) return Status::unavailable("the reader closed the pipe");
      return Status::io_error(errno_text("write"));
    }
    data.remove_prefix(std::size_t(n));
  }
  return {};
}

Status write_all_until(int fd, std::string_view data, Clock::time_point deadline) {
  SigpipeGuard guard;
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n >= 0) {
      data.remove_prefix(std::size_t(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EPIPE) {
      guard.note_epipe();
      return Status::unavailable("the reader closed the pipe");
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) return Status::io_error(errno_text("write"));
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Status::io_error("write timed out: the reader is not reading");
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, int(std::min<long long>(left, 1000))) < 0 && errno != EINTR)
      return Status::io_error(errno_text("poll"));
  }
  return {};
}

long read_some(int fd, char* buffer, unsigned long capacity) {
  for (;;) {
    ssize_t n = ::read(fd, buffer, capacity);
    if (n < 0 && errno == EINTR) continue;
    return long(n);
  }
}

}  // namespace tilesmith::worker
