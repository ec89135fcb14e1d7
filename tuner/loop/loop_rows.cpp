#include "tuner/loop/loop_rows.h"

#include "base/format.h"

#include <nlohmann/json.hpp>

namespace tilesmith {

HistoryRow RowMaker::base(int generation, const std::string& template_name, const std::string& template_hash) const {
  HistoryRow r;
  r.run_id = run_id_;
  r.session = session_;
  r.timestamp = utc_timestamp_now();
  r.generation = generation;
  r.template_name = template_name;
  r.template_hash = template_hash;
  const GemmProblem& p = problem_;
  r.m = p.m;
  r.n = p.n;
  r.k = p.k;
  r.dtype = dtype_name(p.a_type);
  r.c_dtype = dtype_name(p.c_type);
  r.layout = p.layout_code();
  r.c_layout = p.c_layout == Layout::kRowMajor ? "row" : "col";
  r.alpha = p.alpha;
  r.beta = p.beta;
  r.epilogue = epilogue_name(p.epilogue);
  r.problem_key = p.key();
  r.host = host_;
  r.backend = device_.backend;
  r.device_name = device_.name;
  r.device_arch = device_.arch;
  r.driver_version = device_.driver_version;
  r.runtime_version = device_.runtime_version;
  r.tilesmith_version = TILESMITH_VERSION;
  return r;
}

HistoryRow RowMaker::evaluation(const PlanItem& item, int generation, const std::string& template_hash,
                                const Evaluation& e, std::optional<double> eval_ms,
                                std::optional<double> vendor_median_ms, const std::string& host,
                                const std::string& device) const {
  HistoryRow r = base(generation, item.template_name, template_hash);
  r.stage = kStageEvaluation;
  if (!host.empty()) r.host = host;
  r.device = device;
  r.proposer = item.proposer;
  r.model = item.model;
  r.config = config_to_json_text(item.config);
  r.config_hash = item.config_hash;
  r.rationale = item.rationale;
  r.outcome = e.outcome;
  r.message = e.message;
  if (r.message.empty() && !e.ok() && !e.compile_log.empty()) {
    // From the first line that names an error: what a reader (and the next prompt) needs.
    std::size_t start = 0;
    if (auto pos = e.compile_log.find("error"); pos != std::string::npos) {
      auto nl = e.compile_log.rfind('\n', pos);
      start = nl == std::string::npos ? 0 : nl + 1;
    }
    r.message = e.compile_log.substr(start);
  }
  // Not for an invalid config (never compiled) nor a crash found on resume (nothing known).
  if (e.outcome != Outcome::kInvalid && (eval_ms || e.compile_ms > 0)) {
    r.compile_ms = e.compile_ms;
    r.compile_cached = e.compile_cache_hit;
  }
  const auto& res = e.resources;
  if (res.registers >= 0) r.registers = res.registers;
  if (res.static_shared_bytes >= 0) r.shared_bytes = res.static_shared_bytes + res.dynamic_shared_bytes;
  else if (res.dynamic_shared_bytes > 0) r.shared_bytes = res.dynamic_shared_bytes;
  if (res.local_bytes >= 0) r.local_bytes = res.local_bytes;
  if (res.spill_store_bytes >= 0) r.spill_store_bytes = res.spill_store_bytes;
  if (res.spill_load_bytes >= 0) r.spill_load_bytes = res.spill_load_bytes;
  if (e.ok() && e.timing.samples > 0) {
    r.samples = e.timing.samples;
    r.median_ms = e.timing.median_ms;
    r.min_ms = e.timing.min_ms;
    r.p20_ms = e.timing.p20_ms;
    r.p80_ms = e.timing.p80_ms;
    r.cv = e.timing.cv;
    r.tflops = e.tflops;
    r.gbps = e.gbps;
    if (e.roofline_bound_tflops > 0) r.roofline_pct = e.roofline_pct;
    if (vendor_median_ms && e.timing.median_ms > 0) r.vendor_ratio = *vendor_median_ms / e.timing.median_ms;
  }
  if (e.accuracy.checked) {
    r.max_abs_error = e.accuracy.max_abs_error;
    r.rel_error_norm = e.accuracy.rel_error_norm;
  }
  r.eval_ms = eval_ms;
  if (e.ok() && e.telemetry) {
    const TelemetrySummary& t = *e.telemetry;
    r.sm_clock_mhz = t.sm_clock_mhz;
    r.mem_clock_mhz = t.mem_clock_mhz;
    r.power_w = t.power_w;
    r.max_temp_c = t.max_temperature_c;
    // "none" tells a reading without reasons from no reading at all.
    if (t.readings > 0)
      r.throttle_reasons = t.throttle_reasons ? throttle_reason_names(t.throttle_reasons) : "none";
    r.joules_per_launch = t.joules_per_launch;
  }
  return r;
}

HistoryRow RowMaker::rejection(const PlanRejection& rej, int generation, const std::string& template_hash) const {
  HistoryRow r = base(generation, rej.template_name, template_hash);
  r.stage = kStageProposal;
  r.proposer = rej.proposer;
  r.model = rej.model;
  r.config = rej.config;
  r.config_hash = rej.config_hash;
  r.outcome = Outcome::kInvalid;
  r.message = rej.reason;
  return r;
}

PlanRejection plan_rejection(const std::string& template_name, const std::string& batch_proposer,
                             const RejectedProposal& rejected) {
  PlanRejection out;
  out.template_name = template_name;
  split_proposer_name(rejected.proposer.empty() ? batch_proposer : rejected.proposer, &out.proposer, &out.model);
  out.reason = rejected.reason;
  out.config = rejected.raw;
  nlohmann::json j = nlohmann::json::parse(rejected.raw, nullptr, false);
  if (j.is_object()) {
    j.erase("rationale");
    auto c = config_from_json(j);
    if (c.ok()) {
      out.config = config_to_json_text(*c);
      out.config_hash = config_hash(*c);
    }
  }
  return out;
}

}  // namespace tilesmith
