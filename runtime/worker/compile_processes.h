#pragma once
// prepare() for a WorkerEvaluator: compiles in helper processes ("tilesmith-worker
// --compile-only"), never in the orchestrator. A run-time compiler can crash the
// process that calls it (this machine's hipRTC aborts on gfx942); in a helper that
// costs one candidate a `crash` outcome, and the next compile gets a fresh helper.
// Helpers share the device worker's compile cache folder, so the device worker's own
// compile of a prepared candidate is a cache hit and the GPU does not wait for the
// compiler.
//
// Up to `max_processes` helpers live at once, kept between compiles. Thread-safe:
// prepare() may be called from several threads; each call uses one helper alone.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "registry/device_facts.h"
#include "registry/kernel_template.h"
#include "runtime/evaluation.h"
#include "runtime/worker/deadlines.h"
#include "runtime/worker/worker_connection.h"

namespace tilesmith::worker {

class CompileProcesses {
 public:
  struct Counters {
    std::uint64_t compiles = 0, crashes = 0, timeouts = 0, started = 0;
  };

  // `launch` starts a compile-only worker; `device` is sent at hello (what to compile
  // for); `policy` gives the compile deadline and learns compile times. `policy` must
  // outlive this object.
  CompileProcesses(WorkerLaunch launch, DeviceFacts device, int max_processes,
                   DeadlinePolicy& policy);
  // Shuts the idle helpers down. No prepare() may be running.
  ~CompileProcesses();
  CompileProcesses(const CompileProcesses&) = delete;
  CompileProcesses& operator=(const CompileProcesses&) = delete;

  // The compile step alone: ok, invalid or compile_error as the compiler says; crash
  // when the helper died (or none could be started: the message says which), timeout
  // past the compile deadline. Never retried here.
  Evaluation prepare(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config);

  Counters counters() const;

 private:
  Evaluation prepare_once(const KernelTemplate& tmpl, const GemmProblem& problem,
                          const Config& config, bool may_resend);
  Result<std::unique_ptr<WorkerConnection>> start_helper();
  std::unique_ptr<WorkerConnection> acquire(Status* failure);
  void release(std::unique_ptr<WorkerConnection> helper);

  WorkerLaunch launch_;
  DeviceFacts device_;
  int max_processes_;
  DeadlinePolicy& policy_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<WorkerConnection>> idle_;
  int live_ = 0;  // idle + in use
  std::uint64_t next_id_ = 1;
  Counters counters_;
};

}  // namespace tilesmith::worker
