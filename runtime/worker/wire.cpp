#include "runtime/worker/wire.h"

#include <cmath>
#include <limits>

namespace tilesmith::worker {
namespace {

using nlohmann::json;

json wire_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

// Reads optional fields of an object into typed values; the first wrong type is kept
// as the error, so a decoder reads every field and checks once at the end.
class FieldReader {
 public:
  FieldReader(const json& j, std::string what) : j_(j), what_(std::move(what)) {
    if (!j_.is_object()) fail("is not a JSON object");
  }
  const Status& status() const { return status_; }

  void get(const char* key, double& out) {
    const json* v = find(key);
    if (!v) return;
    if (v->is_number()) {
      out = v->get<double>();
    } else if (v->is_string()) {
      const auto& s = v->get_ref<const std::string&>();
      if (s == "nan")
        out = std::numeric_limits<double>::quiet_NaN();
      else if (s == "inf")
        out = std::numeric_limits<double>::infinity();
      else if (s == "-inf")
        out = -std::numeric_limits<double>::infinity();
      else
        fail(std::string(key) + " is not a number");
    } else {
      fail(std::string(key) + " is not a number");
    }
  }
  void get(const char* key, std::int64_t& out) {
    const json* v = find(key);
    if (!v) return;
    if (v->is_number_integer())
      out = v->get<std::int64_t>();
    else
      fail(std::string(key) + " is not an integer");
  }
  void get(const char* key, int& out) {
    std::int64_t wide = out;
    get(key, wide);
    if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max())
      fail(std::string(key) + " is out of range");
    else
      out = int(wide);
  }
  void get(const char* key, bool& out) {
    const json* v = find(key);
    if (!v) return;
    if (v->is_boolean())
      out = v->get<bool>();
    else
      fail(std::string(key) + " is not a boolean");
  }
  void get(const char* key, std::string& out) {
    const json* v = find(key);
    if (!v) return;
    if (v->is_string())
      out = v->get<std::string>();
    else
      fail(std::string(key) + " is not a string");
  }
  // The nested object, or nullptr when absent (a non-object is an error).
  const json* object(const char* key) {
    const json* v = find(key);
    if (v && !v->is_object()) {
      fail(std::string(key) + " is not an object");
      return nullptr;
    }
    return v;
  }
  void fail(const std::string& why) {
    if (status_.ok()) status_ = Status::parse_error(what_ + ": " + why);
  }
  void merge(const Status& s) {
    if (status_.ok() && !s.ok()) status_ = s;
  }

