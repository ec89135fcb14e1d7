#include "tuner/records/best_entry.h"

#include "base/format.h"

namespace tilesmith {
using nlohmann::json;

json metrics_from_row(const HistoryRow& r) {
  json m = json::object();
  auto put = [&](const char* name, const auto& v) {
    if (v) m[name] = *v;
  };
  put("median_ms", r.median_ms);
  put("min_ms", r.min_ms);
  put("p20_ms", r.p20_ms);
  put("p80_ms", r.p80_ms);
  put("cv", r.cv);
  put("samples", r.samples);
  put("tflops", r.tflops);
  put("gbps", r.gbps);
  put("roofline_pct", r.roofline_pct);
  put("max_abs_error", r.max_abs_error);
  put("rel_error_norm", r.rel_error_norm);
  put("registers", r.registers);
  put("joules_per_launch", r.joules_per_launch);
  return m;
}

BestEntry make_best_entry(const BestEntryContext& ctx, const KernelTemplate& tmpl, const HistoryRow& row,
                          const Evaluation* retimed) {
  BestEntry e;
  const DeviceFacts& d = ctx.device;
  e.device_fingerprint = d.fingerprint();
  to_json(e.device, d);
  e.template_name = tmpl.name();
  e.template_hash = tmpl.source_hash();
  e.problem = ctx.problem;
  e.config = config_from_json_text(row.config).value_or(Config{});
  e.objective = ctx.objective;
  if (retimed) {
    e.code_hash = retimed->code_hash;
    e.metrics = metrics_json(*retimed);
    e.metrics["source"] = "retime";
  } else {
    e.metrics = metrics_from_row(row);
    e.metrics["source"] = "search";
  }
  if (row.median_ms) e.metrics["search_median_ms"] = *row.median_ms;
  const double median = e.metrics.value("median_ms", 0.0);
  if (ctx.vendor) {
    e.vendor_name = ctx.vendor_library;
    e.vendor_median_ms = ctx.vendor->timing.median_ms;
    e.vendor_p20_ms = ctx.vendor->timing.p20_ms;
    e.vendor_p80_ms = ctx.vendor->timing.p80_ms;
    e.vendor_cv = ctx.vendor->timing.cv;
    if (ctx.vendor->telemetry) e.vendor_joules = ctx.vendor->telemetry->joules_per_launch;
    if (median > 0) e.vendor_ratio = ctx.vendor->timing.median_ms / median;
  }
  e.provenance = json{{"run_id", ctx.run_id},       {"session", row.session},
                      {"history_row", row.row},     {"generation", row.generation},
                      {"proposer", row.proposer},   {"model", row.model},
                      {"timestamp", row.timestamp}, {"updated", utc_timestamp_now()},
                      {"results_dir", ctx.results_dir}};
  e.environment = json{{"tilesmith_version", TILESMITH_VERSION}, {"backend", d.backend},
                       {"driver", d.driver_version},            {"compiler", d.runtime_version},
                       {"vendor_library", ctx.vendor_library}};
  return e;
}

}  // namespace tilesmith
