#pragma once
// The Evaluator the orchestrator uses for a GPU: every candidate is compiled and
// measured in a worker process (tilesmith-worker), so nothing a kernel or a compiler
// does can take the orchestrator down, and the orchestrator never loads a GPU runtime.
//
// Per candidate: a compile deadline, then a run deadline (deadlines.h). On a deadline,
// a death by signal, a closed pipe, garbage on the channel, or a lost GPU context that
// the worker reports, the worker's process group is killed and reaped, the candidate
// gets `timeout` or `crash` (or the worker's own launch_error for a lost context) with
// what is known, and a fresh worker is started for the next candidate. A candidate is
// never sent twice, except when the worker was found dead before it took the request
// (then nothing of it ran). After `losses_before_check` lost workers in a row a
// known-good health check runs first; when it fails the evaluator backs off
// (exponentially, capped) and status() says so (health.h).
//
// prepare() compiles in separate compile-only helper processes (compile_processes.h):
// a compiler crash is the candidate's `crash`, and compile-ahead never waits for the
// GPU worker.
//
// Threads: evaluate(), try_evaluate(), vendor_baseline() are for one driving thread
// (calls are serialised). prepare() is thread-safe and runs alongside evaluate().
// device(), vendor_name(), status(), stop() and abandon() are thread-safe.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/evaluator.h"
#include "runtime/worker/deadlines.h"
#include "runtime/worker/health.h"
#include "runtime/worker/worker_spec.h"

namespace tilesmith::worker {

class CompileProcesses;
class WorkerConnection;
struct ExchangeResult;

struct WorkerEvaluatorOptions {
  WorkerSpec worker;
  DeadlineOptions deadlines;
  HealthOptions health;
  int compile_processes = 2;  // compile helpers for prepare() (at least 1)
  std::size_t stderr_tail_lines = 40;
  // Every line the device worker or a compile helper writes to stderr, prefixed
  // "[worker PID] ". Called from the thread waiting on that process (the driving
  // thread, or a prepare() caller): must be thread-safe.
  std::function<void(const std::string&)> on_worker_log;
};

// A snapshot for progress displays.
struct WorkerStatus {
  std::string device;    // "NVIDIA H200 (cuda:0)"
  bool healthy = true;   // false from a failed health check (or failed start) until one passes
  bool busy = false;     // a candidate is in flight
  long worker_pid = -1;  // -1: no worker running now
  std::uint64_t evaluations = 0;  // candidates answered (whatever the outcome)
  std::uint64_t crashes = 0, timeouts = 0, lost_contexts = 0;
  std::uint64_t workers_started = 0;
  std::uint64_t compiles = 0, compile_crashes = 0, compile_timeouts = 0;
  int consecutive_losses = 0;
  std::uint64_t health_checks = 0, health_check_failures = 0;
  double backoff_remaining_s = 0;  // > 0 while waiting before the next health check
  std::string last_problem;        // the latest lost worker or failed check, with what is known
  // One line: "NVIDIA H200 (cuda:0): healthy, 120 evaluated, 2 crashes, 1 timeout, ..."
  std::string summary() const;
};

class WorkerEvaluator final : public Evaluator {
 public:
  // Starts the device worker and waits for its hello (the device's facts).
  // unavailable with the worker's reason when it cannot open the device; not_found when
  // the executable is missing.
  static Result<std::unique_ptr<WorkerEvaluator>> start(WorkerEvaluatorOptions options);
  // Shuts the workers down (a polite request, then SIGKILL) and reaps them.
  ~WorkerEvaluator() override;

