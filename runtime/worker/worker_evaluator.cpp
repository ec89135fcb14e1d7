#include "runtime/worker/worker_evaluator.h"

#include <cstdio>
#include <thread>

#include "runtime/worker/compile_processes.h"
#include "runtime/worker/exchange.h"
#include "runtime/worker/wire.h"
#include "runtime/worker/worker_connection.h"

namespace tilesmith::worker {
namespace {

using Clock = std::chrono::steady_clock;

Evaluation not_run(const std::string& why) {
  Evaluation e;
  e.outcome = Outcome::kLaunchError;
  e.message = "not run: " + why;
  return e;
}

std::string device_label(const DeviceFacts& d) {
  return d.name + " (" + d.backend + ":" + std::to_string(d.ordinal) + ")";
}

}  // namespace

std::string WorkerStatus::summary() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s: %s, %llu evaluated, %llu crash%s, %llu timeout%s, %llu lost context%s, %llu "
                "worker%s started, "
                "compiles %llu (%llu crashed, %llu timed out)",
                device.c_str(), healthy ? (busy ? "busy" : "idle") : "UNHEALTHY",
                (unsigned long long)evaluations, (unsigned long long)crashes,
                crashes == 1 ? "" : "es", (unsigned long long)timeouts, timeouts == 1 ? "" : "s",
                (unsigned long long)lost_contexts, lost_contexts == 1 ? "" : "s",
                (unsigned long long)workers_started, workers_started == 1 ? "" : "s",
                (unsigned long long)compiles, (unsigned long long)compile_crashes,
                (unsigned long long)compile_timeouts);
  std::string out = buf;
  if (!healthy) {
    std::snprintf(buf, sizeof buf, "; next health check in %.1f s", backoff_remaining_s);
    out += buf;
  }
  if (!last_problem.empty()) out += "; last problem: " + last_problem;
  return out;
}

WorkerEvaluator::WorkerEvaluator(WorkerEvaluatorOptions options, std::filesystem::path executable)
    : options_(std::move(options)),
      executable_(std::move(executable)),
      policy_(options_.deadlines, options_.worker.gpu.timing),
      health_(options_.health) {}

Result<std::unique_ptr<WorkerEvaluator>> WorkerEvaluator::start(WorkerEvaluatorOptions options) {
  TS_ASSIGN_OR_RETURN(auto exe, find_worker_executable(options.worker.executable));
  std::unique_ptr<WorkerEvaluator> ev(new WorkerEvaluator(std::move(options), std::move(exe)));
  {
    std::lock_guard<std::mutex> lock(ev->drive_mu_);
    TS_RETURN_IF_ERROR(ev->start_worker_locked());
  }
  WorkerLaunch helpers{worker_argv(ev->options_.worker, ev->executable_, /*compile_only=*/true),
                       ev->options_.worker.env, ev->options_.stderr_tail_lines,
                       ev->options_.on_worker_log};
  ev->compiles_ = std::make_unique<CompileProcesses>(std::move(helpers), ev->facts_,
                                                     ev->options_.compile_processes, ev->policy_);
  return ev;
}

WorkerEvaluator::~WorkerEvaluator() {
  stop();
  compiles_.reset();
  std::lock_guard<std::mutex> lock(drive_mu_);
  if (worker_) worker_->shutdown(std::chrono::milliseconds(2000));
  worker_.reset();
}

const DeviceFacts& WorkerEvaluator::device() const { return facts_; }
std::string WorkerEvaluator::vendor_name() const { return vendor_name_; }

