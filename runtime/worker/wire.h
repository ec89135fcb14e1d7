#pragma once
// The JSON payloads of the worker protocol (see docs/reliability.md for the whole
// exchange) and the codecs for the values they carry. Every decoder is strict about
// types and tolerant of missing optional fields; a payload that does not decode is a
// protocol error (the peer is treated as broken).
//
// Evaluation and DeviceFacts travel in their one JSON form (to_json and
// evaluation_from_json / device_facts_from_json beside the structs), the same the
// journal and best_config.json write; non-finite doubles travel as "nan", "inf", "-inf".
//
// All functions are pure and thread-safe.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "registry/config.h"
#include "registry/device_facts.h"
#include "registry/kernel_template.h"
#include "registry/problem.h"
#include "runtime/evaluation.h"

namespace tilesmith::worker {

inline constexpr int kProtocolVersion = 1;

nlohmann::json status_to_wire(const Status& s);    // {"code": "unavailable", "message": "..."}
Status status_from_wire(const nlohmann::json& j);  // an undecodable one becomes internal

// {"type": "error", "id", "status"}: the one way a peer says a request (id; 0 for none) or
// the peer itself cannot be served: a worker to the orchestrator, a rank to rank 0.
nlohmann::json error_message(const Status& s, std::uint64_t id = 0);
// The status an error message carries; internal saying `otherwise` when it carries none.
Status error_status(const nlohmann::json& j, const std::string& otherwise);

// Which template a request means: the worker finds it by name among its own templates
// and must find the same source hash, so both sides are sure to mean the same text.
struct TemplateRef {
  std::string name;
  std::string source_hash;
};

// evaluate / prepare: one candidate.
struct CandidateRequest {
  std::uint64_t id = 0;
  TemplateRef tmpl;
  GemmProblem problem;
  Config config;
  double race_ms = 0;  // evaluate: CandidateJob::race_ms (absent: 0)
};

// Message types.
inline constexpr const char* kHello = "hello";
inline constexpr const char* kEvaluate = "evaluate";
inline constexpr const char* kPrepare = "prepare";
inline constexpr const char* kVendorBaseline = "vendor_baseline";
inline constexpr const char* kReadFloor = "read_floor";  // {problem} -> result {read_floor}
inline constexpr const char* kHealthCheck = "health_check";
inline constexpr const char* kShutdown = "shutdown";
inline constexpr const char* kAccepted = "accepted";  // worker -> orchestrator: request read whole
inline constexpr const char* kProgress = "progress";  // worker -> orchestrator
inline constexpr const char* kResult = "result";      // worker -> orchestrator
inline constexpr const char* kError = "error";        // worker -> orchestrator
inline constexpr const char* kDevices = "devices";    // worker -> orchestrator (--list-devices)

nlohmann::json make_candidate_request(const char* type, std::uint64_t id,
                                      const KernelTemplate& tmpl, const GemmProblem& problem,
                                      const Config& config, double race_ms = 0);
Result<CandidateRequest> parse_candidate_request(const nlohmann::json& j);

// The type field of a message; empty when there is none.
std::string message_type(const nlohmann::json& j);
// The id field; 0 when there is none.
std::uint64_t message_id(const nlohmann::json& j);

// Parses one payload; parse_error for anything but a JSON object.
Result<nlohmann::json> parse_message(const std::string& payload);

}  // namespace tilesmith::worker
