#pragma once
// The loop's candidates in worker processes (runtime/worker, docs/reliability.md): one
// WorkerEvaluator per entry, driven by a WorkerPool, so several devices (or several
// workers on one device) measure candidates of the same problem at once, and nothing a
// kernel or a compiler does can end the run: a crash or a hang costs its candidate
// (outcome crash or timeout, never retried) and the worker is replaced. The orchestrator
// never loads a GPU runtime; compiles for prepare() run in the workers' compile helpers.
//
// Results come back in completion order. A candidate a device could not take (backing
// off after a failed health check) waits in the queue for any device that can; results
// that were "not run" (after abandon) never come back as results.
//
// Threads: as CandidateRunner. pool() is for callers that know the pool's contract.

#include <atomic>
#include <map>
#include <memory>
#include <mutex>

#include "runtime/worker/worker_pool.h"
#include "tuner/loop/candidate_runner.h"

namespace tilesmith {

class WorkerRunner final : public CandidateRunner {
 public:
  // Starts one worker per entry, in parallel. Every device must report the same model
  // (DeviceFacts::fingerprint: name, architecture, driver and compiler versions): a run
  // compares its results with each other. Errors: failed_precondition naming the
  // differing devices; the pool's (unavailable: a device cannot be opened; not_found: no
  // worker executable), naming the device.
  static Result<std::unique_ptr<WorkerRunner>> start(std::vector<worker::WorkerEvaluatorOptions> devices);
  // Kills what is still in flight (its results are lost: collect them first) and shuts
  // the workers down.
  ~WorkerRunner() override;

  Evaluator& evaluator() override { return *facade_; }
  std::size_t width() const override { return pool_->size(); }
  // Twice the devices: one in flight and the next already queued for each, so a device
  // never waits for the loop to write a row.
  std::size_t depth() const override { return 2 * pool_->size(); }
  std::vector<std::string> devices() const override { return labels_; }
  bool compiles_isolated() const override { return true; }
  void submit(RunnerCandidate candidate, OnSend on_send) override;
  std::optional<RunnerResult> next(std::chrono::milliseconds wait) override;
  std::size_t outstanding() const override;
  std::vector<std::uint64_t> cancel_queued() override;
  void expect_kernel_ms(const GemmProblem& problem, double ms) override;
  void watch_stop(const std::atomic<bool>* stop) override;
  std::string status_line() const override;
  bool degraded() const override;
  std::vector<std::string> device_summaries() const override;

  // The first device's copy bandwidth as its worker measured it (bytes/s; 0 when unknown).
  double measured_bandwidth() const;
  worker::WorkerPool& pool() { return *pool_; }

 private:
  struct Pending {
    std::uint64_t tag = 0;
    OnSend on_send;
  };
  WorkerRunner() = default;
  void on_started(std::uint64_t ticket, std::size_t device);

  std::unique_ptr<worker::WorkerPool> pool_;
  std::unique_ptr<Evaluator> facade_;
  std::vector<std::string> labels_;
  // Tickets submitted and not yet returned. The pool calls on_started() from a device
  // thread, possibly before submit() has returned the ticket: submit() holds mu_ across
  // the pool's submit, and on_started() takes mu_, so the entry is always there.
  mutable std::mutex mu_;
  std::map<std::uint64_t, Pending> pending_;
};

// The workers' state for the progress line, "" while there is nothing to say (one
// device, healthy, nothing lost). Otherwise e.g. "workers: 1/2 busy, cuda:1 UNHEALTHY
// (next health check in 20s), 3 crashes, 1 timeout, 2 health checks (1 failed)".
// `labels` and `status` are per device, in the same order.
std::string format_worker_status(const std::vector<std::string>& labels,
                                 const std::vector<worker::WorkerStatus>& status);

}  // namespace tilesmith
