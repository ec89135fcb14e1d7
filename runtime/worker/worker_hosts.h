#pragma once
// The hosts tilesmith-worker serves with: a real GPU (cuda/hip through runtime/backend.h
// and GpuEvaluator), a compile-only helper (the backend's run-time compiler behind the
// compile cache, no device opened), and a replay of a Kernel Tuner recording.
//
// Each is used by one thread (the worker's request loop).

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "runtime/gpu_evaluator.h"
#include "runtime/replay/recording.h"
#include "runtime/worker/worker_server.h"

namespace tilesmith::worker {

// The known-good candidate for GPU health checks: the embedded gemm_tiled with its
// defaults on a 256x256x256 fp32 NN problem.
Result<HealthCheckCandidate> gpu_health_check_candidate();

// Opens device `ordinal` of backend `backend` ("cuda", "hip") at hello.
std::unique_ptr<WorkerHost> make_gpu_host(std::string backend, int ordinal,
                                          GpuEvaluatorOptions options);

// Compiles for the device named at hello with `backend`'s compiler; opens no device.
std::unique_ptr<WorkerHost> make_compile_host(std::string backend, std::filesystem::path cache_dir,
                                              std::uint64_t cache_max_bytes);

// Replays `recordings` (loaded at hello; each answers for its own template, replay_set.h).
// compile_only: answers prepare only.
std::unique_ptr<WorkerHost> make_replay_host(std::vector<std::filesystem::path> recordings,
                                             replay::RecordingOptions options, std::uint64_t seed,
                                             bool compile_only);

}  // namespace tilesmith::worker
