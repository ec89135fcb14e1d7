#pragma once
// A real HTTP server on 127.0.0.1 for the llm and tuner tests (cpp-httplib), scripted by
// a handler the test sets. Every request is recorded. Handlers that must hang wait on
// hold(), which the destructor releases, so a test never waits for them at the end.

#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

namespace tilesmith::testing {

class LoopbackServer {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  struct Recorded {
    std::string path;
    std::string body;
    std::multimap<std::string, std::string> headers;  // as httplib keeps them (case-insensitive lookup)
    std::string header(const std::string& name) const {
      for (const auto& [k, v] : headers)
        if (strcasecmp(k.c_str(), name.c_str()) == 0) return v;
      return "";
    }
  };

  // port 0: any free port.
  explicit LoopbackServer(int port = 0) {
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      Handler h;
      {
        std::lock_guard lock(mutex_);
        Recorded r;
        r.path = req.path;
        r.body = req.body;
        for (const auto& [k, v] : req.headers) r.headers.emplace(k, v);
        requests_.push_back(std::move(r));
        h = handler_;
      }
      if (h) h(req, res);
      else res.status = 500;
    });
    if (port == 0) {
      port_ = server_.bind_to_any_port("127.0.0.1");
    } else {
      port_ = server_.bind_to_port("127.0.0.1", port) ? port : -1;
    }
    if (port_ > 0) {
      thread_ = std::thread([this] { server_.listen_after_bind(); });
      for (int i = 0; i < 500 && !server_.is_running(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  ~LoopbackServer() {
    release();
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void set_handler(Handler h) {
    std::lock_guard lock(mutex_);
    handler_ = std::move(h);
  }

  std::vector<Recorded> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  size_t request_count() const {
    std::lock_guard lock(mutex_);
    return requests_.size();
  }

  // For handlers that simulate a server that never answers: waits until released or
  // `limit` passes.
  void hold(std::chrono::milliseconds limit) {
    std::unique_lock lock(hold_mutex_);
    hold_cv_.wait_for(lock, limit, [this] { return released_; });
  }
  void release() {
    {
      std::lock_guard lock(hold_mutex_);
      released_ = true;
    }
    hold_cv_.notify_all();
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = -1;
  mutable std::mutex mutex_;
  Handler handler_;
  std::vector<Recorded> requests_;
  std::mutex hold_mutex_;
  std::condition_variable hold_cv_;
  bool released_ = false;
};

// A loopback port with nothing listening (bound, read, closed).
inline int unused_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace tilesmith::testing
