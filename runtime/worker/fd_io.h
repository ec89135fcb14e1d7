#pragma once
// File descriptors for the worker pipes: an owning handle, close-on-exec pipes, and
// reads and writes that survive EINTR and partial transfers. A write to a pipe whose
// reader is gone returns unavailable instead of raising SIGPIPE in this process.
//
// UniqueFd is move-only and not thread-safe; the free functions are thread-safe.

#include <chrono>
#include <string_view>
#include <utility>

#include "base/status.h"

namespace tilesmith::worker {

using Clock = std::chrono::steady_clock;

// Owns one file descriptor; closes it on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset() noexcept;

 private:
  int fd_ = -1;
};

struct Pipe {
  UniqueFd read, write;
};

// pipe2(O_CLOEXEC): neither end leaks into a process another thread spawns meanwhile.
Result<Pipe> make_pipe();

Status set_nonblocking(int fd);
Status set_cloexec(int fd);

// Blocking write of every byte (EINTR and short writes retried). io_error on failure;
// unavailable when the reader has closed the pipe (EPIPE).
Status write_all(int fd, std::string_view data);

// Like write_all for a non-blocking fd: waits with poll() until `deadline`; io_error
// "timed out" past it. SIGPIPE is held back for the calling thread while writing.
Status write_all_until(int fd, std::string_view data, Clock::time_point deadline);

// read() retried on EINTR. Returns bytes read, 0 at end of file, -1 with errno set
// (EAGAIN on an empty non-blocking fd).
long read_some(int fd, char* buffer, unsigned long capacity);

}  // namespace tilesmith::worker
