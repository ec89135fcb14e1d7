#pragma once
// The worker's side of the protocol: a request loop over a pair of file descriptors
// that drives one Evaluator, for a real device (tilesmith-worker), a compile-only
// helper, or a test's fault-injecting stand-in (tests/worker/fault_worker.cpp), so all
// of them speak exactly the same protocol.
//
// An evaluate request is answered in two steps: after the compile a `progress` message
// (with the compile's figures) tells the orchestrator to switch from the compile
// deadline to the run deadline; then the `result`. When the host reports a lost GPU
// context (sticky error) the result says so and the loop ends: the process must not
// use that device again.
//
// Single-threaded: serve() runs on the calling thread until shutdown or end of file.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "registry/kernel_template.h"
#include "runtime/evaluator.h"

namespace tilesmith::worker {

// A candidate the host knows to be good on its device: the health check.
struct HealthCheckCandidate {
  KernelTemplate tmpl;
  GemmProblem problem;
  Config config;
  std::string what;  // "gemm_tiled defaults on 256x256x256 fp32 NN"
};

// What a worker process evaluates with. Implementations: worker_hosts.h, and the
// test-only fault host.
class WorkerHost {
 public:
  virtual ~WorkerHost() = default;
  // Called at hello. Compile-only hosts get the device to compile for in `device`;
  // device hosts open their own device and ignore it.
  virtual Status open(const std::optional<DeviceFacts>& device) = 0;
  // Valid after open() succeeded.
  virtual Evaluator& evaluator() = 0;
  virtual bool compile_only() const = 0;
  // Non-empty once the device context is lost for good (GpuEvaluator::broken_reason).
  virtual std::string broken_reason() const { return {}; }
  virtual Result<HealthCheckCandidate> health_check() = 0;
  // Templates the host brings besides the folders' (a recording's source-less one).
  virtual std::vector<KernelTemplate> own_templates() const { return {}; }
  // The device's copy bandwidth as measured when it was opened (bytes/s); 0 when none
  // was measured (compile-only, replay).
  virtual double measured_bandwidth() const { return 0; }
};

struct ServeOptions {
  std::vector<std::filesystem::path> template_dirs;  // searched before the embedded ones
  bool embedded_templates = true;
};

// Exit codes of a worker process.
inline constexpr int kWorkerExitOk = 0;          // shutdown or end of file
inline constexpr int kWorkerExitProtocol = 2;    // the request stream was not the protocol
inline constexpr int kWorkerExitBroken = 3;      // the device context was lost (reported first)
inline constexpr int kWorkerExitOpenFailed = 4;  // hello failed (reported first)

// Serves requests from `in_fd`, replies on `out_fd`. Returns the process exit code.
int serve(int in_fd, int out_fd, WorkerHost& host, const ServeOptions& options);

struct ProtocolFds {
  int in = -1, out = -1;
};
// For worker mains, before anything else: moves the protocol off fds 0 and 1 onto
// private close-on-exec descriptors, points fd 1 at stderr and fd 0 at /dev/null, so
// a library that prints to stdout cannot corrupt the reply stream; then starts a
// watchdog thread that ends the process when the orchestrator's end of the request
// pipe closes (the orchestrator died), even while a kernel or compile hangs.
Result<ProtocolFds> claim_stdio_for_protocol();

}  // namespace tilesmith::worker
