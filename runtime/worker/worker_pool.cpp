#include "runtime/worker/worker_pool.h"

#include <algorithm>

namespace tilesmith::worker {

using Clock = std::chrono::steady_clock;

Result<std::unique_ptr<WorkerPool>> WorkerPool::start(std::vector<WorkerEvaluatorOptions> devices,
                                                      PoolOptions options) {
  if (devices.empty()) return Status::invalid("a worker pool needs at least one device");
  std::vector<Result<std::unique_ptr<WorkerEvaluator>>> started;
  for (std::size_t i = 0; i < devices.size(); ++i)
    started.emplace_back(Status::internal("not started"));
  {
    std::vector<std::thread> openers;
    for (std::size_t i = 0; i < devices.size(); ++i)
      openers.emplace_back([&, i] { started[i] = WorkerEvaluator::start(devices[i]); });
    for (auto& t : openers) t.join();
  }
  std::unique_ptr<WorkerPool> pool(new WorkerPool(std::move(options)));
  for (std::size_t i = 0; i < started.size(); ++i) {
    if (!started[i].ok())
      return started[i].status().with_context("device " + std::to_string(i) + " (" +
                                              devices[i].worker.backend + ":" +
                                              std::to_string(devices[i].worker.device) + ")");
    pool->evaluators_.push_back(std::move(started[i]).value());
  }
  for (std::size_t i = 0; i < pool->evaluators_.size(); ++i)
    pool->threads_.emplace_back([p = pool.get(), i] { p->device_loop(i); });
  return pool;
}

WorkerPool::~WorkerPool() {
  abandon();
  for (auto& t : threads_) t.join();
  evaluators_.clear();
}

void WorkerPool::device_loop(std::size_t device) {
  WorkerEvaluator& ev = *evaluators_[device];
  const std::string fingerprint = ev.device().fingerprint();
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
    }
    // Health first, without holding a candidate: while this device backs off the
    // others take the queue.
    Status healthy = ev.ensure_healthy();
    if (!healthy.ok()) {
      std::unique_lock<std::mutex> lock(mu_);
      auto wake = std::max(ev.next_attempt(), Clock::now() + std::chrono::milliseconds(100));
      work_cv_.wait_until(lock, wake, [&] { return stopping_; });
      continue;
    }
    Job job;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      if (queue_.empty()) continue;
      job = std::move(queue_.front());
      queue_.pop_front();
      ++in_flight_;
    }
    PoolResult result;
    result.ticket = job.ticket;
    result.tag = job.candidate.tag;
    result.device = device;
    result.device_fingerprint = fingerprint;
    result.started = Clock::now();
    auto on_send = [&] {
      if (options_.on_started) options_.on_started(job.ticket, device);
    };
    auto r =
        ev.try_evaluate(*job.candidate.tmpl, job.candidate.problem, job.candidate.config, on_send,
                        job.candidate.race_ms);
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Stamped under the lock that appends to done_, so completion order and the
      // `finished` times agree even when two devices finish in the same microsecond.
      result.finished = Clock::now();
      --in_flight_;
      if (r.ok()) {
        result.evaluation = std::move(r).value();
        done_.push_back(std::move(result));
      } else if (!stopping_) {
        // Not run (the device turned unhealthy before it took the candidate): back to
        // the front of the queue, for whichever device is ready first.
        queue_.push_front(std::move(job));
        work_cv_.notify_all();
      }
    }
    done_cv_.notify_all();
  }
}

std::uint64_t WorkerPool::submit(const PoolCandidate& candidate) {
  std::uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ticket = next_ticket_++;
    queue_.push_back(Job{ticket, candidate});
  }
  work_cv_.notify_one();
  return ticket;
}

std::optional<PoolResult> WorkerPool::wait_any(std::optional<std::chrono::milliseconds> timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [&] { return !done_.empty() || (queue_.empty() && in_flight_ == 0) || stopping_; };
  if (timeout) {
    if (!done_cv_.wait_for(lock, *timeout, ready)) return std::nullopt;
  } else {
    done_cv_.wait(lock, ready);
  }
  if (done_.empty()) return std::nullopt;
  PoolResult r = std::move(done_.front());
  done_.pop_front();
  return r;
}

std::vector<PoolResult> WorkerPool::evaluate_batch(const std::vector<PoolCandidate>& candidates) {
  std::vector<std::uint64_t> tickets;
  for (const auto& c : candidates) tickets.push_back(submit(c));
  std::vector<PoolResult> out;
  // Other submitters' results may interleave; keep only ours, hand the rest back.
  std::vector<PoolResult> others;
  while (out.size() < candidates.size()) {
    auto r = wait_any();
    if (!r) break;  // abandoned
    bool ours = std::find(tickets.begin(), tickets.end(), r->ticket) != tickets.end();
    (ours ? out : others).push_back(std::move(*r));
  }
  if (!others.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = others.rbegin(); it != others.rend(); ++it) done_.push_front(std::move(*it));
  }
  return out;
}

std::size_t WorkerPool::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

std::size_t WorkerPool::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

std::vector<std::uint64_t> WorkerPool::cancel_queued() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::uint64_t> tickets;
  for (const auto& j : queue_) tickets.push_back(j.ticket);
  queue_.clear();
  done_cv_.notify_all();
  return tickets;
}

void WorkerPool::abandon() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  for (auto& ev : evaluators_) ev->abandon();
  work_cv_.notify_all();
  done_cv_.notify_all();
}

std::vector<WorkerStatus> WorkerPool::status() const {
  std::vector<WorkerStatus> out;
  for (const auto& ev : evaluators_) out.push_back(ev->status());
  return out;
}

}  // namespace tilesmith::worker
