#pragma once
// The messages between rank 0 and the other ranks of a run over several hosts
// (docs/scale-out.md). Ranks speak the worker protocol's vocabulary (runtime/worker/wire.h):
// a candidate travels as its evaluate request (the template by name and source hash, the
// problem, the config), its outcome as a result with the Evaluation JSON, a refusal as its
// error message with a status, the end as its shutdown. This file adds only what a worker
// process has no need of:
//
//   rank R -> 0   rank_hello     host, device labels, width, device fingerprint
//   rank R -> 0   error          the rank cannot serve (wire.h's error_message)
//   0 -> rank R   evaluate       one candidate, id chosen by rank 0 (wire.h)
//   rank R -> 0   started        the candidate went to a device (journal it as in flight)
//   rank R -> 0   result         its outcome: device, Evaluation, eval_ms
//   0 -> rank R   prepare        compile one candidate on the rank's compile helpers (the
//                                evaluate request's form, type "prepare")
//   rank R -> 0   prepared       that compile's outcome: a result's form (no device, no eval_ms)
//   0 -> rank R   expect_kernel  a kernel time to scale deadlines from
//   rank R -> 0   heartbeat      every second: the rank is alive
//   0 -> rank R   shutdown       the run is over (skip_finalize: a rank was lost)
//
// Pure and thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "registry/problem.h"
#include "runtime/evaluation.h"
#include "runtime/worker/wire.h"

namespace tilesmith::mpi {

// The types ranks add; result, error, evaluate and shutdown are wire.h's.
inline constexpr const char* kRankHello = "rank_hello";
inline constexpr const char* kStarted = "started";
inline constexpr const char* kExpectKernel = "expect_kernel";
inline constexpr const char* kHeartbeat = "heartbeat";
inline constexpr const char* kPrepare = "prepare";
inline constexpr const char* kPrepared = "prepared";

struct RankHello {
  std::string host;                  // local_host_name() of the rank
  std::vector<std::string> devices;  // its runner's device labels ("cuda:0")
  std::size_t width = 0, depth = 0;  // its runner's
  std::string fingerprint;           // DeviceFacts::fingerprint() of its devices
  std::string device_name;
  // Compiles it runs at once for rank 0 (prepare requests); 0 from a rank of an earlier
  // build, which is then sent no compiles.
  std::size_t compile_slots = 0;
};
nlohmann::json to_json(const RankHello& h);
Result<RankHello> rank_hello_from_json(const nlohmann::json& j);

// A measured candidate (type result), or a compile done for rank 0 (type prepared: the
// outcome of Evaluator::prepare() on the rank, with no device and no eval_ms).
struct RankResult {
  std::uint64_t id = 0;
  std::string device;
  Evaluation evaluation;
  double eval_ms = 0;
};
nlohmann::json to_json(const RankResult& r, const char* type = worker::kResult);
Result<RankResult> rank_result_from_json(const nlohmann::json& j);

nlohmann::json started_message(std::uint64_t id, const std::string& device);
nlohmann::json expect_kernel_message(const GemmProblem& problem, double ms);
nlohmann::json simple_message(const char* type);  // heartbeat, shutdown
// The run is over; `skip_finalize` when a rank was lost (MPI_Finalize could wait for it).
nlohmann::json shutdown_message(bool skip_finalize);

}  // namespace tilesmith::mpi
