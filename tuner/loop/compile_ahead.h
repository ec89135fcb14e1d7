#pragma once
// Compile-ahead: a few threads call Evaluator::prepare() (render + compile into the
// cache, no GPU work) for the candidates queued behind the one being measured, so the
// GPU does not wait for the compiler. Jobs start in submission order, the order the loop
// measures them in, except that a compile the idle devices have waited on for a moment is
// passed over for one that is done (wait_any), so one slow compile does not hold up the
// finished ones behind it.
//
// Thread safety: submit(), take() and cancel_pending() are called from the loop's thread;
// the workers call only Evaluator::prepare (thread-safe by contract) and the marker
// callback (which must be thread-safe).

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "registry/kernel_template.h"
#include "registry/problem.h"
#include "runtime/evaluator.h"

namespace tilesmith {

class CompileAhead {
 public:
  // Called on a worker thread right before prepare() (started = true) and right after
  // (started = false), with the job's key: the journal's compile markers.
  using Marker = std::function<void(const std::string& key, bool started)>;

  // threads = 0: no background work; take() runs prepare() itself.
  CompileAhead(Evaluator& evaluator, GemmProblem problem, int threads, Marker marker = {});
  // Cancels what has not started and waits for the compiles under way.
  ~CompileAhead();
  CompileAhead(const CompileAhead&) = delete;
  CompileAhead& operator=(const CompileAhead&) = delete;

  // Queues a compile; the template must outlive the job. Returns a ticket for take().
  std::size_t submit(const KernelTemplate& tmpl, const Config& config, std::string key);
  // Waits for the job and returns prepare()'s result; nullopt when it was cancelled or
  // already taken (a job is released once taken: a night's run submits tens of thousands).
  // `waited_ms` (optional) gets the time spent waiting here.
  std::optional<Evaluation> take(std::size_t ticket, double* waited_ms = nullptr);
  // True when take(ticket) would not wait: the job is done or cancelled (with no
  // threads, always: take() then compiles on the caller's thread).
  bool ready(std::size_t ticket);
  // Waits up to `timeout` for take(ticket) not to wait; returns whether it would not.
  bool wait_ready(std::size_t ticket, std::chrono::milliseconds timeout);
  // Blocks until one of `tickets` would not wait in take() and returns the first such, in
  // the order given (with no threads: the first).
  std::size_t wait_any(const std::vector<std::size_t>& tickets);
  // Drops the jobs that have not started (their take() gives nullopt).
  void cancel_pending();
  // Jobs not started yet (0 without threads): none means the threads run out of work as
  // soon as the compiles under way finish.
  std::size_t waiting();

 private:
  enum class State { kQueued, kRunning, kDone, kCancelled };
  struct Job {
    const KernelTemplate* tmpl = nullptr;
    Config config;
    std::string key;
    State state = State::kQueued;
    Evaluation result;
  };
  void work();
  bool ready_locked(std::size_t ticket) const;
  Evaluation run(Job& job);

  Evaluator& evaluator_;
  GemmProblem problem_;
  Marker marker_;
  std::mutex mutex_;
  std::condition_variable queued_, finished_;
  std::vector<std::shared_ptr<Job>> jobs_;
  std::deque<std::size_t> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tilesmith
