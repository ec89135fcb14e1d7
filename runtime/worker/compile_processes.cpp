#include "runtime/worker/compile_processes.h"

#include "runtime/worker/exchange.h"
#include "runtime/worker/wire.h"

namespace tilesmith::worker {

CompileProcesses::CompileProcesses(WorkerLaunch launch, DeviceFacts device, int max_processes,
                                   DeadlinePolicy& policy)
    : launch_(std::move(launch)),
      device_(std::move(device)),
      max_processes_(std::max(1, max_processes)),
      policy_(policy) {}

CompileProcesses::~CompileProcesses() {
  std::vector<std::unique_ptr<WorkerConnection>> idle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle.swap(idle_);
  }
  for (auto& h : idle) h->shutdown(std::chrono::milliseconds(1000));
}

CompileProcesses::Counters CompileProcesses::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

Result<std::unique_ptr<WorkerConnection>> CompileProcesses::start_helper() {
  TS_ASSIGN_OR_RETURN(auto conn, WorkerConnection::spawn(launch_));
  std::uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_id_++;
    ++counters_.started;
  }
  nlohmann::json hello{{"type", kHello}, {"id", id}, {"device", nlohmann::json(device_)}};
  ExchangeLimits limits{.compile = policy_.start(),
                        .run = policy_.start(),
                        .starts_in_run = true,
                        .expect_accepted = false};
  ExchangeResult r = exchange(*conn, hello, limits);
  if (r.kind == ExchangeResult::Kind::kRejected) return r.rejection.with_context("compile helper");
  if (r.kind != ExchangeResult::Kind::kReply || message_type(r.reply) != kHello) {
    std::string why = r.kind == ExchangeResult::Kind::kLost ? r.lost.message
                                                            : "it exited at once (" + r.ended + ")";
    return Status::unavailable("the compile helper did not start: " + why);
  }
  return conn;
}

std::unique_ptr<WorkerConnection> CompileProcesses::acquire(Status* failure) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !idle_.empty() || live_ < max_processes_; });
    if (!idle_.empty()) {
      auto h = std::move(idle_.back());
      idle_.pop_back();
      return h;
    }
    ++live_;
  }
  // Started outside the lock: a slow start must not hold up the other helpers.
  auto h = start_helper();
  if (h.ok()) return std::move(h).value();
  *failure = h.status();
  {
    std::lock_guard<std::mutex> lock(mu_);
    --live_;
  }
  cv_.notify_one();
  return nullptr;
}

void CompileProcesses::release(std::unique_ptr<WorkerConnection> helper) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (helper)
      idle_.push_back(std::move(helper));
    else
      --live_;
  }
  cv_.notify_one();
}

Evaluation CompileProcesses::prepare(const KernelTemplate& tmpl, const GemmProblem& problem,
                                     const Config& config) {
  return prepare_once(tmpl, problem, config, /*may_resend=*/true);
}

Evaluation CompileProcesses::prepare_once(const KernelTemplate& tmpl, const GemmProblem& problem,
                                          const Config& config, bool may_resend) {
  Status failure;
  auto helper = acquire(&failure);
  if (!helper) {
    Evaluation e;
    e.outcome = Outcome::kCrash;
    e.message = "not compiled: no compile helper could be started (" + failure.message() + ")";
    return e;
  }
  std::uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_id_++;
    ++counters_.compiles;
  }
  ExchangeLimits limits{.compile = policy_.compile(), .run = policy_.compile()};
  ExchangeResult r =
      exchange(*helper, make_candidate_request(kPrepare, id, tmpl, problem, config), limits);
  Evaluation e;
  switch (r.kind) {
    case ExchangeResult::Kind::kReply: {
      auto parsed = reply_evaluation(r.reply);
      if (parsed.ok()) {
        e = std::move(parsed).value();
        if (!e.compile_cache_hit && e.outcome != Outcome::kInvalid)
          policy_.note_compile_ms(e.compile_ms);
        release(std::move(helper));
        return e;
      }
      helper->kill();
      e.outcome = Outcome::kCrash;
      e.message =
          "the compile helper sent an unreadable result (" + parsed.status().message() + ")";
      break;
    }
    case ExchangeResult::Kind::kRejected:
      // The helper is fine; the request was not (a template it does not have).
      e.outcome = Outcome::kInvalid;
      e.message = r.rejection.message();
      release(std::move(helper));
      return e;
    case ExchangeResult::Kind::kLost:
      e = std::move(r.lost);
      e.message = "compile helper: " + e.message;
      break;
    case ExchangeResult::Kind::kCancelled:  // no cancel flag is passed; handled for completeness
      e.outcome = Outcome::kCrash;
      e.message = "compile helper: cancelled";
      break;
    case ExchangeResult::Kind::kNotSent:
      // An idle helper had died: nothing of this candidate ran, so it may go to a fresh
      // helper (once).
      release(nullptr);
      if (may_resend) return prepare_once(tmpl, problem, config, false);
      e.outcome = Outcome::kCrash;
      e.message = "not compiled: two compile helpers in a row died before taking the request (" +
                  r.ended + ")";
      return e;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (e.outcome == Outcome::kTimeout)
      ++counters_.timeouts;
    else
      ++counters_.crashes;
  }
  helper.reset();
  release(nullptr);
  return e;
}

}  // namespace tilesmith::worker
