#include "runtime/replay/kernel_tuner_cache.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "runtime/replay/compressed_file.h"

namespace tilesmith::replay {
namespace {

using nlohmann::json;

// Kernel Tuner writes a string marker instead of a time for configs that failed (1.x),
// and older versions wrote a huge sentinel time. Either becomes a named outcome.
bool failure_outcome(const json& time, Outcome* outcome, std::string* marker) {
  if (time.is_string()) {
    *marker = time.get<std::string>();
    if (*marker == "CompilationFailedConfig")
      *outcome = Outcome::kCompileError;
    else if (*marker == "RuntimeFailedConfig")
      *outcome = Outcome::kLaunchError;
    else if (*marker == "InvalidConfig")
      *outcome = Outcome::kInvalid;
    else
      *outcome = Outcome::kCrash;
    return true;
  }
  if (time.is_number() && (time.get<double>() >= 1e19 || !std::isfinite(time.get<double>()))) {
    *marker = "sentinel time " + time.dump();
    *outcome = Outcome::kLaunchError;
    return true;
  }
  return false;
}

Result<std::int64_t> integer_value(const json& v, const std::string& what) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15)
      return static_cast<std::int64_t>(d);
  }
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  return Status::invalid(what + " has the non-integer value " + v.dump() +
                         " (tilesmith supports integer parameters only)");
}

}  // namespace

Result<KernelTunerCache> parse_kernel_tuner_cache(std::string_view json_text,
                                                  const std::string& origin) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::parse_error(origin + ": not valid JSON");
  if (!j.is_object())
    return Status::parse_error(origin + ": a Kernel Tuner cache is a JSON object");
  KernelTunerCache c;
  auto str = [&](const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
  };
  c.device_name = str("device_name");
  c.kernel_name = str("kernel_name");
  c.objective = str("objective");
  if (j.contains("problem_size")) {
    const json& ps = j["problem_size"];
    if (ps.is_array()) {
      for (const json& v : ps) {
        TS_ASSIGN_OR_RETURN(std::int64_t x, integer_value(v, origin + ": problem_size"));
        c.problem_size.push_back(x);
      }
    } else {
      TS_ASSIGN_OR_RETURN(std::int64_t x, integer_value(ps, origin + ": problem_size"));
      c.problem_size.push_back(x);
    }
  }
  if (!j.contains("tune_params") || !j["tune_params"].is_object())
    return Status::parse_error(origin + ": no \"tune_params\" object");
  const json& tp = j["tune_params"];
  if (j.contains("tune_params_keys") && j["tune_params_keys"].is_array()) {
    for (const json& k : j["tune_params_keys"]) {
      if (!k.is_string()) return Status::parse_error(origin + ": tune_params_keys must be strings");
      c.param_names.push_back(k.get<std::string>());
    }
  } else {
    // nlohmann keeps object keys sorted, so without tune_params_keys the key order
    // is unknown; names are still right, and records are read by name below.
    for (const auto& [k, v] : tp.items()) c.param_names.push_back(k);
  }
  if (c.param_names.empty()) return Status::parse_error(origin + ": the cache names no parameters");
  for (const std::string& name : c.param_names) {
    if (!tp.contains(name) || !tp[name].is_array() || tp[name].empty())
      return Status::parse_error(origin + ": tune_params has no values for '" + name + "'");
    std::vector<std::int64_t> values;
    for (const json& v : tp[name]) {
      TS_ASSIGN_OR_RETURN(std::int64_t x, integer_value(v, origin + ": parameter " + name));
      if (std::find(values.begin(), values.end(), x) == values.end()) values.push_back(x);
    }
    c.param_values.push_back(std::move(values));
  }
  if (!j.contains("cache") || !j["cache"].is_object())
    return Status::parse_error(origin + ": no \"cache\" object");
  const json& cache = j["cache"];
  c.records.reserve(cache.size());
  for (const auto& [key, rec] : cache.items()) {
    const std::string where = origin + ": record '" + key + "'";
    if (!rec.is_object()) return Status::parse_error(where + " is not an object");
    KernelTunerRecord r;
    r.point.resize(c.param_names.size());
    for (size_t p = 0; p < c.param_names.size(); ++p) {
      const std::string& name = c.param_names[p];
      if (!rec.contains(name))
        return Status::parse_error(where + " has no value for '" + name + "'");
      TS_ASSIGN_OR_RETURN(r.point[p], integer_value(rec[name], where + ": " + name));
      const auto& dom = c.param_values[p];
      if (std::find(dom.begin(), dom.end(), r.point[p]) == dom.end())
        return Status::invalid(where + ": " + name + "=" + std::to_string(r.point[p]) +
                               " is not in tune_params");
    }
    if (!rec.contains("time")) return Status::parse_error(where + " has no \"time\"");
    if (!failure_outcome(rec["time"], &r.outcome, &r.failure)) {
      if (!rec["time"].is_number())
        return Status::parse_error(where + ": \"time\" is not a number");
      r.time_ms = rec["time"].get<double>();
      if (rec.contains("times") && rec["times"].is_array()) {
        for (const json& t : rec["times"])
          if (t.is_number()) r.times_ms.push_back(t.get<double>());
      }
    }
    if (r.outcome != Outcome::kOk && rec.contains("tilesmith_outcome") &&
        rec["tilesmith_outcome"].is_string()) {
      auto named = parse_outcome(rec["tilesmith_outcome"].get<std::string>());
      if (!named.ok() || *named == Outcome::kOk)
        return Status::parse_error(where + ": \"tilesmith_outcome\" " + rec["tilesmith_outcome"].dump() +
                                   " is not a failure outcome");
      r.outcome = *named;
    }
    if (rec.contains("compile_time") && rec["compile_time"].is_number())
      r.compile_ms = rec["compile_time"].get<double>();
    c.records.push_back(std::move(r));
  }
  if (c.records.empty()) return Status::parse_error(origin + ": the cache holds no records");
  if (j.contains("tilesmith")) {
    const json& t = j["tilesmith"];
    if (!t.is_object()) return Status::parse_error(origin + ": \"tilesmith\" is not an object");
    if (t.contains("problem")) {
      auto p = problem_from_json(t["problem"]);
      if (!p.ok()) return Status::parse_error(origin + ": tilesmith.problem: " + p.status().message());
      c.problem = *p;
    }
    if (t.contains("device")) {
      auto d = device_facts_from_json(t["device"]);
      if (!d.ok()) return Status::parse_error(origin + ": tilesmith.device: " + d.status().message());
      c.device = *d;
    }
    if (t.contains("template_hash") && t["template_hash"].is_string())
      c.template_hash = t["template_hash"].get<std::string>();
    if (t.contains("math")) {
      if (!t["math"].is_string() || (t["math"] != "fma" && t["math"] != ""))
        return Status::parse_error(origin + ": tilesmith.math must be \"fma\" (the FP32 FMA pipe) or absent");
      c.math = t["math"].get<std::string>();
    }
    if (t.contains("provenance") && t["provenance"].is_string())
      c.provenance = t["provenance"].get<std::string>();
    if (t.contains("vendor")) {
      const json& v = t["vendor"];
      if (!v.is_object() || !v.contains("median_ms") || !v["median_ms"].is_number() ||
          !(v["median_ms"].get<double>() > 0))
        return Status::parse_error(origin + ": tilesmith.vendor needs a positive \"median_ms\"");
      c.vendor_median_ms = v["median_ms"].get<double>();
      c.vendor_name = v.value("name", std::string());
    }
  }
  return c;
}