Status WorkerEvaluator::start_worker_locked() {
  worker_.reset();
  worker_problem_key_.clear();
  WorkerLaunch launch{worker_argv(options_.worker, executable_, false), options_.worker.env,
                      options_.stderr_tail_lines, options_.on_worker_log};
  TS_ASSIGN_OR_RETURN(auto conn, WorkerConnection::spawn(launch));
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    ++status_.workers_started;
  }
  const std::uint64_t id = next_id_++;
  ExchangeLimits limits{.compile = policy_.start(),
                        .run = policy_.start(),
                        .starts_in_run = true,
                        .expect_accepted = false,
                        .cancel = &abandon_};
  ExchangeResult r = exchange(*conn, nlohmann::json{{"type", kHello}, {"id", id}}, limits);
  switch (r.kind) {
    case ExchangeResult::Kind::kReply:
      break;
    case ExchangeResult::Kind::kRejected:
      return r.rejection.with_context("the worker cannot open " + options_.worker.backend +
                                      " device " + std::to_string(options_.worker.device));
    case ExchangeResult::Kind::kCancelled:
      return Status::unavailable("abandoned while the worker was starting");
    case ExchangeResult::Kind::kLost:
      return Status::unavailable("the worker did not start: " + r.lost.message);
    case ExchangeResult::Kind::kNotSent:
      return Status::unavailable("the worker exited at once: " + r.ended + "; " +
                                 conn->stderr_excerpt());
  }
  if (message_type(r.reply) != kHello || !r.reply.contains("device"))
    return Status::unavailable("the worker's hello is malformed");
  if (int v = r.reply.value("protocol", 0); v != kProtocolVersion)
    return Status::unavailable("the worker speaks protocol " + std::to_string(v) + ", not " +
                               std::to_string(kProtocolVersion) + " (a stale tilesmith-worker?)");
  TS_ASSIGN_OR_RETURN(DeviceFacts facts, device_facts_from_json(r.reply.at("device")));
  if (facts_.backend.empty()) {
    // The first worker's facts stand for the evaluator's lifetime: results are keyed by them.
    facts_ = std::move(facts);
    vendor_name_ = r.reply.value("vendor_name", std::string());
    if (auto it = r.reply.find("measured_bandwidth"); it != r.reply.end() && it->is_number())
      measured_bandwidth_ = it->get<double>();
    std::lock_guard<std::mutex> lock(status_mu_);
    status_.device = device_label(facts_);
  } else if (facts.fingerprint() != facts_.fingerprint()) {
    return Status::unavailable("the restarted worker reports another device (" +
                               facts.fingerprint() + ", was " + facts_.fingerprint() + ")");
  }
  worker_ = std::move(conn);
  publish_locked();
  return {};
}

void WorkerEvaluator::publish_locked() {
  std::lock_guard<std::mutex> lock(status_mu_);
  status_.worker_pid = worker_ ? long(worker_->pid()) : -1;
  status_.consecutive_losses = health_.consecutive_losses();
  status_.healthy = health_.failed_checks() == 0;
  next_attempt_ = health_.next_attempt();
}

void WorkerEvaluator::worker_lost_locked(const std::string& what, Outcome outcome) {
  worker_.reset();
  worker_problem_key_.clear();
  health_.on_worker_lost();
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    if (outcome == Outcome::kTimeout)
      ++status_.timeouts;
    else if (outcome == Outcome::kCrash)
      ++status_.crashes;
    else
      ++status_.lost_contexts;
    status_.last_problem = std::string(outcome_name(outcome)) + ": " + what;
  }
  publish_locked();
}

Status WorkerEvaluator::health_check_locked() {
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    ++status_.health_checks;
  }
  // A fresh worker: the check is about the device, not about a process that has seen
  // the failures.
  if (worker_) worker_->kill();
  worker_.reset();
  std::string failure;
  Status started = start_worker_locked();
  if (!started.ok()) {
    failure = started.message();
  } else {
    const std::uint64_t id = next_id_++;
    ExchangeLimits limits{
        .compile = policy_.compile(), .run = policy_.run(nullptr, true), .cancel = &abandon_};
    ExchangeResult r =
        exchange(*worker_, nlohmann::json{{"type", kHealthCheck}, {"id", id}}, limits);
    if (r.kind == ExchangeResult::Kind::kReply) {
      auto e = reply_evaluation(r.reply);
      if (e.ok() && e->ok() && r.broken.empty()) {
        health_.on_check_passed();
        publish_locked();
        return {};
      }
      failure = !e.ok() ? e.status().message()
                        : std::string(outcome_name(e->outcome)) + ": " + e->message +
                              (r.broken.empty() ? "" : " (context lost: " + r.broken + ")");
    } else if (r.kind == ExchangeResult::Kind::kRejected) {
      failure = r.rejection.message();
    } else if (r.kind == ExchangeResult::Kind::kLost) {
      failure = std::string(outcome_name(r.lost.outcome)) + ": " + r.lost.message;
    } else if (r.kind == ExchangeResult::Kind::kCancelled) {
      worker_.reset();
      return Status::unavailable("abandoned during the health check");
    } else {
      failure = "the worker was gone before the check (" + r.ended + ")";
    }
    if (worker_) worker_->kill();
    worker_.reset();
  }
  health_.on_check_failed(Clock::now());
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    ++status_.health_check_failures;
    status_.last_problem = "health check failed: " + failure;
  }
  publish_locked();
  char wait[64];
  std::snprintf(wait, sizeof wait, "%.0f s", health_.last_backoff_s());
  return Status::unavailable("the device failed its health check (" + failure +
                             "); next check in " + wait);
}

