#include "tuner/loop/worker_runner.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "base/host_name.h"

namespace tilesmith {
namespace {

// The pool's Evaluator face for what is not a candidate. prepare() goes round the
// devices so each one's compile helpers share the work (they write to one cache); the
// vendor baseline and the re-timing stay on the first device, whose thread in the pool
// is idle then (the loop submits nothing meanwhile).
class PoolFacade final : public Evaluator {
 public:
  explicit PoolFacade(worker::WorkerPool& pool) : pool_(pool) {}
  void watch_stop(const std::atomic<bool>* stop) { stop_ = stop; }
  const DeviceFacts& device() const override { return pool_.evaluator(0).device(); }
  Evaluation prepare(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) override {
    const std::size_t i = next_.fetch_add(1) % pool_.size();
    return pool_.evaluator(i).prepare(tmpl, problem, config);
  }
  // As WorkerEvaluator::evaluate (it waits through a backoff), but a stop request ends
  // the wait: a re-timing must not hold a Ctrl-C for the minutes of a backoff.
  Evaluation evaluate(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) override {
    worker::WorkerEvaluator& ev = pool_.evaluator(0);
    for (;;) {
      auto r = ev.try_evaluate(tmpl, problem, config);
      if (r.ok()) return std::move(r).value();
      const bool stopping = stop_ && stop_->load();
      // Healthy and still refused: stopped or abandoned, no wait helps.
      if (stopping || ev.status().healthy) {
        Evaluation e;
        e.outcome = Outcome::kLaunchError;
        e.message = "not run: " + (stopping ? std::string("stop requested") : r.status().message());
        return e;
      }
      const auto wake = std::min(ev.next_attempt(), std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
      std::this_thread::sleep_until(std::max(wake, std::chrono::steady_clock::now() + std::chrono::milliseconds(20)));
    }
  }
  Result<Evaluation> vendor_baseline(const GemmProblem& problem) override {
    return pool_.evaluator(0).vendor_baseline(problem);
  }
  std::string vendor_name() const override { return pool_.evaluator(0).vendor_name(); }
  // The re-timing's fresh processes: the first device's worker, which it measures on.
  bool renew_process() override { return pool_.evaluator(0).renew_process(); }
  Result<ReadFloor> read_floor(const GemmProblem& problem) override { return pool_.evaluator(0).read_floor(problem); }

 private:
  worker::WorkerPool& pool_;
  std::atomic<std::size_t> next_{0};
  const std::atomic<bool>* stop_ = nullptr;
};

std::string plural(std::uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

Result<std::unique_ptr<WorkerRunner>> WorkerRunner::start(std::vector<worker::WorkerEvaluatorOptions> devices) {
  if (devices.empty()) return Status::invalid("no device to evaluate on");
  std::unique_ptr<WorkerRunner> runner(new WorkerRunner());
  std::vector<int> ordinals;
  for (const auto& d : devices) ordinals.push_back(d.worker.device);
  worker::PoolOptions po;
  // The pool outlives nothing of the runner's: the runner owns it and destroys it first.
  po.on_started = [r = runner.get()](std::uint64_t ticket, std::size_t device) { r->on_started(ticket, device); };
  TS_ASSIGN_OR_RETURN(runner->pool_, worker::WorkerPool::start(std::move(devices), std::move(po)));
  worker::WorkerPool& pool = *runner->pool_;
  const DeviceFacts& first = pool.evaluator(0).device();
  for (std::size_t i = 0; i < pool.size(); ++i) {
    const DeviceFacts& d = pool.evaluator(i).device();
    if (d.fingerprint() != first.fingerprint())
      return Status::failed_precondition(
          "the devices are not the same model: " + device_label(first) + " is " + first.fingerprint() + ", " +
          d.backend + ":" + std::to_string(ordinals[i]) + " is " + d.fingerprint() +
          "; tune on one model at a time (the history compares their results with each other)");
    runner->labels_.push_back(d.backend + ":" + std::to_string(ordinals[i]));
  }
  runner->facade_ = std::make_unique<PoolFacade>(pool);
  return runner;
}

WorkerRunner::~WorkerRunner() {
  // The pool's device threads call on_started(), which uses mu_ and pending_: they end
  // with the pool, before the members they use.
  pool_.reset();
}

void WorkerRunner::on_started(std::uint64_t ticket, std::size_t device) {
  Pending p;
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(ticket);
    if (it == pending_.end()) return;
    p.tag = it->second.tag;
    p.on_send = it->second.on_send;
  }
  if (p.on_send) p.on_send(p.tag, local_host_name(), labels_.at(device));
}

void WorkerRunner::submit(RunnerCandidate candidate, OnSend on_send) {
  std::lock_guard lock(mu_);
  const std::uint64_t ticket = pool_->submit(candidate);
  pending_[ticket] = Pending{candidate.tag, std::move(on_send)};
}

std::optional<RunnerResult> WorkerRunner::next(std::chrono::milliseconds wait) {
  if (outstanding() == 0) return std::nullopt;
  auto r = pool_->wait_any(wait);
  if (!r) return std::nullopt;
  {
    std::lock_guard lock(mu_);
    pending_.erase(r->ticket);
  }
  RunnerResult out;
  out.tag = r->tag;
  out.host = local_host_name();
  out.device = labels_.at(r->device);
  out.evaluation = std::move(r->evaluation);
  out.eval_ms = std::chrono::duration<double, std::milli>(r->finished - r->started).count();
  return out;
}

std::size_t WorkerRunner::outstanding() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

std::vector<std::uint64_t> WorkerRunner::cancel_queued() {
  std::vector<std::uint64_t> tags;
  std::lock_guard lock(mu_);
  for (std::uint64_t ticket : pool_->cancel_queued()) {
    auto it = pending_.find(ticket);
    if (it == pending_.end()) continue;
    tags.push_back(it->second.tag);
    pending_.erase(it);
  }
  return tags;
}

void WorkerRunner::expect_kernel_ms(const GemmProblem& problem, double ms) {
  for (std::size_t i = 0; i < pool_->size(); ++i) pool_->evaluator(i).note_expected_kernel_ms(problem, ms);
}

void WorkerRunner::watch_stop(const std::atomic<bool>* stop) { static_cast<PoolFacade&>(*facade_).watch_stop(stop); }

std::string WorkerRunner::status_line() const { return format_worker_status(labels_, pool_->status()); }

bool WorkerRunner::degraded() const {
  for (const auto& s : pool_->status())
    if (!s.healthy) return true;
  return false;
}

std::vector<std::string> WorkerRunner::device_summaries() const {
  std::vector<std::string> out;
  const auto status = pool_->status();
  for (std::size_t i = 0; i < status.size(); ++i) {
    // The status names the device by its facts; the label says which worker it is (two
    // on one GPU, or replay workers, share the facts' ordinal).
    worker::WorkerStatus s = status[i];
    s.device = pool_->evaluator(i).device().name + " (" + labels_[i] + ")";
    out.push_back(s.summary());
  }
  return out;
}

double WorkerRunner::measured_bandwidth() const { return pool_->evaluator(0).measured_bandwidth(); }

std::string format_worker_status(const std::vector<std::string>& labels,
                                 const std::vector<worker::WorkerStatus>& status) {
  std::vector<std::string> parts;
  std::size_t busy = 0;
  std::uint64_t crashes = 0, timeouts = 0, lost = 0, checks = 0, failed_checks = 0;
  for (std::size_t i = 0; i < status.size(); ++i) {
    const auto& s = status[i];
    busy += s.busy;
    crashes += s.crashes + s.compile_crashes;
    timeouts += s.timeouts + s.compile_timeouts;
    lost += s.lost_contexts;
    checks += s.health_checks;
    failed_checks += s.health_check_failures;
    if (!s.healthy) {
      char buf[96];
      std::snprintf(buf, sizeof buf, " UNHEALTHY (next health check in %.0fs)", s.backoff_remaining_s);
      parts.push_back((i < labels.size() ? labels[i] : "device " + std::to_string(i)) + buf);
    }
  }
  if (status.size() > 1)
    parts.insert(parts.begin(), std::to_string(busy) + "/" + std::to_string(status.size()) + " busy");
  if (crashes) parts.push_back(plural(crashes, "crash", "crashes"));
  if (timeouts) parts.push_back(plural(timeouts, "timeout", "timeouts"));
  if (lost) parts.push_back(plural(lost, "lost context", "lost contexts"));
  if (checks)
    parts.push_back(plural(checks, "health check", "health checks") +
                    (failed_checks ? " (" + std::to_string(failed_checks) + " failed)" : std::string()));
  if (parts.empty()) return {};
  std::string out = "workers: ";
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out;
}

}  // namespace tilesmith
