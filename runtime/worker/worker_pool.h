#pragma once
// Several GPUs (or several workers on one GPU): one WorkerEvaluator per entry, each
// driven by its own thread, taking candidates from one shared queue in submission
// order. Results come back in completion order, each tagged with the device that
// produced it, for the loop to merge into one history.
//
// A device that is backing off after a failed health check takes no candidates; the
// others go on. When every device is unhealthy, candidates wait in the queue and
// wait_any() returns nothing until its timeout: status() says why.
//
// Threads: submit(), wait_any(), evaluate_batch(), cancel_queued(), status() and
// abandon() are thread-safe; results are meant for one consumer. evaluator(i) may be
// used for prepare() at any time, and for vendor_baseline() (which waits for that
// device's candidate in flight).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "runtime/worker/worker_evaluator.h"

namespace tilesmith::worker {

struct PoolOptions {
  // Called on a device's thread just before a candidate is sent to that device's worker
  // (the moment to journal that it started). Must be thread-safe.
  std::function<void(std::uint64_t ticket, std::size_t device)> on_started;
};

using PoolCandidate = CandidateJob;

struct PoolResult {
  std::uint64_t ticket = 0;  // from submit()
  std::uint64_t tag = 0;
  std::size_t device = 0;          // index of the evaluator that produced it
  std::string device_fingerprint;  // DeviceFacts::fingerprint() of that device
  Evaluation evaluation;
  std::chrono::steady_clock::time_point started, finished;
};

class WorkerPool {
 public:
  // Starts every evaluator (in parallel: opening a device takes seconds). Fails, naming
  // the device, when any of them cannot start.
  static Result<std::unique_ptr<WorkerPool>> start(std::vector<WorkerEvaluatorOptions> devices,
                                                   PoolOptions options = {});
  // Abandons candidates in flight (their results are lost: collect them first) and
  // shuts every worker down.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  std::size_t size() const { return evaluators_.size(); }
  WorkerEvaluator& evaluator(std::size_t device) { return *evaluators_.at(device); }

  // Queues a candidate; returns its ticket (increasing from 1).
  std::uint64_t submit(const PoolCandidate& candidate);
  // The next finished result; nullopt when nothing is queued, in flight or finished, or
  // when `timeout` passes first (no timeout: waits as long as there is work).
  std::optional<PoolResult> wait_any(
      std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Submits all and waits for all: results in completion order.
  std::vector<PoolResult> evaluate_batch(const std::vector<PoolCandidate>& candidates);

  std::size_t queued() const;
  std::size_t in_flight() const;
  // Removes the candidates not yet started; returns their tickets.
  std::vector<std::uint64_t> cancel_queued();
  // Drops the queue and kills the candidates in flight (their results are not returned).
  void abandon();
  std::vector<WorkerStatus> status() const;

 private:
  struct Job {
    std::uint64_t ticket = 0;
    PoolCandidate candidate;
  };
  explicit WorkerPool(PoolOptions options) : options_(std::move(options)) {}
  void device_loop(std::size_t device);

  PoolOptions options_;
  std::vector<std::unique_ptr<WorkerEvaluator>> evaluators_;
  std::vector<std::thread> threads_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // queue changes, stop
  std::condition_variable done_cv_;  // results, in-flight changes
  std::deque<Job> queue_;
  std::deque<PoolResult> done_;
  std::size_t in_flight_ = 0;
  std::uint64_t next_ticket_ = 1;
  bool stopping_ = false;
};

}  // namespace tilesmith::worker
