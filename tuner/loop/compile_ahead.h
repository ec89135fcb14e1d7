#pragma once
// Compile-ahead: a few threads call Evaluator::prepare() (render + compile into the
// cache, no GPU work) for the candidates queued behind the one being measured, so the
// GPU does not wait for the compiler. Jobs start in submission order, the order the loop
// evaluates them in.
//
// Thread safety: submit(), take() and cancel_pending() are called from the loop's thread;
// the workers call only Evaluator::prepare (thread-safe by contract) and the marker
// callback (which must be thread-safe).

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
  // Waits for the job and returns prepare()'s result; nullopt when it was cancelled.
  // `waited_ms` (optional) gets the time spent waiting here.
  std::optional<Evaluation> take(std::size_t ticket, double* waited_ms = nullptr);
  // True when take(ticket) would not wait: the job is done or cancelled (with no
  // threads, always: take() then compiles on the caller's thread).
  bool ready(std::size_t ticket);
  // Drops the jobs that have not started (their take() gives nullopt).
  void cancel_pending();

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
