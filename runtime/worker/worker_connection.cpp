#include "runtime/worker/worker_connection.h"

#include <poll.h>

#include <cerrno>
#include <cstring>

#include "runtime/worker/wire.h"

namespace tilesmith::worker {
namespace {
constexpr std::size_t kMaxLineChars = 2000;
}

void LineTail::push(std::string line, const std::function<void(const std::string&)>& on_line) {
  if (on_line) on_line(line);
  lines_.push_back(std::move(line));
  while (lines_.size() > max_lines_) lines_.pop_front();
}

void LineTail::feed(const char* data, std::size_t n,
                    const std::function<void(const std::string&)>& on_line) {
  for (std::size_t i = 0; i < n; ++i) {
    char c = data[i];
    if (c == '\n') {
      push(std::move(partial_), on_line);
      partial_.clear();
    } else if (partial_.size() < kMaxLineChars) {
      partial_.push_back(c);
    } else if (partial_.size() == kMaxLineChars) {
      partial_ += " [cut]";
    }
  }
}

void LineTail::flush(const std::function<void(const std::string&)>& on_line) {
  if (!partial_.empty()) push(std::move(partial_), on_line);
  partial_.clear();
}

WorkerConnection::WorkerConnection(const WorkerLaunch& launch) : tail_(launch.stderr_tail_lines) {}

Result<std::unique_ptr<WorkerConnection>> WorkerConnection::spawn(const WorkerLaunch& launch) {
  TS_ASSIGN_OR_RETURN(Pipe in, make_pipe());
  TS_ASSIGN_OR_RETURN(Pipe out, make_pipe());
  TS_ASSIGN_OR_RETURN(Pipe err, make_pipe());
  std::unique_ptr<WorkerConnection> c(new WorkerConnection(launch));
  SpawnSpec spec{launch.argv, launch.env, in.read.get(), out.write.get(), err.write.get()};
  TS_ASSIGN_OR_RETURN(c->child_, ChildProcess::spawn(spec));
  // The child's ends are closed here, so the worker's death is an end of file for us.
  c->to_worker_ = std::move(in.write);
  c->from_worker_ = std::move(out.read);
  c->worker_stderr_ = std::move(err.read);
  TS_RETURN_IF_ERROR(set_nonblocking(c->to_worker_.get()));
  TS_RETURN_IF_ERROR(set_nonblocking(c->from_worker_.get()));
  TS_RETURN_IF_ERROR(set_nonblocking(c->worker_stderr_.get()));
  if (launch.on_stderr_line) {
    std::string prefix = "[worker " + std::to_string(c->child_.pid()) + "] ";
    auto sink = launch.on_stderr_line;
    c->on_line_ = [prefix, sink](const std::string& line) { sink(prefix + line); };
  }
  return c;
}

WorkerConnection::~WorkerConnection() { kill(); }

Status WorkerConnection::send(const nlohmann::json& message, Clock::time_point deadline) {
  if (!to_worker_) return Status::unavailable("the worker's request pipe is closed");
  std::string payload = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return write_all_until(to_worker_.get(), encode_frame(payload), deadline);
}

void WorkerConnection::read_stderr_chunk() {
  char buf[16384];
  for (;;) {
    long n = read_some(worker_stderr_.get(), buf, sizeof buf);
    if (n > 0) {
      tail_.feed(buf, std::size_t(n), on_line_);
      continue;
    }
    if (n == 0) {  // every writer is gone
      tail_.flush(on_line_);
      worker_stderr_.reset();
    }
    return;  // EAGAIN or an error: nothing more now
  }
}

void WorkerConnection::drain_stderr() {
  if (worker_stderr_) read_stderr_chunk();
}

WorkerConnection::Received WorkerConnection::receive(Clock::time_point deadline) {
  Received r;
  char buf[65536];
  for (;;) {
    std::string payload;
    switch (decoder_.next(&payload)) {
      case FrameDecoder::State::kFrame: {
        auto msg = parse_message(payload);
        if (!msg.ok()) {
          r.kind = Kind::kProtocolError;
          r.detail = msg.status().message();
        } else {
          r.kind = Kind::kMessage;
          r.message = std::move(msg).value();
        }
        return r;
      }
      case FrameDecoder::State::kError:
        r.kind = Kind::kProtocolError;
        r.detail = decoder_.error();
        return r;
      case FrameDecoder::State::kNeedMore:
        break;
    }
    if (reply_eof_) {
      r.kind = Kind::kClosed;
      r.detail = decoder_.buffered()
                     ? "it stopped in the middle of a message (" +
                           std::to_string(decoder_.buffered()) + " bytes of it arrived)"
                     : "it closed its reply pipe";
      return r;
    }
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      r.kind = Kind::kDeadline;
      return r;
    }
    pollfd fds[2] = {{from_worker_.get(), POLLIN, 0},
                     {worker_stderr_ ? worker_stderr_.get() : -1, POLLIN, 0}};
    // A bounded wait keeps the deadline honest whatever poll's rounding.
    int rc = ::poll(fds, 2, int(std::min<long long>(left, 1000)));
    if (rc < 0) {
      if (errno == EINTR) continue;
      r.kind = Kind::kProtocolError;
      r.detail = std::string("poll: ") + std::strerror(errno);
      return r;
    }
    if (fds[1].revents) read_stderr_chunk();
    if (fds[0].revents) {
      for (;;) {
        long n = read_some(from_worker_.get(), buf, sizeof buf);
        if (n > 0) {
          decoder_.feed(buf, std::size_t(n));
          continue;
        }
        if (n == 0)
          reply_eof_ = true;
        else if (errno != EAGAIN && errno != EWOULDBLOCK)
          reply_eof_ = true;
        break;
      }
    }
  }
}