 private:
  const json* find(const char* key) {
    if (!j_.is_object()) return nullptr;
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  const json& j_;
  std::string what_;
  Status status_;
};

}  // namespace

json evaluation_to_wire(const Evaluation& e) {
  const KernelResources& r = e.resources;
  const AccuracyStats& a = e.accuracy;
  const TimingStats& t = e.timing;
  return json{{"outcome", outcome_name(e.outcome)},
              {"message", e.message},
              {"compile_log", e.compile_log},
              {"compile_ms", wire_double(e.compile_ms)},
              {"compile_cache_hit", e.compile_cache_hit},
              {"resources",
               {{"registers", r.registers},
                {"static_shared_bytes", r.static_shared_bytes},
                {"dynamic_shared_bytes", r.dynamic_shared_bytes},
                {"local_bytes", r.local_bytes},
                {"spill_store_bytes", r.spill_store_bytes},
                {"spill_load_bytes", r.spill_load_bytes},
                {"max_threads_per_block", r.max_threads_per_block}}},
              {"accuracy",
               {{"checked", a.checked},
                {"max_abs_error", wire_double(a.max_abs_error)},
                {"rel_error_norm", wire_double(a.rel_error_norm)},
                {"worst_tolerance_ratio", wire_double(a.worst_tolerance_ratio)},
                {"non_finite", a.non_finite},
                {"over_tolerance", a.over_tolerance},
                {"norm_tolerance", wire_double(a.norm_tolerance)}}},
              {"timing",
               {{"samples", t.samples},
                {"median_ms", wire_double(t.median_ms)},
                {"min_ms", wire_double(t.min_ms)},
                {"p20_ms", wire_double(t.p20_ms)},
                {"p80_ms", wire_double(t.p80_ms)},
                {"mean_ms", wire_double(t.mean_ms)},
                {"cv", wire_double(t.cv)},
                {"warmup_ms", wire_double(t.warmup_ms)},
                {"l2_flushed", t.l2_flushed}}},
              {"tflops", wire_double(e.tflops)},
              {"gbps", wire_double(e.gbps)},
              {"roofline_bound_tflops", wire_double(e.roofline_bound_tflops)},
              {"roofline_pct", wire_double(e.roofline_pct)}};
}

Result<Evaluation> evaluation_from_wire(const json& j) {
  Evaluation e;
  FieldReader f(j, "evaluation");
  std::string outcome;
  f.get("outcome", outcome);
  if (f.status().ok()) {
    auto o = parse_outcome(outcome);
    if (!o.ok())
      f.fail("unknown outcome '" + outcome + "'");
    else
      e.outcome = *o;
  }
  f.get("message", e.message);
  f.get("compile_log", e.compile_log);
  f.get("compile_ms", e.compile_ms);
  f.get("compile_cache_hit", e.compile_cache_hit);
  if (const json* r = f.object("resources")) {
    FieldReader g(*r, "evaluation.resources");
    g.get("registers", e.resources.registers);
    g.get("static_shared_bytes", e.resources.static_shared_bytes);
    g.get("dynamic_shared_bytes", e.resources.dynamic_shared_bytes);
    g.get("local_bytes", e.resources.local_bytes);
    g.get("spill_store_bytes", e.resources.spill_store_bytes);
    g.get("spill_load_bytes", e.resources.spill_load_bytes);
    g.get("max_threads_per_block", e.resources.max_threads_per_block);
    f.merge(g.status());
  }
  if (const json* a = f.object("accuracy")) {
    FieldReader g(*a, "evaluation.accuracy");
    g.get("checked", e.accuracy.checked);
    g.get("max_abs_error", e.accuracy.max_abs_error);
    g.get("rel_error_norm", e.accuracy.rel_error_norm);
    g.get("worst_tolerance_ratio", e.accuracy.worst_tolerance_ratio);
    g.get("non_finite", e.accuracy.non_finite);
    g.get("over_tolerance", e.accuracy.over_tolerance);
    g.get("norm_tolerance", e.accuracy.norm_tolerance);
    f.merge(g.status());
  }
  if (const json* t = f.object("timing")) {
    FieldReader g(*t, "evaluation.timing");
    g.get("samples", e.timing.samples);
    g.get("median_ms", e.timing.median_ms);
    g.get("min_ms", e.timing.min_ms);
    g.get("p20_ms", e.timing.p20_ms);
    g.get("p80_ms", e.timing.p80_ms);
    g.get("mean_ms", e.timing.mean_ms);
    g.get("cv", e.timing.cv);
    g.get("warmup_ms", e.timing.warmup_ms);
    g.get("l2_flushed", e.timing.l2_flushed);
    f.merge(g.status());
  }
  f.get("tflops", e.tflops);
  f.get("gbps", e.gbps);
  f.get("roofline_bound_tflops", e.roofline_bound_tflops);
  f.get("roofline_pct", e.roofline_pct);
  if (!f.status().ok()) return f.status();
  return e;
}

json device_facts_to_wire(const DeviceFacts& d) {
  return json{{"backend", d.backend},
              {"ordinal", d.ordinal},
              {"name", d.name},
              {"arch", d.arch},
              {"multiprocessors", d.multiprocessors},
              {"warp_size", d.warp_size},
              {"max_threads_per_block", d.max_threads_per_block},
              {"shared_per_block", d.shared_per_block},
              {"shared_per_block_optin", d.shared_per_block_optin},
              {"registers_per_block", d.registers_per_block},
              {"registers_per_multiprocessor", d.registers_per_multiprocessor},
              {"l2_bytes", d.l2_bytes},
              {"global_memory_bytes", d.global_memory_bytes},
              {"clock_khz", d.clock_khz},
              {"memory_clock_khz", d.memory_clock_khz},
              {"memory_bus_bits", d.memory_bus_bits},
              {"driver_version", d.driver_version},
              {"runtime_version", d.runtime_version},
              {"fp32_lanes_per_multiprocessor", d.fp32_lanes_per_multiprocessor}};
}

Result<DeviceFacts> device_facts_from_wire(const json& j) {
  DeviceFacts d;
  FieldReader f(j, "device");
  f.get("backend", d.backend);
  f.get("ordinal", d.ordinal);
  f.get("name", d.name);
  f.get("arch", d.arch);
  f.get("multiprocessors", d.multiprocessors);
  f.get("warp_size", d.warp_size);
  f.get("max_threads_per_block", d.max_threads_per_block);
  f.get("shared_per_block", d.shared_per_block);
  f.get("shared_per_block_optin", d.shared_per_block_optin);
  f.get("registers_per_block", d.registers_per_block);
  f.get("registers_per_multiprocessor", d.registers_per_multiprocessor);
  f.get("l2_bytes", d.l2_bytes);
  f.get("global_memory_bytes", d.global_memory_bytes);
  f.get("clock_khz", d.clock_khz);
  f.get("memory_clock_khz", d.memory_clock_khz);
  f.get("memory_bus_bits", d.memory_bus_bits);
  f.get("driver_version", d.driver_version);
  f.get("runtime_version", d.runtime_version);
  f.get("fp32_lanes_per_multiprocessor", d.fp32_lanes_per_multiprocessor);
  if (f.status().ok() && d.backend.empty()) f.fail("backend is missing");
  if (!f.status().ok()) return f.status();
  return d;
}

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

json make_candidate_request(const char* type, std::uint64_t id, const KernelTemplate& tmpl,
                            const GemmProblem& problem, const Config& config) {
  return json{{"type", type},
              {"id", id},
              {"template", {{"name", tmpl.name()}, {"source_hash", tmpl.source_hash()}}},
              {"problem", problem},
              {"config", config_to_json(config)}};
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