std::string kernel_tuner_cache_to_json_text(const KernelTunerCache& c) {
  // Kernel Tuner's markers; the exact outcome goes beside them in "tilesmith_outcome".
  auto marker = [](Outcome o) -> const char* {
    switch (o) {
      case Outcome::kCompileError: return "CompilationFailedConfig";
      case Outcome::kInvalid: return "InvalidConfig";
      default: return "RuntimeFailedConfig";
    }
  };
  json j = json::object();
  j["version"] = "1.0";
  j["device_name"] = c.device_name;
  j["kernel_name"] = c.kernel_name;
  j["problem_size"] = c.problem_size;
  j["objective"] = c.objective.empty() ? "time" : c.objective;
  j["tune_params_keys"] = c.param_names;
  json tp = json::object();
  for (size_t p = 0; p < c.param_names.size(); ++p) tp[c.param_names[p]] = c.param_values.at(p);
  j["tune_params"] = tp;
  json cache = json::object();
  for (const KernelTunerRecord& r : c.records) {
    std::string key;
    json rec = json::object();
    for (size_t p = 0; p < c.param_names.size(); ++p) {
      if (p) key += ',';
      key += std::to_string(r.point.at(p));
      rec[c.param_names[p]] = r.point[p];
    }
    if (r.outcome == Outcome::kOk) {
      rec["time"] = r.time_ms;
      if (!r.times_ms.empty()) rec["times"] = r.times_ms;
    } else {
      rec["time"] = marker(r.outcome);
      rec["tilesmith_outcome"] = outcome_name(r.outcome);
    }
    rec["compile_time"] = r.compile_ms;
    cache[key] = std::move(rec);
  }
  j["cache"] = std::move(cache);
  json t = json::object();
  if (c.problem) t["problem"] = *c.problem;
  if (c.device) t["device"] = *c.device;
  if (!c.template_hash.empty()) t["template_hash"] = c.template_hash;
  if (!c.math.empty()) t["math"] = c.math;
  if (!c.provenance.empty()) t["provenance"] = c.provenance;
  if (c.vendor_median_ms) t["vendor"] = {{"name", c.vendor_name}, {"median_ms", *c.vendor_median_ms}};
  if (!t.empty()) j["tilesmith"] = std::move(t);
  return j.dump(1) + "\n";
}

Result<KernelTunerCache> read_kernel_tuner_cache(const std::filesystem::path& path) {
  TS_ASSIGN_OR_RETURN(std::string text, read_maybe_gzip(path));
  return parse_kernel_tuner_cache(text, path.string());
}

}  // namespace tilesmith::replay
