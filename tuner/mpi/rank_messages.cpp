#include "tuner/mpi/rank_messages.h"

namespace tilesmith::mpi {
using nlohmann::json;

json to_json(const RankHello& h) {
  return json{{"type", kRankHello}, {"host", h.host},       {"devices", h.devices},        {"width", h.width},
              {"depth", h.depth},   {"fingerprint", h.fingerprint}, {"device_name", h.device_name},
              {"compile_slots", h.compile_slots}};
}

Result<RankHello> rank_hello_from_json(const json& j) {
  RankHello h;
  try {
    h.host = j.at("host").get<std::string>();
    h.devices = j.at("devices").get<std::vector<std::string>>();
    h.width = j.at("width").get<std::size_t>();
    h.depth = j.at("depth").get<std::size_t>();
    h.fingerprint = j.at("fingerprint").get<std::string>();
    h.device_name = j.value("device_name", std::string());
    h.compile_slots = j.value("compile_slots", std::size_t(0));
  } catch (const json::exception& e) {
    return Status::parse_error(std::string("a rank's hello does not decode: ") + e.what());
  }
  if (h.width == 0 || h.devices.empty()) return Status::parse_error("a rank's hello names no device");
  return h;
}

json to_json(const RankResult& r, const char* type) {
  json e;
  to_json(e, r.evaluation);
  return json{{"type", type},
              {"id", r.id},
              {"device", r.device},
              {"evaluation", e},
              {"eval_ms", r.eval_ms}};
}

Result<RankResult> rank_result_from_json(const json& j) {
  RankResult r;
  try {
    r.id = j.at("id").get<std::uint64_t>();
    r.device = j.at("device").get<std::string>();
    r.eval_ms = j.at("eval_ms").get<double>();
  } catch (const json::exception& e) {
    return Status::parse_error(std::string("a rank's result does not decode: ") + e.what());
  }
  auto e = evaluation_from_json(j.value("evaluation", json()));
  if (!e.ok()) return e.status().with_context("a rank's result");
  r.evaluation = std::move(e).value();
  return r;
}

json started_message(std::uint64_t id, const std::string& device) {
  return json{{"type", kStarted}, {"id", id}, {"device", device}};
}

json expect_kernel_message(const GemmProblem& problem, double ms) {
  json p;
  to_json(p, problem);
  return json{{"type", kExpectKernel}, {"problem", p}, {"ms", ms}};
}

json simple_message(const char* type) { return json{{"type", type}}; }

json shutdown_message(bool skip_finalize) {
  return json{{"type", worker::kShutdown}, {"skip_finalize", skip_finalize}};
}

}  // namespace tilesmith::mpi
