#pragma once
// Where the loop's candidates are measured: one evaluator in this process, one candidate
// at a time (InlineRunner: the replay backend, `--in-process` debugging), or worker
// processes, one or more per GPU, several candidates at once (WorkerRunner,
// tuner/loop/worker_runner.h). The loop hands compiled candidates over with submit() and
// takes the results back with next(), in completion order, so it has one code path for
// one device and for many.
//
// Threads: submit(), next(), outstanding(), cancel_queued() and expect_kernel_ms() are
// for the loop's thread. An OnSend callback runs on whichever thread sends its candidate
// (the loop's for InlineRunner, a device thread for workers), so it must be thread-safe.
// evaluator().prepare() is thread-safe (the compile-ahead threads call it);
// status_line(), degraded() and device_summaries() are thread-safe.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "registry/config.h"
#include "registry/kernel_template.h"
#include "registry/problem.h"
#include "runtime/evaluator.h"

namespace tilesmith {

using RunnerCandidate = CandidateJob;

struct RunnerResult {
  std::uint64_t tag = 0;
  std::string host;       // the history's host column: where it was measured
  std::string device;     // the history's device column: "cuda:1", "replay:0"
  Evaluation evaluation;  // an outcome of the candidate (never a "not run")
  double eval_ms = 0;     // wall time from taking the candidate up to its result
};

class CandidateRunner {
 public:
  // Called once per candidate, just before it goes to a device: the moment to journal
  // that it started. `host` and `device` as in RunnerResult.
  using OnSend = std::function<void(std::uint64_t tag, const std::string& host, const std::string& device)>;

  virtual ~CandidateRunner() = default;

  // The evaluator for everything but the candidates: device facts, prepare() (compile
  // ahead), the vendor baseline and the re-timing of the finalists. With several devices
  // a facade: the first device's facts (all are the same model), prepare() spread over
  // the devices' compile helpers, the vendor baseline and evaluate() on the first device.
  virtual Evaluator& evaluator() = 0;
  // Candidates measured at once.
  virtual std::size_t width() const = 0;
  // Candidates the loop keeps handed over (queued or in flight), at least width().
  virtual std::size_t depth() const = 0;
  // The devices, named as in RunnerResult::device, in order (with several hosts,
  // "host/device").
  virtual std::vector<std::string> devices() const = 0;
  // True when prepare() compiles in processes of its own, so a compiler that crashes
  // costs its candidate and cannot end this process.
  virtual bool compiles_isolated() const = 0;

  // Queues a compiled candidate; `on_send` (may be empty) is called when it is sent.
  virtual void submit(RunnerCandidate candidate, OnSend on_send) = 0;
  // The next result in completion order; nullopt when nothing is outstanding, or when
  // `wait` passes first. InlineRunner measures the oldest queued candidate here, on the
  // caller's thread (so it never waits for nothing).
  virtual std::optional<RunnerResult> next(std::chrono::milliseconds wait) = 0;
  // Submitted, and neither returned by next() nor cancelled.
  virtual std::size_t outstanding() const = 0;
  // Drops the candidates not yet sent to a device (their OnSend was never called: they
  // did not start). Returns their tags.
  virtual std::vector<std::uint64_t> cancel_queued() = 0;

  // A kernel time for `problem` to scale deadlines from before any is measured (the
  // vendor baseline, a resumed run's best). No-op where there are no deadlines.
  virtual void expect_kernel_ms(const GemmProblem&, double) {}
  // The run's stop flag (may be null): once set, evaluator().evaluate() stops waiting for
  // a device that backs off and returns a "not run" launch_error (the loop discards
  // re-timings after a stop). No-op where nothing waits.
  virtual void watch_stop(const std::atomic<bool>*) {}
  // The devices' state in a few words for the progress line ("" when there is nothing
  // worth a look: every device healthy, nothing lost).
  virtual std::string status_line() const { return {}; }
  // True while a device is unhealthy (backing off after a failed health check).
  virtual bool degraded() const { return false; }
  // One line per device for the summary (workers: crashes, timeouts, restarts).
  virtual std::vector<std::string> device_summaries() const { return {}; }
};

// "cuda:0": the backend and ordinal of a device, as the history's device column names it.
std::string device_label(const DeviceFacts& device);

// One evaluator in this process: next() sends the oldest queued candidate (OnSend on the
// calling thread) and evaluates it there. A kernel that faults or hangs takes this
// process with it; the evaluator must outlive the runner.
class InlineRunner final : public CandidateRunner {
 public:
  explicit InlineRunner(Evaluator& evaluator);

  Evaluator& evaluator() override { return evaluator_; }
  std::size_t width() const override { return 1; }
  // next() measures the oldest, so one at a time is all it can use.
  std::size_t depth() const override { return 1; }
  std::vector<std::string> devices() const override { return {device_}; }
  bool compiles_isolated() const override { return false; }
  void submit(RunnerCandidate candidate, OnSend on_send) override;
  std::optional<RunnerResult> next(std::chrono::milliseconds wait) override;
  std::size_t outstanding() const override { return queue_.size(); }
  std::vector<std::uint64_t> cancel_queued() override;

 private:
  Evaluator& evaluator_;
  std::string device_;
  std::deque<std::pair<RunnerCandidate, OnSend>> queue_;
};

}  // namespace tilesmith
