#pragma once
// Opening what a command measures with, from its settings (the command line's
// --backend, --device(s), ... : cli/evaluator_flags.h). Shared by autotune-loop's runs, its
// MPI ranks and bench-best.
//
//  - GPU backends (cuda, hip; auto: the first whose worker finds a GPU): one worker
//    process (tilesmith-worker) per selected device, so a kernel that faults, hangs or
//    crashes the compiler costs one candidate and this process never loads a GPU
//    runtime (docs/reliability.md). `--in-process` measures in this process instead,
//    for debugging: a fault then ends the run.
//  - The replay backend (a Kernel Tuner recording, no GPU) answers in this process, or
//    in `--replay-workers N` worker processes, which exercises the worker path without
//    a GPU.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "registry/kernel_template.h"
#include "runtime/backend.h"
#include "runtime/evaluator.h"
#include "runtime/gpu_evaluator.h"
#include "runtime/replay/recording.h"
#include "tuner/loop/candidate_runner.h"
#include "tuner/loop/worker_runner.h"

namespace tilesmith {

// The flags' names are given beside each setting: the errors name them.
struct EvaluatorSettings {
  std::string backend = "auto";  // auto, cuda, hip, replay
  std::optional<int> device;     // --device N
  std::string devices;           // --devices LIST: "0,1", "all", "0,0" (two workers on GPU 0)
  bool in_process = false;       // --in-process
  int replay_workers = 0;        // --replay-workers N (0: replay in this process)
  std::string worker_exe;        // --worker-exe PATH
  std::string cache_dir;
  // --backend replay: the Kernel Tuner cache files (several for a problem set: each
  // problem is answered by the recording of its shape, runtime/replay/replay_set.h).
  std::vector<std::string> replay_files;
  std::string replay_space;  // optional space file for the recording
  double run_deadline_s = 0;      // --run-deadline (0: scaled from the expected runtime)
  double compile_deadline_s = 0;  // --compile-deadline (0: scaled from the compiles seen)
};

// "0,1,3" -> {0, 1, 3}; a repeated ordinal is another worker on that device. "all" is
// not a list (the caller asks the backend). invalid_argument saying what is wrong.
Result<std::vector<int>> parse_device_list(const std::string& text);

// The energy window of a measurement that reports energy (EvaluatorContext::energy_ms):
// bench-best's and a search for energy's alike, so their figures are taken the same way.
// It costs at least this long per measurement, up to 4x that plus 100 ms where the
// counter steps slowly (runtime/telemetry.h, EnergyWindow).
inline constexpr double kEnergyWindowMs = 100;

struct EvaluatorContext {
  std::uint64_t seed = 1;  // input data (GPU) or draws (replay)
  // Folders the command loaded templates from (--kernels-dir): the workers look templates
  // up by name there and check their source hash.
  std::vector<std::filesystem::path> template_dirs;
  // Every line a worker writes to stderr, "[worker PID] ..." (from the workers' threads).
  std::function<void(const std::string&)> on_worker_log;
  // Compiles at once, all devices together (--compile-threads); -1: default_compile_threads()
  // per device. Each device's worker gets its share of compile helper processes.
  int compile_threads = -1;
  // The energy window after each measurement (TimingOptions::energy_ms): 0 for a search
  // for time, where it would cost 100-500 ms a candidate; a search for energy or edp
  // (RunSettings::objective) and bench-best measure energy.
  double energy_ms = 0;
  // TimingOptions::steady_ms: the back-to-back spans after each measurement (bench-best).
  double steady_ms = 0;
};

// min(8, half the cores), at least 1: compiles at once for one device. With racing a
// Hopper candidate measures in ~0.2 s and compiles in 0.15-0.7 s (H200 host, fp32 4096^3),
// so 4 compiles at once kept one GPU waiting.
int default_compile_threads();
// The compile threads a run uses with `devices` devices: `requested` when >= 0, else
// default_compile_threads() per device (at most 32).
int compile_threads_for(int requested, std::size_t devices);
// What one host compiles at once in a run over several ranks (docs/scale-out.md): its
// share of --compile-threads for its runner's devices (0 with --compile-threads 0: the host
// compiles only in its workers, and rank 0 sends it no compiles).
std::size_t host_compile_slots(int requested, CandidateRunner& runner);

struct OpenedEvaluator {
  std::unique_ptr<Backend> backend;      // --in-process GPU: outlives the evaluator
  std::unique_ptr<Evaluator> evaluator;  // in this process (GPU or replay)
  GpuEvaluator* gpu = nullptr;           // the evaluator, when it is an in-process GPU one
  std::unique_ptr<WorkerRunner> workers;  // worker processes (GPU backends, --replay-workers)
  std::unique_ptr<InlineRunner> inline_runner;  // around `evaluator`
  std::shared_ptr<const replay::Recording> recording;  // replay: the first recording
  std::optional<KernelTemplate> recorded_template;     // replay: the first recording as a template
  // replay: every recording, and each as a template (the same order).
  std::vector<std::shared_ptr<const replay::Recording>> recordings;
  std::vector<KernelTemplate> recorded_templates;
  // Replay: a second evaluator over the same recording with its own seed, for the
  // re-timing at the end (the same draw whatever the run's history of restarts).
  std::unique_ptr<Evaluator> retimer;
  std::string description;  // "2 worker processes (cuda:0, cuda:1)", "in this process"

  // Where candidates go (the loop), and the evaluator for single calls (bench-best, the
  // vendor baseline): the first device's worker, or the in-process evaluator.
  CandidateRunner& runner();
  Evaluator& primary();
  // The device's copy bandwidth as measured when it was opened (bytes/s; 0 unknown).
  double measured_bandwidth() const;
  // The GPU a template's blocks are laid out on when a prior is carried to another problem
  // by their waves (tuner/search/prior_rescale.h): the device measuring; on replay the GPU
  // the recordings were made on, as they recorded it (the replay's own facts name no
  // architecture, which the templates' rules need), where they say.
  DeviceFacts launch_device();

  ~OpenedEvaluator();
  OpenedEvaluator() = default;
  OpenedEvaluator(OpenedEvaluator&&) = default;
  OpenedEvaluator& operator=(OpenedEvaluator&&) = default;
};

// The checks open_evaluator makes of the settings alone (no recording read, no process
// started): flags that do not fit together, a bad --devices list, a --worker-exe that is
// not there. invalid_argument saying what is wrong. A command calls it before it writes
// anything, so bad flags leave nothing on disk.
Status check_evaluator_settings(const EvaluatorSettings& settings);

// Makes check_evaluator_settings' checks first. invalid_argument: flags that do not fit together (--replay-file without --backend
// replay, --devices with --device, a bad list, a --worker-exe that is not there, ...);
// not_found / parse_error: an unreadable recording; unavailable: no GPU, a device that
// cannot be opened, or no worker executable (exit code 3); failed_precondition: the
// selected devices are not the same model.
Result<OpenedEvaluator> open_evaluator(const EvaluatorSettings& settings, const EvaluatorContext& context);

}  // namespace tilesmith