Status WorkerEvaluator::ready_locked() {
  if (stopped_) return Status::unavailable(abandon_ ? "abandoned" : "stopped");
  const auto now = Clock::now();
  if (health_.backing_off(now)) {
    const double left = std::chrono::duration<double>(health_.next_attempt() - now).count();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f s", left);
    return Status::unavailable("the device is unhealthy; next health check in " + std::string(buf));
  }
  if (health_.check_due()) return health_check_locked();
  if (worker_ && !worker_->alive()) {
    // Died between candidates (killed from outside, or a late fault): nothing of any
    // candidate is lost, but it is worth a line in the status.
    std::string ended = worker_->kill();
    std::lock_guard<std::mutex> lock(status_mu_);
    status_.last_problem = "the worker died while idle: " + ended;
    worker_.reset();
  }
  if (!worker_) {
    Status st = start_worker_locked();
    if (!st.ok()) {
      health_.on_check_failed(Clock::now());
      {
        std::lock_guard<std::mutex> lock(status_mu_);
        ++status_.health_check_failures;
        status_.last_problem = "worker start failed: " + st.message();
      }
      publish_locked();
      return st;
    }
  }
  return {};
}

Result<ExchangeResult> WorkerEvaluator::exchange_resending_once_locked(
    const std::function<nlohmann::json()>& make_request, const GemmProblem& problem, bool starts_in_run,
    const std::function<void()>& on_send, std::chrono::milliseconds extra_run) {
  ExchangeResult r;
  for (int attempt = 0;; ++attempt) {
    ExchangeLimits limits{.compile = policy_.compile(),
                          .run = policy_.run(&problem, worker_problem_key_ != problem.key()) + extra_run,
                          .starts_in_run = starts_in_run,
                          .cancel = &abandon_};
    if (attempt == 0 && on_send) on_send();
    r = exchange(*worker_, make_request(), limits);
    if (r.kind != ExchangeResult::Kind::kNotSent) return r;
    // The worker was dead before it took the request: nothing ran, so it goes to a
    // fresh worker (once).
    {
      std::lock_guard<std::mutex> lock(status_mu_);
      status_.last_problem = "the worker died while idle: " + r.ended;
    }
    worker_.reset();
    if (attempt > 0) return r;  // two in a row: not sent a third time
    TS_RETURN_IF_ERROR(ready_locked());
  }
}

Result<Evaluation> WorkerEvaluator::evaluate_locked(const KernelTemplate& tmpl,
                                                    const GemmProblem& problem,
                                                    const Config& config,
                                                    const std::function<void()>& on_send,
                                                    double race_ms) {
  TS_RETURN_IF_ERROR(ready_locked());
  const std::uint64_t id = next_id_++;
  const nlohmann::json request = make_candidate_request(kEvaluate, id, tmpl, problem, config, race_ms);
  TS_ASSIGN_OR_RETURN(ExchangeResult r, exchange_resending_once_locked([&] { return request; }, problem,
                                                                       /*starts_in_run=*/false, on_send));
  if (r.kind == ExchangeResult::Kind::kNotSent) {
    Evaluation e;
    e.outcome = Outcome::kCrash;
    e.message = "two workers in a row died before acknowledging this candidate (the last: " + r.ended + ")";
    worker_lost_locked(e.message, e.outcome);
    {
      std::lock_guard<std::mutex> lock(status_mu_);
      ++status_.evaluations;
    }
    return e;
  }

  Evaluation e;
  switch (r.kind) {
    case ExchangeResult::Kind::kCancelled:
      worker_.reset();
      publish_locked();
      return Status::unavailable("abandoned");
    case ExchangeResult::Kind::kRejected:
      e.outcome = Outcome::kInvalid;
      e.message = "the worker refused the candidate: " + r.rejection.message();
      health_.on_candidate_completed();
      break;
    case ExchangeResult::Kind::kLost:
      e = std::move(r.lost);
      worker_lost_locked(e.message, e.outcome);
      break;
    case ExchangeResult::Kind::kReply: {
      auto parsed = reply_evaluation(r.reply);
      if (!parsed.ok()) {
        std::string ended = worker_->kill();
        e.outcome = Outcome::kCrash;
        e.message = "the worker sent an unreadable result (" + parsed.status().message() +
                    "); it was killed (" + ended + ")";
        worker_lost_locked(e.message, e.outcome);
        break;
      }
      e = std::move(parsed).value();
      if (r.reached_run) worker_problem_key_ = problem.key();
      if (!r.broken.empty()) {
        // The worker exits by itself after reporting; reap it and start afresh next time.
        std::string ended = worker_->collect_exit(std::chrono::milliseconds(2000));
        e.message += (e.message.empty() ? "" : "; ") + std::string("the GPU context was lost (") +
                     r.broken + "), so the worker was replaced";
        worker_lost_locked(r.broken, Outcome::kLaunchError);
      } else {
        health_.on_candidate_completed();
      }
      if (!e.compile_cache_hit && e.outcome != Outcome::kInvalid)
        policy_.note_compile_ms(e.compile_ms);
      if (e.ok()) policy_.note_kernel_ms(problem, e.timing.median_ms);
      break;
    }
    case ExchangeResult::Kind::kNotSent:
      break;  // handled above
  }
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    ++status_.evaluations;
  }
  publish_locked();
  return e;
}

