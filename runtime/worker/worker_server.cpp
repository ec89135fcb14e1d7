#include "runtime/worker/worker_server.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <thread>

#include "registry/template_library.h"
#include "runtime/worker/fd_io.h"
#include "runtime/worker/frame.h"
#include "runtime/worker/wire.h"

namespace tilesmith::worker {
namespace {

// The "problem" of a request that measures a problem rather than a candidate.
Result<GemmProblem> message_problem(const nlohmann::json& msg) {
  auto it = msg.find("problem");
  if (it == msg.end()) return Status::parse_error("problem missing");
  return problem_from_json(*it);
}

using nlohmann::json;

// The templates a worker can evaluate: its host's, the folders', the embedded ones,
// looked up by name and pinned by source hash.
class TemplateShelf {
 public:
  TemplateShelf(const ServeOptions& options, std::vector<KernelTemplate> own)
      : own_(std::move(own)) {
    for (const auto& dir : options.template_dirs) {
      auto lib = TemplateLibrary::from_directory(dir);
      if (lib.ok())
        libraries_.push_back(std::move(lib).value());
      else
        problems_.push_back(lib.status().message());
    }
    if (options.embedded_templates) {
      auto lib = TemplateLibrary::embedded();
      if (lib.ok())
        libraries_.push_back(std::move(lib).value());
      else
        problems_.push_back(lib.status().message());
    }
  }

  Result<const KernelTemplate*> find(const TemplateRef& ref) const {
    std::vector<std::string> other_hashes;
    auto consider = [&](const KernelTemplate& t) -> const KernelTemplate* {
      if (t.name() != ref.name) return nullptr;
      if (t.matches_source_hash(ref.source_hash)) return &t;
      other_hashes.push_back(t.source_hash());
      return nullptr;
    };
    for (const auto& t : own_)
      if (auto* hit = consider(t)) return hit;
    for (const auto& lib : libraries_)
      for (const auto& t : lib.templates())
        if (auto* hit = consider(t)) return hit;
    std::string why =
        "the worker has no template '" + ref.name + "' with source hash " + ref.source_hash;
    if (!other_hashes.empty()) {
      why += " (it has that name with hash";
      for (const auto& h : other_hashes) why += " " + h;
      why += ": the orchestrator and the worker read different files)";
    }
    for (const auto& p : problems_) why += "; " + p;
    return Status::not_found(why);
  }

 private:
  std::vector<KernelTemplate> own_;
  std::vector<TemplateLibrary> libraries_;
  std::vector<std::string> problems_;
};

class Server {
 public:
  Server(int in_fd, int out_fd, WorkerHost& host, const ServeOptions& options)
      : reader_(in_fd), out_fd_(out_fd), host_(host), options_(options) {}

  int run() {
    for (;;) {
      auto frame = reader_.read();
      if (!frame.ok()) {
        log("the request stream is broken: " + frame.status().message());
        return kWorkerExitProtocol;
      }
      if (!frame->has_value()) return kWorkerExitOk;
      auto msg = parse_message(**frame);
      if (!msg.ok()) {
        log("unreadable request: " + msg.status().message());
        return kWorkerExitProtocol;
      }
      const std::string type = message_type(*msg);
      const std::uint64_t id = message_id(*msg);
      std::optional<int> exit_code;
      try {
        exit_code = dispatch(type, id, *msg);
      } catch (const std::exception& e) {
        // Evaluators do not throw; if one does, its state is unknown: report and leave.
        reply_error(id,
                    Status::internal(std::string("the worker failed unexpectedly: ") + e.what()));
        return kWorkerExitBroken;
      }
      if (exit_code) return *exit_code;
    }
  }

