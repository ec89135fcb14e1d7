#pragma once
// Opening the evaluator a command measures with: a GPU through the cuda or hip backend
// (auto: the first that finds a GPU), or the replay of a Kernel Tuner recording, with
// the template that wraps the recording. Shared by autotune-loop and bench-best.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "registry/kernel_template.h"
#include "runtime/backend.h"
#include "runtime/evaluator.h"
#include "runtime/gpu_evaluator.h"
#include "runtime/replay/recording.h"

namespace tilesmith::cli {

struct EvaluatorFlags {
  std::string backend = "auto";  // auto, cuda, hip, replay
  int device = 0;
  std::string cache_dir;
  std::string replay_file;   // --backend replay: the Kernel Tuner cache file
  std::string replay_space;  // optional space file for the recording
};

// --backend, --device, --cache-dir, --replay-file, --replay-space.
void add_evaluator_flags(CLI::App& app, EvaluatorFlags& flags);

struct OpenedEvaluator {
  std::unique_ptr<Backend> backend;      // GPU backends: outlives the evaluator
  std::unique_ptr<Evaluator> evaluator;
  GpuEvaluator* gpu = nullptr;           // the evaluator, when it is a GPU one
  std::shared_ptr<const replay::Recording> recording;  // replay
  std::optional<KernelTemplate> recorded_template;     // replay: the recording as a template
  // Replay: a second evaluator over the same recording with its own seed, for the
  // re-timing at the end (the same draw whatever the run's history of restarts).
  std::unique_ptr<Evaluator> retimer;
  ~OpenedEvaluator();
  OpenedEvaluator() = default;
  OpenedEvaluator(OpenedEvaluator&&) = default;
  OpenedEvaluator& operator=(OpenedEvaluator&&) = default;
};

// invalid_argument: flags that do not fit together (--replay-file without --backend
// replay, ...); not_found / parse_error: an unreadable recording; unavailable: no GPU or
// backend (exit code 3).
Result<OpenedEvaluator> open_evaluator(const EvaluatorFlags& flags, std::uint64_t seed);

}  // namespace tilesmith::cli