Result<Evaluation> WorkerEvaluator::try_evaluate(const KernelTemplate& tmpl,
                                                 const GemmProblem& problem, const Config& config,
                                                 const std::function<void()>& on_send, double race_ms) {
  std::lock_guard<std::mutex> lock(drive_mu_);
  {
    std::lock_guard<std::mutex> s(status_mu_);
    status_.busy = true;
  }
  auto r = evaluate_locked(tmpl, problem, config, on_send, race_ms);
  {
    std::lock_guard<std::mutex> s(status_mu_);
    status_.busy = false;
  }
  return r;
}

Evaluation WorkerEvaluator::evaluate(const KernelTemplate& tmpl, const GemmProblem& problem,
                                     const Config& config) {
  for (;;) {
    auto r = try_evaluate(tmpl, problem, config);
    if (r.ok()) return std::move(r).value();
    if (stopped_) return not_run(r.status().message());
    // Unhealthy: wait for the next health check (or stop()).
    std::unique_lock<std::mutex> lock(status_mu_);
    auto wake = std::max(next_attempt_, Clock::now() + std::chrono::milliseconds(100));
    stop_cv_.wait_until(lock, wake, [&] { return stopped_.load(); });
  }
}

Status WorkerEvaluator::ensure_healthy() {
  std::lock_guard<std::mutex> lock(drive_mu_);
  return ready_locked();
}

std::chrono::steady_clock::time_point WorkerEvaluator::next_attempt() const {
  std::lock_guard<std::mutex> lock(status_mu_);
  return next_attempt_;
}

Result<Evaluation> WorkerEvaluator::vendor_baseline(const GemmProblem& problem) {
  std::lock_guard<std::mutex> lock(drive_mu_);
  TS_RETURN_IF_ERROR(ready_locked());
  TS_ASSIGN_OR_RETURN(ExchangeResult r, exchange_resending_once_locked(
                                            [&] {
                                              return nlohmann::json{
                                                  {"type", kVendorBaseline}, {"id", next_id_++}, {"problem", problem}};
                                            },
                                            problem, /*starts_in_run=*/true));
  if (r.kind == ExchangeResult::Kind::kNotSent) {
    worker_lost_locked("vendor baseline: two workers in a row died before acknowledging it", Outcome::kCrash);
    return Status::internal("vendor baseline: two workers in a row died before acknowledging it (the last: " +
                            r.ended + ")");
  }
  switch (r.kind) {
    case ExchangeResult::Kind::kCancelled:
      worker_.reset();
      return Status::unavailable("abandoned");
    case ExchangeResult::Kind::kLost:
      worker_lost_locked("vendor baseline: " + r.lost.message, r.lost.outcome);
      return Status::internal("vendor baseline: " + std::string(outcome_name(r.lost.outcome)) +
                              ": " + r.lost.message);
    default:
      break;
  }
  worker_problem_key_ = problem.key();
  Result<Evaluation> out = r.kind == ExchangeResult::Kind::kRejected
                               ? Result<Evaluation>(r.rejection)
                               : reply_evaluation(r.reply);
  if (!r.broken.empty()) {
    worker_->collect_exit(std::chrono::milliseconds(2000));
    worker_lost_locked("vendor baseline: " + r.broken, Outcome::kLaunchError);
  }
  if (out.ok() && out->ok()) policy_.note_kernel_ms(problem, out->timing.median_ms);
  return out;
}

bool WorkerEvaluator::renew_process() {
  std::lock_guard<std::mutex> lock(drive_mu_);
  if (worker_) worker_->shutdown(std::chrono::milliseconds(2000));
  worker_.reset();
  worker_problem_key_.clear();
  publish_locked();
  return true;
}

