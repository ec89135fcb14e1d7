#pragma once
// How to start a worker process: which executable, which backend and device, and the
// evaluator's options, turned into the command line tilesmith-worker understands.
// Plain value type.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/gpu_evaluator.h"

namespace tilesmith::worker {

struct WorkerSpec {
  std::filesystem::path executable;  // empty: find_worker_executable()
  std::string backend = "cuda";      // "cuda", "hip" or "replay"
  int device = 0;                    // ordinal within the backend
  // replay: the Kernel Tuner cache files (one per problem of a set; replay_set.h) and
  // where their spaces come from (as in replay::RecordingOptions; both sides must load
  // them the same way).
  std::vector<std::filesystem::path> recordings;
  std::filesystem::path space_file;
  std::filesystem::path spaces_dir;
  bool find_space_file = true;
  // Folders of user templates, searched before the embedded ones. Templates are found
  // by name and checked by source hash, so these must be the folders the orchestrator
  // loaded its templates from.
  std::vector<std::filesystem::path> template_dirs;
  GpuEvaluatorOptions gpu;              // compile cache, timing, input seed (the replay seed too)
  std::vector<std::string> extra_args;  // appended as given
  std::vector<std::string> env;         // "NAME=value" for the worker's environment
};

// The argument vector (argv[0] = the executable) for a device worker, or a compile-only
// helper when `compile_only`.
std::vector<std::string> worker_argv(const WorkerSpec& spec,
                                     const std::filesystem::path& executable, bool compile_only);
std::vector<std::string> list_devices_argv(const WorkerSpec& spec,
                                           const std::filesystem::path& executable);

// The worker executable: `explicit_path` when given, else $TILESMITH_WORKER, else
// tilesmith-worker beside the running executable, else the one this library was built
// with. not_found listing the places tried.
Result<std::filesystem::path> find_worker_executable(
    const std::filesystem::path& explicit_path = {});

}  // namespace tilesmith::worker