 private:
  std::optional<int> dispatch(const std::string& type, std::uint64_t id, const json& msg) {
    if (type == kShutdown) return kWorkerExitOk;
    if (type == kHello) return hello(id, msg);
    // Said before any work: until it arrives the orchestrator knows the request had no
    // effect, so a worker that dies first costs the candidate nothing.
    send(json{{"type", kAccepted}, {"id", id}});
    if (!opened_) {
      reply_error(id, Status::failed_precondition("'" + type + "' before hello"));
      return std::nullopt;
    }
    if (type == kEvaluate || type == kPrepare) {
      auto req = parse_candidate_request(msg);
      if (!req.ok()) {
        reply_error(id, req.status());
        return std::nullopt;
      }
      auto tmpl = shelf_->find(req->tmpl);
      if (!tmpl.ok()) {
        reply_error(id, tmpl.status());
        return std::nullopt;
      }
      if (type == kPrepare) {
        Evaluation e = host_.evaluator().prepare(**tmpl, req->problem, req->config);
        reply_result(id, e, json::object());
        return std::nullopt;
      }
      if (host_.compile_only()) {
        reply_error(id, Status::failed_precondition("a compile-only worker does not evaluate"));
        return std::nullopt;
      }
      return candidate(id, **tmpl, req->problem, req->config, json::object(), req->race_ms);
    }
    if (type == kHealthCheck) {
      auto hc = host_.health_check();
      if (!hc.ok()) {
        reply_error(id, hc.status());
        return std::nullopt;
      }
      return candidate(id, hc->tmpl, hc->problem, hc->config, json{{"what", hc->what}});
    }
    if (type == kVendorBaseline) {
      auto problem = message_problem(msg);
      if (!problem.ok()) {
        reply_error(id, problem.status());
        return std::nullopt;
      }
      auto e = host_.evaluator().vendor_baseline(*problem);
      const std::string broken = host_.broken_reason();
      if (e.ok())
        reply_result(id, *e, json{{"broken", broken}});
      else
        reply_error(id, e.status(), broken);
      return broken.empty() ? std::nullopt : std::optional<int>(kWorkerExitBroken);
    }
    if (type == kReadFloor) {
      auto problem = message_problem(msg);
      if (!problem.ok()) {
        reply_error(id, problem.status());
        return std::nullopt;
      }
      if (host_.compile_only()) {
        reply_error(id, Status::failed_precondition("a compile-only worker measures no read floor"));
        return std::nullopt;
      }
      auto floor = host_.evaluator().read_floor(*problem);
      const std::string broken = host_.broken_reason();
      if (floor.ok()) {
        json f;
        to_json(f, *floor);
        send(json{{"type", kResult}, {"id", id}, {"read_floor", f}, {"broken", broken}});
      } else {
        reply_error(id, floor.status(), broken);
      }
      return broken.empty() ? std::nullopt : std::optional<int>(kWorkerExitBroken);
    }
    reply_error(id, Status::invalid("unknown request type '" + type + "'"));
    return std::nullopt;
  }

  std::optional<int> hello(std::uint64_t id, const json& msg) {
    std::optional<DeviceFacts> facts;
    if (auto it = msg.find("device"); it != msg.end()) {
      auto d = device_facts_from_json(*it);
      if (!d.ok()) {
        reply_error(id, d.status());
        return kWorkerExitOpenFailed;
      }
      facts = std::move(d).value();
    }
    if (!opened_) {
      Status st = host_.open(facts);
      if (!st.ok()) {
        log("cannot open: " + st.message());
        reply_error(id, st);
        return kWorkerExitOpenFailed;
      }
      opened_ = true;
      shelf_ = std::make_unique<TemplateShelf>(options_, host_.own_templates());
    }
    Evaluator& ev = host_.evaluator();
    send(json{{"type", kHello},
              {"id", id},
              {"protocol", kProtocolVersion},
              {"pid", long(::getpid())},
              {"mode", host_.compile_only() ? "compile" : "device"},
              {"device", nlohmann::json(ev.device())},
              {"vendor_name", ev.vendor_name()},
              {"measured_bandwidth", host_.measured_bandwidth()}});
    return std::nullopt;
  }