Result<ReadFloor> WorkerEvaluator::read_floor(const GemmProblem& problem) {
  std::lock_guard<std::mutex> lock(drive_mu_);
  TS_RETURN_IF_ERROR(ready_locked());
  TS_ASSIGN_OR_RETURN(ExchangeResult r,
                      exchange_resending_once_locked(
                          [&] {
                            return nlohmann::json{{"type", kReadFloor}, {"id", next_id_++}, {"problem", problem}};
                          },
                          problem, /*starts_in_run=*/true, {},
                          std::chrono::duration_cast<std::chrono::milliseconds>(kReadFloorAllowance)));
  if (r.kind == ExchangeResult::Kind::kNotSent) {
    worker_lost_locked("read floor: two workers in a row died before acknowledging it", Outcome::kCrash);
    return Status::internal("read floor: two workers in a row died before acknowledging it (the last: " + r.ended +
                            ")");
  }
  switch (r.kind) {
    case ExchangeResult::Kind::kCancelled:
      worker_.reset();
      return Status::unavailable("abandoned");
    case ExchangeResult::Kind::kLost:
      worker_lost_locked("read floor: " + r.lost.message, r.lost.outcome);
      return Status::internal("read floor: " + std::string(outcome_name(r.lost.outcome)) + ": " + r.lost.message);
    default:
      break;
  }
  worker_problem_key_ = problem.key();
  Result<ReadFloor> out = Status::internal("read floor: the worker's reply has no read_floor");
  if (r.kind == ExchangeResult::Kind::kRejected)
    out = r.rejection;
  else if (auto it = r.reply.find("read_floor"); it != r.reply.end())
    out = read_floor_from_json(*it);
  if (!r.broken.empty()) {
    worker_->collect_exit(std::chrono::milliseconds(2000));
    worker_lost_locked("read floor: " + r.broken, Outcome::kLaunchError);
  }
  return out;
}

Evaluation WorkerEvaluator::prepare(const KernelTemplate& tmpl, const GemmProblem& problem,
                                    const Config& config) {
  if (stopped_) return not_run("stopped");
  return compiles_->prepare(tmpl, problem, config);
}

void WorkerEvaluator::note_expected_kernel_ms(const GemmProblem& problem, double ms) {
  policy_.note_kernel_ms(problem, ms);
}

WorkerStatus WorkerEvaluator::status() const {
  WorkerStatus s;
  std::chrono::steady_clock::time_point next;
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    s = status_;
    next = next_attempt_;
  }
  if (!s.healthy)
    s.backoff_remaining_s =
        std::max(0.0, std::chrono::duration<double>(next - Clock::now()).count());
  if (compiles_) {
    auto c = compiles_->counters();
    s.compiles = c.compiles;
    s.compile_crashes = c.crashes;
    s.compile_timeouts = c.timeouts;
  }
  return s;
}

void WorkerEvaluator::stop() {
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    stopped_ = true;
  }
  stop_cv_.notify_all();
}

void WorkerEvaluator::abandon() {
  abandon_ = true;
  stop();
}

Result<std::vector<DeviceFacts>> list_devices(const WorkerSpec& spec) {
  TS_ASSIGN_OR_RETURN(auto exe, find_worker_executable(spec.executable));
  WorkerLaunch launch{list_devices_argv(spec, exe), spec.env, 40, {}};
  TS_ASSIGN_OR_RETURN(auto conn, WorkerConnection::spawn(launch));
  auto got = conn->receive(Clock::now() + std::chrono::seconds(120));
  if (got.kind != WorkerConnection::Kind::kMessage) {
    std::string ended = conn->collect_exit(std::chrono::milliseconds(2000));
    return Status::unavailable("listing " + spec.backend + " devices: the worker gave no answer (" +
                               ended + "; " + conn->stderr_excerpt() + ")");
  }
  conn->collect_exit(std::chrono::milliseconds(2000));
  const nlohmann::json& m = got.message;
  if (message_type(m) == kError) return error_status(m, "listing devices failed");
  if (message_type(m) != kDevices || !m.contains("devices") || !m.at("devices").is_array())
    return Status::internal("listing devices: unexpected reply");
  std::vector<DeviceFacts> out;
  for (const auto& d : m.at("devices")) {
    TS_ASSIGN_OR_RETURN(DeviceFacts f, device_facts_from_json(d));
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace tilesmith::worker
