#include "tuner/loop/compile_ahead.h"

#include <chrono>

namespace tilesmith {

CompileAhead::CompileAhead(Evaluator& evaluator, GemmProblem problem, int threads, Marker marker)
    : evaluator_(evaluator), problem_(std::move(problem)), marker_(std::move(marker)) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

CompileAhead::~CompileAhead() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cancel_pending();
  queued_.notify_all();
  for (auto& t : threads_) t.join();
}

Evaluation CompileAhead::run(Job& job) {
  if (marker_) marker_(job.key, true);
  Evaluation e = evaluator_.prepare(*job.tmpl, problem_, job.config);
  if (marker_) marker_(job.key, false);
  return e;
}

void CompileAhead::work() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mutex_);
      queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      job = jobs_[queue_.front()];
      queue_.pop_front();
      job->state = State::kRunning;
    }
    Evaluation e = run(*job);
    {
      std::lock_guard lock(mutex_);
      job->result = std::move(e);
      job->state = State::kDone;
    }
    finished_.notify_all();
  }
}

std::size_t CompileAhead::submit(const KernelTemplate& tmpl, const Config& config, std::string key) {
  auto job = std::make_shared<Job>();
  job->tmpl = &tmpl;
  job->config = config;
  job->key = std::move(key);
  std::size_t ticket;
  {
    std::lock_guard lock(mutex_);
    ticket = jobs_.size();
    jobs_.push_back(job);
    if (!threads_.empty()) queue_.push_back(ticket);
  }
  queued_.notify_one();
  return ticket;
}

std::optional<Evaluation> CompileAhead::take(std::size_t ticket, double* waited_ms) {
  const auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<Job> job;
  {
    std::unique_lock lock(mutex_);
    if (ticket >= jobs_.size() || !jobs_[ticket]) return std::nullopt;
    job = jobs_[ticket];
    if (threads_.empty() && job->state == State::kQueued) job->state = State::kRunning;
    else finished_.wait(lock, [&] { return job->state == State::kDone || job->state == State::kCancelled; });
    jobs_[ticket].reset();  // ours now; the ticket reads as taken
  }
  std::optional<Evaluation> out;
  if (job->state == State::kCancelled) {
    out = std::nullopt;
  } else if (threads_.empty()) {
    out = run(*job);
  } else {
    out = std::move(job->result);
  }
  if (waited_ms)
    *waited_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

bool CompileAhead::ready_locked(std::size_t ticket) const {
  if (threads_.empty() || ticket >= jobs_.size() || !jobs_[ticket]) return true;
  const State st = jobs_[ticket]->state;
  return st == State::kDone || st == State::kCancelled;
}

bool CompileAhead::ready(std::size_t ticket) {
  std::lock_guard lock(mutex_);
  return ready_locked(ticket);
}

bool CompileAhead::wait_ready(std::size_t ticket, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return finished_.wait_for(lock, timeout, [&] { return ready_locked(ticket); });
}

std::size_t CompileAhead::wait_any(const std::vector<std::size_t>& tickets) {
  std::size_t found = tickets.empty() ? 0 : tickets.front();
  {
    std::unique_lock lock(mutex_);
    finished_.wait(lock, [&] {
      for (std::size_t t : tickets)
        if (ready_locked(t)) {
          found = t;
          return true;
        }
      return tickets.empty();
    });
  }
  return found;
}

void CompileAhead::cancel_pending() {
  {
    std::lock_guard lock(mutex_);
    for (std::size_t t : queue_) jobs_[t]->state = State::kCancelled;
    queue_.clear();
    if (threads_.empty())
      for (auto& j : jobs_)
        if (j && j->state == State::kQueued) j->state = State::kCancelled;
  }
  finished_.notify_all();
}

std::size_t CompileAhead::waiting() {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

}  // namespace tilesmith
