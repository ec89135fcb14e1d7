#include "runtime/evaluation.h"

#include <nlohmann/json.hpp>

#include "analysis/stats.h"
#include "base/json_fields.h"

namespace tilesmith {
using nlohmann::json;

TimingStats summarize_timing(std::vector<double> samples_ms) {
  const analysis::SampleSummary s = analysis::summarize(std::move(samples_ms));
  TimingStats t;
  t.samples = s.count;
  t.median_ms = s.median;
  t.min_ms = s.min;
  t.p20_ms = s.p20;
  t.p80_ms = s.p80;
  t.mean_ms = s.mean;
  t.cv = s.cv;
  return t;
}

json timing_to_json(const TimingStats& t) {
  return json{{"samples", t.samples},
              {"median_ms", exact_double(t.median_ms)},
              {"min_ms", exact_double(t.min_ms)},
              {"p20_ms", exact_double(t.p20_ms)},
              {"p80_ms", exact_double(t.p80_ms)},
              {"mean_ms", exact_double(t.mean_ms)},
              {"cv", exact_double(t.cv)},
              {"warmup_ms", exact_double(t.warmup_ms)},
              {"l2_flushed", t.l2_flushed},
              {"steady_ms", t.steady_ms ? json(exact_double(*t.steady_ms)) : json(nullptr)},
              {"raced_above_ms", t.raced_above_ms ? json(exact_double(*t.raced_above_ms)) : json(nullptr)}};
}

Status timing_from_json(const json& j, const std::string& what, TimingStats* t) {
  FieldReader g(j, what);
  g.get("samples", t->samples);
  g.get("median_ms", t->median_ms);
  g.get("min_ms", t->min_ms);
  g.get("p20_ms", t->p20_ms);
  g.get("p80_ms", t->p80_ms);
  g.get("mean_ms", t->mean_ms);
  g.get("cv", t->cv);
  g.get("warmup_ms", t->warmup_ms);
  g.get("l2_flushed", t->l2_flushed);
  if (j.contains("steady_ms") && j["steady_ms"].is_number()) t->steady_ms = j["steady_ms"].get<double>();
  if (j.contains("raced_above_ms") && j["raced_above_ms"].is_number())
    t->raced_above_ms = j["raced_above_ms"].get<double>();
  return g.status();
}

json telemetry_to_json(const TelemetrySummary& t) {
  json j{{"readings", t.readings},
         {"throttle_reasons", throttle_reason_names(t.throttle_reasons)},
         {"throttled_readings", t.throttled_readings}};
  auto put = [&](const char* key, const std::optional<double>& v) {
    if (v) j[key] = exact_double(*v);
  };
  put("sm_clock_mhz", t.sm_clock_mhz);
  put("mem_clock_mhz", t.mem_clock_mhz);
  put("power_w", t.power_w);
  put("max_temperature_c", t.max_temperature_c);
  put("joules_per_launch", t.joules_per_launch);
  return j;
}

Status telemetry_from_json(const json& j, const std::string& what, TelemetrySummary* t) {
  FieldReader g(j, what);
  g.get("readings", t->readings);
  g.get("throttled_readings", t->throttled_readings);
  std::string reasons;
  g.get("throttle_reasons", reasons);
  if (g.status().ok()) {
    auto r = parse_throttle_reason_names(reasons);
    if (!r.ok())
      g.fail("throttle_reasons: " + r.status().message());
    else
      t->throttle_reasons = *r;
  }
  auto opt = [&](const char* key, std::optional<double>& out) {
    if (!j.contains(key)) return;
    double v = 0;
    g.get(key, v);
    out = v;
  };
  opt("sm_clock_mhz", t->sm_clock_mhz);
  opt("mem_clock_mhz", t->mem_clock_mhz);
  opt("power_w", t->power_w);
  opt("max_temperature_c", t->max_temperature_c);
  opt("joules_per_launch", t->joules_per_launch);
  return g.status();
}

// The one codec: the journal, bench-best's output and the worker wire all write this form.
void to_json(nlohmann::json& j, const Evaluation& e) {
  const KernelResources& r = e.resources;
  const AccuracyStats& a = e.accuracy;
  j = json{{"outcome", outcome_name(e.outcome)},
           {"message", e.message},
           {"compile_log", e.compile_log},
           {"compile_ms", exact_double(e.compile_ms)},
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
             {"max_abs_error", exact_double(a.max_abs_error)},
             {"rel_error_norm", exact_double(a.rel_error_norm)},
             {"worst_tolerance_ratio", exact_double(a.worst_tolerance_ratio)},
             {"non_finite", a.non_finite},
             {"over_tolerance", a.over_tolerance},
             {"norm_tolerance", exact_double(a.norm_tolerance)}}},
           {"timing", timing_to_json(e.timing)},
           {"tflops", exact_double(e.tflops)},
           {"gbps", exact_double(e.gbps)},
           {"roofline_bound_tflops", exact_double(e.roofline_bound_tflops)},
           {"roofline_pct", exact_double(e.roofline_pct)}};
  // Only where there is some: older readers and replayed evaluations stay as they were.
  if (e.telemetry) j["telemetry"] = telemetry_to_json(*e.telemetry);
  if (!e.telemetry_note.empty()) j["telemetry_note"] = e.telemetry_note;
  if (!e.code_hash.empty()) j["code_hash"] = e.code_hash;
}

Result<Evaluation> evaluation_from_json(const json& j) {
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
  f.get("code_hash", e.code_hash);
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
  if (const json* t = f.object("timing")) f.merge(timing_from_json(*t, "evaluation.timing", &e.timing));
  f.get("tflops", e.tflops);
  f.get("gbps", e.gbps);
  f.get("roofline_bound_tflops", e.roofline_bound_tflops);
  f.get("roofline_pct", e.roofline_pct);
  if (const json* t = f.object("telemetry")) {
    TelemetrySummary summary;
    f.merge(telemetry_from_json(*t, "evaluation.telemetry", &summary));
    e.telemetry = summary;
  }
  f.get("telemetry_note", e.telemetry_note);
  if (!f.status().ok()) return f.status();
  return e;
}

}  // namespace tilesmith
