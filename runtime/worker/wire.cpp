#include "runtime/worker/wire.h"

#include "base/json_fields.h"

namespace tilesmith::worker {
using nlohmann::json;

json status_to_wire(const Status& s) {
  return json{{"code", status_code_name(s.code())}, {"message", s.message()}};
}

Status status_from_wire(const json& j) {
  std::string code, message;
  FieldReader f(j, "status");
  f.get("code", code);
  f.get("message", message);
  if (!f.status().ok())
    return Status::internal("undecodable status from the worker: " + f.status().message());
  for (int c = int(StatusCode::kOk); c <= int(StatusCode::kInternal); ++c) {
    if (code == status_code_name(StatusCode(c))) {
      if (c == int(StatusCode::kOk)) return {};
      return Status(StatusCode(c), message);
    }
  }
  return Status::internal("unknown status code '" + code + "' from the worker: " + message);
}

json error_message(const Status& s, std::uint64_t id) {
  json m{{"type", kError}, {"status", status_to_wire(s)}};
  if (id) m["id"] = id;
  return m;
}

Status error_status(const json& j, const std::string& otherwise) {
  return j.contains("status") ? status_from_wire(j.at("status")) : Status::internal(otherwise);
}

json make_candidate_request(const char* type, std::uint64_t id, const KernelTemplate& tmpl,
                            const GemmProblem& problem, const Config& config, double race_ms) {
  json j{{"type", type},
         {"id", id},
         {"template", {{"name", tmpl.name()}, {"source_hash", tmpl.source_hash()}}},
         {"problem", problem},
         {"config", config_to_json(config)}};
  if (race_ms > 0) j["race_ms"] = race_ms;
  return j;
}

Result<CandidateRequest> parse_candidate_request(const json& j) {
  CandidateRequest r;
  FieldReader f(j, "request");
  std::int64_t id = 0;
  f.get("id", id);
  if (id < 0) f.fail("id is negative");
  r.id = std::uint64_t(id);
  const json* t = f.object("template");
  if (!t) f.fail("template is missing");
  if (!f.status().ok()) return f.status();
  FieldReader g(*t, "request.template");
  g.get("name", r.tmpl.name);
  g.get("source_hash", r.tmpl.source_hash);
  if (!g.status().ok()) return g.status();
  if (!j.contains("problem") || !j.contains("config"))
    return Status::parse_error("request: problem or config missing");
  TS_ASSIGN_OR_RETURN(r.problem, problem_from_json(j.at("problem")));
  TS_ASSIGN_OR_RETURN(r.config, config_from_json(j.at("config")));
  if (auto it = j.find("race_ms"); it != j.end()) {
    if (!it->is_number() || !(it->get<double>() >= 0)) return Status::parse_error("request: race_ms is not a time");
    r.race_ms = it->get<double>();
  }
  return r;
}

std::string message_type(const json& j) {
  if (!j.is_object()) return {};
  auto it = j.find("type");
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::uint64_t message_id(const json& j) {
  if (!j.is_object()) return 0;
  auto it = j.find("id");
  return it != j.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

Result<json> parse_message(const std::string& payload) {
  json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::parse_error("the message is not valid JSON");
  if (!j.is_object()) return Status::parse_error("the message is not a JSON object");
  return j;
}

}  // namespace tilesmith::worker
