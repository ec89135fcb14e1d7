#include "tuner/loop/summary.h"

#include <cstdio>
#include <map>
#include <set>

#include "tuner/records/history_report.h"

namespace tilesmith {

namespace {
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
}  // namespace

std::string convergence_line(const LoopReport& report) {
  const std::string margin = fmt("%.3g%%", report.convergence_margin * 100);
  if (!report.converged)
    return "no estimate of how close the best is to the space's best (the proposer cannot tell" +
           std::string(report.converged_at ? "" : " yet") + ")";
  return "P(best found within " + margin + " of the space's best) = " + fmt("%.2f", *report.converged) +
         " (the proposer's estimate after " + std::to_string(report.converged_at) + " evaluations)";
}

std::string format_run_summary(const LoopReport& report, const SummaryContext& ctx) {
  std::string out;
  std::int64_t evaluated_session = 0, evaluated = 0;
  std::map<std::string, std::int64_t> by_device;  // this session's evaluations per device
  std::set<std::string> hosts;
  for (const auto& r : report.rows)
    if (r.evaluated() && r.row > report.rows_at_start && !r.device.empty()) hosts.insert(r.host);
  for (const auto& r : report.rows)
    if (r.evaluated()) {
      ++evaluated;
      if (r.row > report.rows_at_start) {
        ++evaluated_session;
        // With several hosts their devices share labels ("cuda:0" on each): name the host.
        if (!r.device.empty()) ++by_device[hosts.size() > 1 ? r.host + "/" + r.device : r.device];
      }
    }
  out += "== autotune-loop summary ==\n";
  out += "run " + report.run_id + ", session " + std::to_string(report.session) + ": stopped, " +
         stop_reason_name(report.reason) + (report.detail.empty() ? "" : " (" + report.detail + ")") + "\n";
  out += "problem " + ctx.problem.describe() + " on " + ctx.device.name + " [" + ctx.device.backend + ", " +
         ctx.device.arch + "]\n";
  std::string rate;
  if (report.wall_s > 0 && evaluated_session > 0)
    rate = " (" + fmt(evaluated_session * 60.0 / report.wall_s >= 100 ? "%.0f" : "%.3g",
                      evaluated_session * 60.0 / report.wall_s) +
           " candidates/min" +
           (report.devices > 1 ? " on " + std::to_string(report.devices) + " devices" : std::string()) + ")";
  out += "this session: " + std::to_string(evaluated_session) + " evaluated in " + format_duration(report.wall_s) +
         rate + "; whole run: " + std::to_string(evaluated) + " evaluated, " +
         std::to_string(report.rows.size() - static_cast<std::size_t>(evaluated)) + " rejected before evaluation\n";
  if (by_device.size() > 1) {
    std::string parts;
    for (const auto& [device, n] : by_device) parts += (parts.empty() ? "" : ", ") + device + " " + std::to_string(n);
    out += "evaluated per device: " + parts + "\n";
  }
  if (report.wall_s > 0) {
    out += "time: measuring " + fmt("%.0f%%", 100 * report.measure_s / report.wall_s) + " of wall time" +
           (report.devices > 1 ? std::string(" per device") : std::string()) + " (" +
           format_duration(report.measure_s) + "; candidates alone " +
           fmt("%.0f%%", 100 * report.candidate_measure_s / report.wall_s) + "), waiting for compiles " +
           format_duration(report.compile_wait_s) + ", proposing " + format_duration(report.propose_s) +
           (report.raced > 0 ? "; " + std::to_string(report.raced) + " clear loser" + (report.raced == 1 ? "" : "s") +
                                   " raced (sampling stopped early, --race)"
                             : std::string()) +
           "\n";
  }
  for (const auto& line : report.device_summaries) out += "worker " + line + "\n";
  if (report.vendor)
    out += "vendor: " + report.vendor_name + ": " + fmt("%.4f ms", report.vendor->timing.median_ms) + ", " +
           fmt("%.2f TFLOP/s", report.vendor->tflops) +
           (report.vendor->telemetry && report.vendor->telemetry->joules_per_launch
                ? ", " + fmt("%.4g J/launch", *report.vendor->telemetry->joules_per_launch)
                : std::string()) +
           "\n";
  else
    out += "vendor: " + (report.vendor_note.empty() ? std::string("not measured") : report.vendor_note) + "\n";
  out += "convergence: " + convergence_line(report) + "\n";
  if (report.dropped_known)
    out += std::to_string(report.dropped_known) + " proposal(s) dropped as already in the history\n";

  const Objective objective = report.objective;
  const bool by_time = objective == Objective::kTime;
  if (!by_time)
    out += std::string("objective: ") + objective_name(objective) + " (the lowest " + objective_description(objective) +
           " in " + objective_unit(objective) + " wins; each measurement also read the energy counter)\n";
  auto top = top_configs(report.rows, ctx.top, objective);
  out += "\nTop " + std::to_string(top.size()) + " configs (search measurements" +
         (by_time ? std::string() : std::string(", by ") + objective_description(objective)) + "):\n";
  out += top.empty() ? (by_time ? " none passed validation\n"
                                : std::string(" none with its ") + objective_description(objective) + "\n")
                     : format_top_table(top, objective);
  out += "\nOutcomes by proposer (whole run):\n" + format_outcome_table("proposer", outcomes_by_proposer(report.rows));

  if (!report.retimes.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : report.retimes) {
      const Standing* st = r.standing ? &*r.standing : nullptr;
      std::string mark;
      if (r.winner)
        mark = std::string("winner (") + verdict_name(r.verdict) + ")";
      else if (st && st->tied)
        mark = "tied";
      rows.push_back(
          {r.template_name, std::to_string(r.row.row), fmt("%.4f", r.row.median_ms.value_or(0)),
           std::to_string(r.rounds.size()), st ? fmt("%.4f", st->median_ms) : "",
           st && st->interval ? fmt("%.4f", st->interval->lo) + "-" + fmt("%.4f", st->interval->hi)
                              : "",
           st ? fmt("%.3f", st->ratio_median) : "", outcome_name(r.retimed.outcome), mark,
           r.row.config});
    }
    out +=
        "\nRe-timed finalists (interleaved rounds; interval: the median's, 95%; x_fastest: the "
        "paired ratio" +
        (by_time ? std::string() : std::string(" of the ") + objective_description(objective)) + "):\n" +
        format_table({"template", "row", "search_ms", "rounds", "retime_ms", "interval_ms",
                      "x_fastest", "outcome", "", "config"},
                     rows);
  }
  out += "\n";
  if (report.winners.empty()) {
    out += "best_config.json: no entry (no configuration passed validation)\n";
  } else {
    for (const auto& w : report.winners) {
      const double median = w.metrics.value("median_ms", 0.0);
      out += "best -> " + (ctx.results_dir / "best_config.json").string() + ": " + w.template_name +
             " " + config_to_json_text(w.config) + "\n       " + fmt("%.4f ms", median) + ", " +
             fmt("%.2f TFLOP/s", w.metrics.value("tflops", 0.0)) +
             (w.metrics.contains("joules_per_launch") && w.metrics["joules_per_launch"].is_number()
                  ? ", " + fmt("%.4g J/launch", w.metrics["joules_per_launch"].get<double>())
                  : std::string()) +
             " (" +
             w.metrics.value("source", std::string()) +
             (w.certification.is_object() ? ", " + w.certification.value("verdict", std::string())
                                          : std::string()) +
             ")" +
             (w.vendor_ratio ? ", " + fmt("%.3fx", *w.vendor_ratio) + " the vendor's throughput" +
                                   (w.certification.is_object() && w.certification.contains("vendor")
                                        ? std::string(" (measured in the same rounds)")
                                        : std::string())
                             : "") +
             "\n";
    }
  }
  return out;
}

}  // namespace tilesmith