  // The facts the worker reported at its first hello.
  const DeviceFacts& device() const override;
  // The copy bandwidth the first worker measured when it opened the device (bytes/s; 0
  // when it measured none, as a replay worker).
  double measured_bandwidth() const { return measured_bandwidth_; }
  // Compile step alone, in a compile helper: ok, invalid, compile_error, or crash /
  // timeout when the compiler died or hung (the loop must record those and not
  // evaluate the candidate).
  Evaluation prepare(const KernelTemplate& tmpl, const GemmProblem& problem,
                     const Config& config) override;
  // Blocks through a backoff until the device is healthy, then evaluates. Returns
  // outcome launch_error with a message starting "not run:" only after stop() or
  // abandon(): such a result is no outcome of the candidate and must not be recorded.
  Evaluation evaluate(const KernelTemplate& tmpl, const GemmProblem& problem,
                      const Config& config) override;
  // As evaluate(), but returns unavailable at once, without running the candidate,
  // while the device is backing off, after stop(), or when the candidate was abandoned.
  // `on_send` (optional) is called once, just before the candidate goes to a worker:
  // the moment to journal that it started.
  // `race_ms` as CandidateJob::race_ms.
  Result<Evaluation> try_evaluate(const KernelTemplate& tmpl, const GemmProblem& problem,
                                  const Config& config, const std::function<void()>& on_send = {},
                                  double race_ms = 0);
  // The vendor library in the worker. internal when the worker was lost doing it.
  Result<Evaluation> vendor_baseline(const GemmProblem& problem) override;
  std::string vendor_name() const override;
  // The read floor measured in the worker (GpuEvaluator::read_floor), under the run
  // deadline plus kReadFloorAllowance (its compile and sweep). internal when the worker
  // was lost doing it; the worker's own error otherwise.
  Result<ReadFloor> read_floor(const GemmProblem& problem) override;
  static constexpr std::chrono::seconds kReadFloorAllowance{120};
  // Shuts the device worker down (politely); the next call starts a fresh one, which
  // builds the problem's inputs again. Compile helpers and the compile cache are kept.
  bool renew_process() override;

  // Runs a due health check now; unavailable while backing off (then next_attempt()
  // says when to call again) or when the check fails.
  Status ensure_healthy();
  std::chrono::steady_clock::time_point next_attempt() const;

  // A kernel time to scale the run deadline from before one is measured (the vendor
  // baseline, a previous run's best).
  void note_expected_kernel_ms(const GemmProblem& problem, double ms);

  WorkerStatus status() const;
  // No new candidates: a backoff wait ends, later calls return "not run" / unavailable.
  // A candidate in flight finishes.
  void stop();
  // stop(), and the candidate in flight (if any) is killed within about a quarter second;
  // its call returns "not run" / unavailable (abandoned).
  void abandon();

 private:
  WorkerEvaluator(WorkerEvaluatorOptions options, std::filesystem::path executable);
  Status start_worker_locked();
  Status ready_locked();
  Status health_check_locked();
  Result<Evaluation> evaluate_locked(const KernelTemplate& tmpl, const GemmProblem& problem,
                                     const Config& config, const std::function<void()>& on_send,
                                     double race_ms);
  void worker_lost_locked(const std::string& what, Outcome outcome);
  // Exchanges `make_request()` with the worker; when the worker was dead before it took
  // the request (so nothing ran), sends a fresh request to a fresh worker, once. The
  // result is kNotSent only when two workers in a row went down on receiving it (the
  // request is the likely cause: the caller reports it; the worker is gone). A Status
  // when no fresh worker could be started. `on_send` runs before the first send.
  Result<ExchangeResult> exchange_resending_once_locked(const std::function<nlohmann::json()>& make_request,
                                                        const GemmProblem& problem, bool starts_in_run,
                                                        const std::function<void()>& on_send = {},
                                                        std::chrono::milliseconds extra_run = {});
  void publish_locked();

  WorkerEvaluatorOptions options_;
  std::filesystem::path executable_;
  DeviceFacts facts_;
  std::string vendor_name_;
  double measured_bandwidth_ = 0;
  DeadlinePolicy policy_;

  std::mutex drive_mu_;  // the driving thread's state below
  std::unique_ptr<WorkerConnection> worker_;
  std::string worker_problem_key_;  // the problem the live worker has inputs for
  HealthTracker health_;
  std::uint64_t next_id_ = 1;

  std::unique_ptr<CompileProcesses> compiles_;

  mutable std::mutex status_mu_;
  std::condition_variable stop_cv_;
  WorkerStatus status_;
  std::chrono::steady_clock::time_point next_attempt_{};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> abandon_{false};
};

// The devices a backend finds, asked of a short-lived worker (`spec.backend`; the
// orchestrator never loads a GPU runtime itself). unavailable with the backend's reason.
Result<std::vector<DeviceFacts>> list_devices(const WorkerSpec& spec);

}  // namespace tilesmith::worker
