#include "tuner/records/history_recording.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "registry/config.h"

namespace tilesmith {

Result<GemmProblem> problem_of_row(const HistoryRow& r) {
  nlohmann::json j = {{"m", r.m},           {"n", r.n},           {"k", r.k},
                      {"dtype", r.dtype},   {"c_dtype", r.c_dtype.empty() ? r.dtype : r.c_dtype},
                      {"layout", r.layout}, {"c_layout", r.c_layout.empty() ? "row" : r.c_layout},
                      {"alpha", r.alpha},   {"beta", r.beta},     {"epilogue", r.epilogue}};
  if (const auto at = r.problem_key.find("slope="); at != std::string::npos) {
    try {
      j["epilogue_slope"] = std::stod(r.problem_key.substr(at + 6));
    } catch (const std::exception&) {
    }
  }
  // history.csv has no scaling columns: an FP8 row's scaling is read back from its problem_key.
  {
    GemmProblem scaled;
    if (Status s = apply_scaling_from_key(r.problem_key, scaled); !s.ok())
      return Status::invalid("row " + std::to_string(r.row) + ": " + s.message());
    if (scaled.scaling != Scaling::kNone) {
      j["scaling"] = scaling_name(scaled.scaling);
      j["scale_a"] = scaled.scale_a;
      j["scale_b"] = scaled.scale_b;
    }
  }
  auto p = problem_from_json(j);
  if (!p.ok()) return Status::invalid("row " + std::to_string(r.row) + ": " + p.status().message());
  if (!r.problem_key.empty() && p->key() != r.problem_key)
    return Status::invalid("row " + std::to_string(r.row) + ": its columns give the problem " + p->key() +
                           ", its problem_key says " + r.problem_key);
  return *p;
}

Result<replay::KernelTunerCache> kernel_tuner_cache_from_history(const std::vector<HistoryRow>& rows,
                                                                 const std::string& template_name) {
  std::set<std::string> templates;
  for (const HistoryRow& r : rows)
    if (r.evaluated()) templates.insert(r.template_name);
  std::string name = template_name;
  if (name.empty()) {
    if (templates.size() != 1) {
      std::string list;
      for (const auto& t : templates) list += (list.empty() ? "" : ", ") + t;
      return Status::invalid(templates.empty() ? std::string("the history holds no evaluated rows")
                                               : "the history holds several templates (" + list +
                                                     "); name one with --template");
    }
    name = *templates.begin();
  }
  std::vector<const HistoryRow*> mine;
  for (const HistoryRow& r : rows)
    if (r.evaluated() && r.template_name == name) mine.push_back(&r);
  if (mine.empty()) return Status::invalid("the history holds no evaluated rows of template '" + name + "'");

  const HistoryRow& first = *mine.front();
  auto differs = [&](const char* what, const std::string& a, const std::string& b, const HistoryRow& r) {
    return Status::invalid("rows " + std::to_string(first.row) + " and " + std::to_string(r.row) + " of '" + name +
                           "' differ in " + what + " (" + a + " vs " + b +
                           "): a Kernel Tuner cache holds one measured space; convert a run of one problem on one "
                           "device and one version of the template");
  };
  for (const HistoryRow* r : mine) {
    if (r->problem_key != first.problem_key) return differs("problem", first.problem_key, r->problem_key, *r);
    if (r->template_hash != first.template_hash) return differs("template version", first.template_hash, r->template_hash, *r);
    if (r->device_name != first.device_name || r->device_arch != first.device_arch)
      return differs("device", first.device_name + " " + first.device_arch, r->device_name + " " + r->device_arch, *r);
  }

  replay::KernelTunerCache c;
  c.device_name = first.device_name;
  c.kernel_name = name;
  c.objective = "time";
  TS_ASSIGN_OR_RETURN(GemmProblem problem, problem_of_row(first));
  c.problem = problem;
  c.problem_size = {problem.m, problem.n, problem.k};
  DeviceFacts device;
  device.backend = first.backend;
  device.name = first.device_name;
  device.arch = first.device_arch;
  device.driver_version = first.driver_version;
  device.runtime_version = first.runtime_version;
  c.device = device;
  c.template_hash = first.template_hash;
  c.provenance = "history.csv of run " + first.run_id + " (tilesmith " + first.tilesmith_version +
                 "); time = the median of the measured repetitions (ms)";
  // The vendor's time, timed once per problem in the run's process: every ok row's ratio
  // is the vendor's median over its own, so ratio x median gives it back (the median of
  // those, against rounding in the file).
  std::vector<double> vendor_ms;
  for (const HistoryRow* r : mine)
    if (r->ok() && r->vendor_ratio && r->median_ms && *r->vendor_ratio > 0) vendor_ms.push_back(*r->vendor_ratio * *r->median_ms);
  if (!vendor_ms.empty()) {
    std::nth_element(vendor_ms.begin(), vendor_ms.begin() + vendor_ms.size() / 2, vendor_ms.end());
    c.vendor_median_ms = vendor_ms[vendor_ms.size() / 2];
    c.vendor_name = "the vendor library as timed in run " + first.run_id;
  }

  // One record per configuration, from its first evaluation; parameters in name order.
  std::map<std::string, std::set<std::int64_t>> values;
  std::vector<std::pair<Config, const HistoryRow*>> configs;
  std::set<std::string> seen;
  for (const HistoryRow* r : mine) {
    auto cfg = config_from_json_text(r->config);
    if (!cfg.ok())
      return Status::invalid("row " + std::to_string(r->row) + ": its config " + r->config + " is not a configuration: " +
                             cfg.status().message());
    if (!seen.insert(config_to_json_text(*cfg)).second) continue;
    if (!configs.empty() && cfg->size() != configs.front().first.size())
      return Status::invalid("row " + std::to_string(r->row) + ": its config names other parameters than row " +
                             std::to_string(configs.front().second->row) + "'s");
    for (const auto& [k, v] : *cfg) values[k].insert(v);
    configs.emplace_back(std::move(*cfg), r);
  }
  for (const auto& [k, vs] : values) {
    c.param_names.push_back(k);
    c.param_values.emplace_back(vs.begin(), vs.end());
  }
  for (const auto& [cfg, r] : configs) {
    replay::KernelTunerRecord rec;
    for (const std::string& k : c.param_names) {
      auto it = cfg.find(k);
      if (it == cfg.end())
        return Status::invalid("row " + std::to_string(r->row) + ": its config has no " + k);
      rec.point.push_back(it->second);
    }
    rec.outcome = r->outcome;
    if (r->ok()) {
      if (!r->median_ms || !(*r->median_ms > 0))
        return Status::invalid("row " + std::to_string(r->row) + " is ok but has no median_ms");
      rec.time_ms = *r->median_ms;
    } else {
      rec.failure = outcome_name(r->outcome);
    }
    rec.compile_ms = r->compile_ms.value_or(0);
    c.records.push_back(std::move(rec));
  }
  return c;
}

}  // namespace tilesmith
