#include "tuner/records/best_config.h"

#include "base/files.h"

namespace tilesmith {
using nlohmann::json;

std::string BestEntry::key() const {
  return device_fingerprint + "|" + template_name + "@" + template_hash + "|" + problem.key();
}

json metrics_json(const Evaluation& e) {
  json m{{"median_ms", e.timing.median_ms}, {"min_ms", e.timing.min_ms},   {"p20_ms", e.timing.p20_ms},
         {"p80_ms", e.timing.p80_ms},       {"cv", e.timing.cv},            {"samples", e.timing.samples},
         {"tflops", e.tflops},              {"gbps", e.gbps},               {"roofline_pct", e.roofline_pct},
         {"max_abs_error", e.accuracy.max_abs_error},
         {"rel_error_norm", e.accuracy.rel_error_norm},
         {"registers", e.resources.registers}};
  // Only where the energy window measured it: a figure of 0 would read as free.
  if (e.telemetry && e.telemetry->joules_per_launch) m["joules_per_launch"] = *e.telemetry->joules_per_launch;
  return m;
}

namespace {
json number_or_null(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::optional<double> number_at(const json& j, const char* key) {
  if (j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}
}  // namespace

std::optional<double> entry_objective_value(const BestEntry& e) { return entry_objective_value(e, e.objective); }

std::optional<double> entry_objective_value(const BestEntry& e, Objective o) {
  if (!e.metrics.is_object()) return std::nullopt;
  return objective_value(o, number_at(e.metrics, "median_ms"), number_at(e.metrics, "joules_per_launch"));
}

namespace {

json entry_to_json(const BestEntry& e) {
  json problem;
  to_json(problem, e.problem);
  json vendor{{"name", e.vendor_name},
              {"median_ms", number_or_null(e.vendor_median_ms)},
              {"ratio", number_or_null(e.vendor_ratio)}};
  // The spread only where it was measured: older readers and files stay as they were.
  if (e.vendor_p20_ms) vendor["p20_ms"] = *e.vendor_p20_ms;
  if (e.vendor_p80_ms) vendor["p80_ms"] = *e.vendor_p80_ms;
  if (e.vendor_cv) vendor["cv"] = *e.vendor_cv;
  if (e.vendor_joules) vendor["joules_per_launch"] = *e.vendor_joules;
  json j{{"key", e.key()},
         {"device_fingerprint", e.device_fingerprint},
         {"device", e.device},
         {"template", {{"name", e.template_name}, {"source_hash", e.template_hash}}},
         {"problem", problem},
         {"config", config_to_json(e.config)},
         {"objective", objective_name(e.objective)},
         {"metrics", e.metrics},
         {"vendor", vendor},
         {"provenance", e.provenance},
         {"environment", e.environment},
         {"retime", e.retime.is_array() ? e.retime : json::array()}};
  // Only where there is one: a search entry and older readers stay as they were.
  if (e.certification.is_object()) j["certification"] = e.certification;
  if (!e.code_hash.empty()) j["template"]["code_hash"] = e.code_hash;
  return j;
}

// What an entry must hold, said in the file's terms rather than the JSON library's.
Status check_entry_shape(const json& j, const std::string& where) {
  const std::string fix = " (docs/best_config.md): restore the file from a copy, or delete this entry and run "
                          "autotune-loop on the same --results again, which writes it anew from history.csv";
  if (!j.is_object()) return Status::parse_error(where + " is not a JSON object" + fix);
  auto need = [&](const char* key, json::value_t type, const char* kind) -> Status {
    if (!j.contains(key)) return Status::parse_error(where + " has no \"" + key + "\" " + kind + fix);
    if (j[key].type() != type) return Status::parse_error(where + ": \"" + key + "\" is not " + kind + fix);
    return {};
  };
  TS_RETURN_IF_ERROR(need("device_fingerprint", json::value_t::string, "(a string naming the GPU)"));
  TS_RETURN_IF_ERROR(need("template", json::value_t::object, "(an object with the template's \"name\")"));
  if (!j["template"].contains("name") || !j["template"]["name"].is_string())
    return Status::parse_error(where + ": \"template\" has no string \"name\"" + fix);
  TS_RETURN_IF_ERROR(need("problem", json::value_t::object, "(an object: m, n, k, dtype, layout, ...)"));
  TS_RETURN_IF_ERROR(need("config", json::value_t::object, "(an object of the tuned parameters)"));
  if (j.contains("device") && !j["device"].is_object())
    return Status::parse_error(where + ": \"device\" is not an object" + fix);
  return {};
}

// The device an entry was measured on. Entries whose "device" object is missing (edited
// by hand, or cut down) still name it in the fingerprint, "NAME|ARCH|driver ...|rtc ...":
// that is enough for bench-best to pick this device's entries.
json device_of(const json& j, const std::string& fingerprint) {
  json device = j.value("device", json::object());
  const auto bar = fingerprint.find('|');
  if (!device.contains("name") && bar != std::string::npos) device["name"] = fingerprint.substr(0, bar);
  if (!device.contains("arch") && bar != std::string::npos) {
    const auto next = fingerprint.find('|', bar + 1);
    device["arch"] = fingerprint.substr(bar + 1, next == std::string::npos ? std::string::npos : next - bar - 1);
  }
  return device;
}

Result<BestEntry> entry_from_json(const json& j, size_t index) {
  const std::string where = "entry " + std::to_string(index);
  TS_RETURN_IF_ERROR(check_entry_shape(j, where));
  BestEntry e;
  try {
    e.device_fingerprint = j.at("device_fingerprint").get<std::string>();
    e.device = device_of(j, e.device_fingerprint);
    e.template_name = j.at("template").at("name").get<std::string>();
    e.template_hash = j.at("template").value("source_hash", std::string());
    if (j["template"].contains("code_hash") && !j["template"]["code_hash"].is_string())
      return Status::parse_error(where + ": \"template\".\"code_hash\" is not a string (docs/best_config.md)");
    e.code_hash = j.at("template").value("code_hash", std::string());
    auto problem = problem_from_json(j.at("problem"));
    if (!problem.ok()) return problem.status().with_context(where + ": \"problem\"");
    e.problem = *problem;
    auto config = config_from_json(j.at("config"));
    if (!config.ok()) return config.status().with_context(where + ": \"config\"");
    e.config = *config;
    e.metrics = j.value("metrics", json::object());
    if (j.contains("objective")) {
      // A misspelt objective would silently rank the entry by time: refuse it instead.
      auto objective = j["objective"].is_string() ? parse_objective(j["objective"].get<std::string>())
                                                  : Result<Objective>(Status::invalid("not a string"));
      if (!objective.ok())
        return Status::parse_error(where + ": \"objective\": " + objective.status().message() +
                                   " (docs/best_config.md)");
      e.objective = *objective;
    }
    if (j.contains("vendor") && j["vendor"].is_object()) {
      const json& v = j["vendor"];
      e.vendor_name = v.value("name", std::string());
      e.vendor_ratio = number_at(v, "ratio");
      e.vendor_median_ms = number_at(v, "median_ms");
      e.vendor_p20_ms = number_at(v, "p20_ms");
      e.vendor_p80_ms = number_at(v, "p80_ms");
      e.vendor_cv = number_at(v, "cv");
      e.vendor_joules = number_at(v, "joules_per_launch");
    }
    e.provenance = j.value("provenance", json::object());
    e.environment = j.value("environment", json::object());
    e.retime = j.value("retime", json::array());
    if (j.contains("certification") && j["certification"].is_object())
      e.certification = j["certification"];
  } catch (const json::exception& ex) {
    // A field of the wrong type past the checks above: name the entry, not the library.
    std::string what = ex.what();
    if (const auto close = what.find("] "); what.rfind("[json.exception", 0) == 0 && close != std::string::npos)
      what = what.substr(close + 2);
    return Status::parse_error(where + ": " + what + " (docs/best_config.md)");
  }
  return e;
}
}  // namespace

Result<std::vector<BestEntry>> read_best_config(const std::filesystem::path& path) {
  TS_ASSIGN_OR_RETURN(std::string text, read_file(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::parse_error(path.string() + " is not valid JSON");
  if (!j.is_object() || j.value("schema", std::string()) != kBestConfigSchema)
    return Status::parse_error(path.string() + " is not a tilesmith best_config file (expected \"schema\": \"" +
                               kBestConfigSchema + "\")");
  std::vector<BestEntry> out;
  const json& entries = j.value("entries", json::array());
  for (size_t i = 0; i < entries.size(); ++i) {
    auto e = entry_from_json(entries[i], i);
    if (!e.ok()) return e.status().with_context(path.string());
    out.push_back(std::move(e).value());
  }
  return out;
}

Status write_best_config(const std::filesystem::path& path, const std::vector<BestEntry>& entries) {
  json j{{"schema", kBestConfigSchema}, {"entries", json::array()}};
  for (const auto& e : entries) j["entries"].push_back(entry_to_json(e));
  return write_file_atomic(path, j.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

Status upsert_best_config(const std::filesystem::path& path, const BestEntry& entry) {
  std::vector<BestEntry> entries;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    TS_ASSIGN_OR_RETURN(entries, read_best_config(path));
  }
  bool replaced = false;
  for (auto& e : entries)
    if (e.key() == entry.key()) {
      e = entry;
      replaced = true;
    }
  if (!replaced) entries.push_back(entry);
  return write_best_config(path, entries);
}

Status remove_best_config_entry(const std::filesystem::path& path, const std::string& key) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  TS_ASSIGN_OR_RETURN(auto entries, read_best_config(path));
  const auto before = entries.size();
  std::erase_if(entries, [&](const BestEntry& e) { return e.key() == key; });
  if (entries.size() == before) return {};
  return write_best_config(path, entries);
}

}  // namespace tilesmith