  // Compile, tell the orchestrator the run starts, run; merge the compile figures.
  std::optional<int> candidate(std::uint64_t id, const KernelTemplate& tmpl,
                               const GemmProblem& problem, const Config& config, json extra,
                               double race_ms = 0) {
    Evaluator& ev = host_.evaluator();
    Evaluation compiled = ev.prepare(tmpl, problem, config);
    if (!compiled.ok()) {
      reply_result(id, compiled, std::move(extra));
      return std::nullopt;
    }
    send(json{{"type", kProgress},
              {"id", id},
              {"phase", "running"},
              {"compile", nlohmann::json(compiled)}});
    Evaluation e = ev.evaluate_racing(tmpl, problem, config, race_ms);
    // evaluate() compiled again through the cache; the figures of the real compile
    // are the ones worth reporting.
    if (e.outcome != Outcome::kInvalid && e.outcome != Outcome::kCompileError) {
      e.compile_ms = compiled.compile_ms;
      e.compile_cache_hit = compiled.compile_cache_hit;
      if (e.compile_log.empty()) e.compile_log = compiled.compile_log;
    }
    const std::string broken = host_.broken_reason();
    extra["broken"] = broken;
    reply_result(id, e, std::move(extra));
    if (!broken.empty()) {
      log("the device context is lost (" + broken + "); exiting so a fresh process takes over");
      return kWorkerExitBroken;
    }
    return std::nullopt;
  }

  void reply_result(std::uint64_t id, const Evaluation& e, json extra) {
    json m{{"type", kResult}, {"id", id}, {"evaluation", nlohmann::json(e)}};
    for (auto& [k, v] : extra.items()) m[k] = v;
    send(m);
  }

  void reply_error(std::uint64_t id, const Status& st, const std::string& broken = {}) {
    json m = error_message(st, id);
    m["broken"] = broken;
    send(m);
  }

  void send(const json& m) {
    Status st = write_frame(out_fd_, m.dump(-1, ' ', false, json::error_handler_t::replace));
    if (!st.ok()) {
      // The orchestrator is gone or the pipe is broken: nobody is listening.
      log("cannot reply: " + st.message());
      std::_Exit(kWorkerExitProtocol);
    }
  }

  static void log(const std::string& line) {
    std::fprintf(stderr, "[tilesmith-worker %ld] %s\n", long(::getpid()), line.c_str());
    std::fflush(stderr);
  }

  FrameReader reader_;
  int out_fd_;
  WorkerHost& host_;
  const ServeOptions& options_;
  bool opened_ = false;
  std::unique_ptr<TemplateShelf> shelf_;
};

}  // namespace

int serve(int in_fd, int out_fd, WorkerHost& host, const ServeOptions& options) {
  return Server(in_fd, out_fd, host, options).run();
}

Result<ProtocolFds> claim_stdio_for_protocol() {
  ProtocolFds fds;
  fds.in = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
  fds.out = ::fcntl(1, F_DUPFD_CLOEXEC, 3);
  if (fds.in < 0 || fds.out < 0)
    return Status::io_error(std::string("dup of stdin/stdout: ") + std::strerror(errno));
  if (::dup2(2, 1) < 0)
    return Status::io_error(std::string("dup2 stderr to stdout: ") + std::strerror(errno));
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull >= 0) {
    ::dup2(devnull, 0);
    ::close(devnull);
  }
  // The orchestrator holds the only write end of our request pipe: when it closes (the
  // orchestrator exited or was killed), poll reports POLLHUP. Leaving then, rather than
  // at the next read, also ends a worker stuck in a kernel or a compile.
  const int in = fds.in;
  std::thread([in] {
    for (;;) {
      pollfd p{in, 0, 0};
      int rc = ::poll(&p, 1, -1);
      if (rc < 0 && errno == EINTR) continue;
      if (rc > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL))) std::_Exit(kWorkerExitOk);
      if (rc < 0) return;
    }
  }).detach();
  return fds;
}

}  // namespace tilesmith::worker