std::string WorkerConnection::ended_description(bool killed_running) {
  // What is left in the stderr pipe is the worker's last words (an abort message, a
  // driver's fault report): read it now that every writer is dead.
  if (worker_stderr_) {
    read_stderr_chunk();
    tail_.flush(on_line_);
  }
  if (killed_running) return "it was still running and was killed (SIGKILL to its process group)";
  return describe_wait_status(child_.wait_status());
}

std::string WorkerConnection::kill() {
  if (!ended_.empty()) return ended_;
  const bool killed_running = child_.running() && child_.kill_and_reap();
  to_worker_.reset();
  ended_ = ended_description(killed_running);
  from_worker_.reset();
  worker_stderr_.reset();
  return ended_;
}

std::string WorkerConnection::collect_exit(std::chrono::milliseconds grace) {
  if (ended_.empty() && child_.running()) child_.wait_for_exit(grace);
  return kill();
}

void WorkerConnection::shutdown(std::chrono::milliseconds grace) {
  if (child_.running()) {
    (void)send(nlohmann::json{{"type", kShutdown}}, Clock::now() + std::chrono::milliseconds(200));
    to_worker_.reset();  // and an end of file, for a worker between requests
    child_.wait_for_exit(grace);
  }
  kill();
}

bool WorkerConnection::alive() { return child_.running() && !child_.try_reap(); }

std::string WorkerConnection::stderr_excerpt(std::size_t lines, std::size_t max_chars) const {
  std::vector<std::string> picked;
  for (auto it = tail_.lines().rbegin(); it != tail_.lines().rend() && picked.size() < lines; ++it)
    if (it->find_first_not_of(" \t\r") != std::string::npos) picked.push_back(*it);
  std::string out;
  for (auto it = picked.rbegin(); it != picked.rend(); ++it) {
    if (!out.empty()) out += " | ";
    out += *it;
  }
  if (out.size() > max_chars) out = "..." + out.substr(out.size() - max_chars);
  return out;
}

}  // namespace tilesmith::worker
