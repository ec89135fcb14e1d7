#include "cli/bench_best_output.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <set>

#include "tuner/records/history_report.h"

namespace tilesmith::cli {
namespace fs = std::filesystem;
using nlohmann::json;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string entry_tag(std::size_t index) {
  // Appended piece by piece: "[" + std::to_string(..) trips GCC 12's -Wrestrict false positive
  // (its PR 105651) where it is inlined.
  std::string tag = "[";
  tag += std::to_string(index + 1);
  tag += ']';
  return tag;
}

std::optional<double> metric(const json& m, const char* name) {
  if (m.contains(name) && m[name].is_number()) return m[name].get<double>();
  return std::nullopt;
}

// Which of ours and the vendor ran faster than the floor (then it is no floor).
std::vector<std::string> floor_beaten_by(const std::optional<ReadFloor>& floor, const std::optional<Evaluation>& ours,
                                         const std::optional<Evaluation>& vendor) {
  std::vector<std::string> who;
  if (!floor || floor->timing.median_ms <= 0) return who;
  if (ours && ours->ok() && ours->timing.median_ms < floor->timing.median_ms) who.push_back("ours");
  if (vendor && vendor->ok() && vendor->timing.median_ms < floor->timing.median_ms) who.push_back("vendor");
  return who;
}

std::string floor_line(const std::optional<ReadFloor>& floor, const std::string& note,
                       const std::optional<Evaluation>& ours, const std::optional<Evaluation>& vendor) {
  if (!floor) return "read floor: " + note;
  std::string line = "read floor " + fmt("%.4f", floor->timing.median_ms) + " ms to read " +
                     fmt("%.1f", double(floor->bytes.total()) / 1e6) + " MB once (" + fmt("%.0f", floor->gbps) +
                     " GB/s, " + floor->variant + ")";
  if (ours && ours->ok())
    line += "; ours at " + fmt("%.1f%%", percent_of_floor(floor->timing.median_ms, ours->timing.median_ms)) + " of it";
  if (vendor && vendor->ok())
    line += ", vendor at " + fmt("%.1f%%", percent_of_floor(floor->timing.median_ms, vendor->timing.median_ms));
  for (const auto& who : floor_beaten_by(floor, ours, vendor))
    line += std::string("\n    NOTE: ") + (who == "ours" ? "our kernel" : "the vendor's GEMM") +
            " ran faster than this read floor, so the floor is not the fastest read (the sweep missed a faster "
            "way); percentages above 100 say so";
  return line;
}

void print_table(const DeviceFacts& dev, double bandwidth, const GemmProblem& p, const std::vector<Row>& rows,
                 const std::optional<double>& ratio) {
  const std::string peak_name = p.a_type == DType::kF32 ? "FP32" : std::string(dtype_name(p.a_type));
  if (dev.multiprocessors > 0 && bandwidth > 0)
    std::printf("device   %s (%s, %d SMs, %s peak %.1f TFLOP/s, measured copy bandwidth %.2f TB/s)\n",
                dev.name.c_str(), dev.arch.c_str(), dev.multiprocessors, peak_name.c_str(),
                dev.peak_flops(p.a_type) / 1e12, bandwidth / 1e12);
  else if (dev.multiprocessors > 0)  // no bandwidth was measured
    std::printf("device   %s (%s, %d SMs, %s peak %.1f TFLOP/s)\n", dev.name.c_str(), dev.arch.c_str(),
                dev.multiprocessors, peak_name.c_str(), dev.peak_flops(p.a_type) / 1e12);
  else  // a replayed recording: only its name is known
    std::printf("device   %s (%s) [%s]\n", dev.name.c_str(), dev.arch.c_str(), dev.backend.c_str());
  std::printf("problem  %s  (%.3g GFLOP, %.1f MB minimum traffic)\n\n", p.describe().c_str(), p.flops() / 1e9,
              p.min_bytes() / 1e6);
  std::printf("%-34s %-13s %9s %9s %9s %9s %6s %5s %8s %8s %7s %10s %10s\n", "kernel", "outcome", "median_ms", "min_ms",
              "p20_ms", "p80_ms", "cv%", "n", "TFLOP/s", "GB/s", "roof%", "max_err", "rel_err");
  for (const auto& r : rows) {
    const auto& e = r.e;
    std::printf("%-34s %-13s %9.4f %9.4f %9.4f %9.4f %6.2f %5d %8.2f %8.1f %7.1f %10.3g %10.3g\n", r.label.c_str(),
                outcome_name(e.outcome), e.timing.median_ms, e.timing.min_ms, e.timing.p20_ms, e.timing.p80_ms,
                e.timing.cv * 100, e.timing.samples, e.tflops, e.gbps, e.roofline_pct, e.accuracy.max_abs_error,
                e.accuracy.rel_error_norm);
    if (!e.message.empty()) std::printf("    %s\n", e.message.c_str());  // a failure, or how the vendor ran
    if (const std::string t = telemetry_line(e, p.flops()); !t.empty())
      std::printf("    device: %s\n", t.c_str());
    else if (!e.telemetry_note.empty())
      std::printf("    %s\n", e.telemetry_note.c_str());
  }
  if (ratio) std::printf("\nratio (ours / vendor throughput): %.3f\n", *ratio);
}

std::string telemetry_line(const Evaluation& e, double flops) {
  if (!e.telemetry || e.telemetry->readings == 0) return {};
  const TelemetrySummary& t = *e.telemetry;
  std::vector<std::string> parts;
  if (t.sm_clock_mhz) parts.push_back(fmt("SM %.0f MHz", *t.sm_clock_mhz));
  if (t.mem_clock_mhz) parts.push_back(fmt("mem %.0f MHz", *t.mem_clock_mhz));
  if (t.power_w) parts.push_back(fmt("%.1f W", *t.power_w));
  if (t.max_temperature_c) parts.push_back(fmt("max %.0f C", *t.max_temperature_c));
  if (t.joules_per_launch && *t.joules_per_launch > 0)
    parts.push_back(
        fmt("%.4g J/launch", *t.joules_per_launch) +
        (flops > 0 ? " (" + fmt("%.3g", flops / *t.joules_per_launch / 1e12) + " TFLOP/s per W)"
                   : ""));
  if (t.throttled())
    parts.push_back(
        "throttled (" + throttle_reason_names(t.throttle_reasons & throttle::kSlowdown) + ") in " +
        std::to_string(t.throttled_readings) + " of " + std::to_string(t.readings) + " readings");
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

namespace {

// "ratio 1.032 [1.011, 1.047] (95.0%, 8 rounds alternating WHO; medians a / b ms): VERDICT".
std::string ratio_line(const analysis::PairedRatio& p, const std::string& who, const std::string& verdict) {
  std::string line = "ratio " + fmt("%.3f", p.median);
  if (p.interval)
    line += " [" + fmt("%.3f", p.interval->lo) + ", " + fmt("%.3f", p.interval->hi) + "] (" +
            fmt("%.1f%%", p.interval->coverage * 100) + ", ";
  else
    line += " (";
  return line + std::to_string(p.rounds) + " rounds alternating " + who + "; medians " +
         fmt("%.4f", p.ours_median_ms) + " / " + fmt("%.4f", p.vendor_median_ms) + " ms): " + verdict;
}

// PairedRatio::verdict with the two sides named.
std::string named_verdict(const analysis::PairedRatio& p, const std::string& first, const std::string& second) {
  const std::string v = p.verdict();
  if (v == "ours faster") return first + " faster";
  if (v == "vendor faster") return second + " faster";
  return v;
}

}  // namespace

std::string paired_text(const std::optional<analysis::PairedRatio>& p, const std::string& note) {
  if (!p) return note;
  return ratio_line(*p, "ours and the vendor", p->verdict());
}

std::string versus_text(const std::optional<analysis::PairedRatio>& p, const std::string& note,
                        const std::string& first, const std::string& second) {
  if (!p) return note;
  return ratio_line(*p, "them", named_verdict(*p, first, second));
}

nlohmann::json versus_json(const analysis::PairedRatio& p, const std::string& first, const std::string& second) {
  json j{{"rounds", p.rounds},
         {"ratio", p.median},
         {"first_median_ms", p.ours_median_ms},
         {"second_median_ms", p.vendor_median_ms},
         {"verdict", named_verdict(p, first, second)}};
  j["interval"] = p.interval ? json{p.interval->lo, p.interval->hi} : json(nullptr);
  if (p.interval) j["coverage"] = p.interval->coverage;
  return j;
}

nlohmann::json to_json(const analysis::PairedRatio& p) {
  json j{{"rounds", p.rounds},
         {"ratio", p.median},
         {"ours_median_ms", p.ours_median_ms},
         {"vendor_median_ms", p.vendor_median_ms},
         {"verdict", p.verdict()}};
  if (p.interval) {
    j["interval"] = {p.interval->lo, p.interval->hi};
    j["coverage"] = p.interval->coverage;
  } else {
    j["interval"] = nullptr;
  }
  return j;
}

namespace {
// One side of objective_line: "ours 0.5123 ms, 0.4375 J/GEMM, 2.51 TFLOP/s per W".
std::string energy_side(const char* who, const std::optional<Evaluation>& e, double flops) {
  if (!e || !e->ok()) return std::string(who) + " not measured";
  std::string s = std::string(who) + " " + fmt("%.4f ms", e->timing.median_ms);
  const auto j = e->telemetry ? e->telemetry->joules_per_launch : std::nullopt;
  if (!j || !(*j > 0)) return s + ", no energy figure";
  return s + ", " + fmt("%.4g J/GEMM", *j) + ", " + fmt("%.3g TFLOP/s per W", flops / *j / 1e12);
}
}  // namespace

std::string objective_line(const BestEntry& e, const std::optional<Evaluation>& ours,
                           const std::optional<Evaluation>& vendor) {
  if (e.objective == Objective::kTime) return {};
  const double flops = e.problem.flops();
  std::string line = std::string(objective_name(e.objective)) + " (" + objective_description(e.objective) +
                     "): " + energy_side("ours", ours, flops) + "; " + energy_side("vendor", vendor, flops);
  const auto a = ours ? objective_value(e.objective, *ours) : std::nullopt;
  const auto b = vendor ? objective_value(e.objective, *vendor) : std::nullopt;
  if (a && b) line += "; ours " + fmt("%.3fx", *a / *b) + " the vendor's " + objective_description(e.objective);
  return line;
}

namespace {
// A recorded [lo, hi] of the certification ("interval_ms", "range_ms"), when there is one.
std::optional<std::pair<double, double>> recorded_pair(const BestEntry& e, const char* key) {
  if (!e.certification.is_object()) return std::nullopt;
  const json& iv = e.certification.value(key, json());
  if (!iv.is_array() || iv.size() != 2 || !iv[0].is_number() || !iv[1].is_number())
    return std::nullopt;
  return std::make_pair(iv[0].get<double>(), iv[1].get<double>());
}
}  // namespace

std::string certification_text(const BestEntry& e) {
  if (!e.certification.is_object()) return {};
  const json& c = e.certification;
  std::string out = c.value("verdict", std::string("?"));
  if (c.contains("rounds") && c["rounds"].is_number_integer())
    out += " after " + std::to_string(c["rounds"].get<int>()) + " rounds";
  if (auto iv = recorded_pair(e, "interval_ms"))
    out += ", " + fmt("%.0f%%", c.value("interval_coverage", 0.95) * 100) +
           " interval of the median [" + fmt("%.4f", iv->first) + ", " + fmt("%.4f", iv->second) +
           "] ms";
  if (auto r = recorded_pair(e, "range_ms"))
    out += ", rounds [" + fmt("%.4f", r->first) + ", " + fmt("%.4f", r->second) + "] ms (" +
           fmt("%.0f%%", c.value("range_coverage", 0.0) * 100) + " of new runs fall there)";
  return out;
}

std::optional<bool> within_recorded_interval(const BestEntry& e, double median_ms) {
  auto iv = recorded_pair(e, "interval_ms");
  if (!iv) return std::nullopt;
  return median_ms >= iv->first && median_ms <= iv->second;
}

std::optional<bool> within_recorded_range(const BestEntry& e, double median_ms) {
  auto r = recorded_pair(e, "range_ms");
  if (!r) return std::nullopt;
  return median_ms >= r->first && median_ms <= r->second;
}

namespace {
// Percent of the device's dense peak for the problem's input type; nullopt when unknown.
std::optional<double> percent_of_peak(const DeviceFacts& device, const GemmProblem& p, const Evaluation& e) {
  const double peak = device.peak_flops(p.a_type);
  if (!(peak > 0) || !e.ok()) return std::nullopt;
  return 100.0 * e.tflops * 1e12 / peak;
}

json maybe(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
}  // namespace

std::string contest_text(const ProblemContest& c) {
  const Certification& cert = c.certification;
  auto label = [&](std::size_t k) { return entry_tag(c.entries[k]); };
  const std::string rounds = " after " + std::to_string(cert.rounds) + " rounds";
  std::string out = c.problem + ": ";
  if (cert.verdict == Verdict::kCertified)
    out += label(cert.winner) + " certified faster than the others" + rounds;
  else if (cert.verdict == Verdict::kTie)
    out += "not told apart" + rounds + "; " + label(cert.winner) + " named by the tie rule (" + cert.tie_rule + ")";
  else
    out += std::string(verdict_name(cert.verdict)) + rounds + "; the fastest median " + label(cert.fastest);
  for (std::size_t k = 0; k < cert.standings.size(); ++k) {
    if (k == cert.fastest) continue;
    const Standing& st = cert.standings[k];
    out += "; " + label(k) + "/" + label(cert.fastest) + " " + fmt("%.3f", st.ratio_median);
    if (st.ratio) out += " [" + fmt("%.3f", st.ratio->lo) + ", " + fmt("%.3f", st.ratio->hi) + "]";
    out += st.tied ? " (tied)" : " (slower)";
  }
  return out;
}

nlohmann::json to_json(const ProblemContest& c) {
  const Certification& cert = c.certification;
  json standings = json::array();
  for (std::size_t k = 0; k < cert.standings.size(); ++k) {
    const Standing& st = cert.standings[k];
    standings.push_back({{"entry", c.entries[k] + 1},
                         {"median_ms", st.median_ms},
                         {"ratio_to_fastest", st.ratio_median},
                         {"ratio_interval", st.ratio ? json::array({st.ratio->lo, st.ratio->hi}) : json(nullptr)},
                         {"tied", st.tied}});
  }
  json j{{"problem", c.problem},
         {"verdict", verdict_name(cert.verdict)},
         {"rounds", cert.rounds},
         {"fastest", c.entries[cert.fastest] + 1},
         {"winner", c.entries[cert.winner] + 1},
         {"test_confidence", cert.test_level},
         {"standings", standings}};
  if (cert.verdict == Verdict::kTie) j["tie_rule"] = cert.tie_rule;
  return j;
}

void print_json(const Sources& src, const OpenedEvaluator& opened, const DeviceFacts& device, const Selection& sel,
                const std::vector<EntryResult>& results, const std::vector<ProblemContest>& contests, int code) {
  const std::vector<const BestEntry*>& other_device = sel.other_device;
  const double bandwidth = opened.measured_bandwidth();
  json files = json::array();
  for (const auto& f : src.files) files.push_back(f.string());
  json out{{"best_config", src.files.front().string()},
           {"best_configs", files},
           {"not_tuned", src.missing},
           {"entries", json::array()},
           {"other_devices", other_device.size()},
           {"slower_entries_left_out", sel.slower_left_out},
           {"measured_bandwidth_gbps", bandwidth > 0 ? json(bandwidth / 1e9) : json(nullptr)}};
  to_json(out["device"], device);
  for (const auto& r : results) {
    const GemmProblem& p = r.entry->problem;
    const double peak = device.peak_flops(p.a_type);
    json j{{"template", r.entry->template_name},
           {"problem", p.describe()},
           {"problem_json", p},
           {"best_config", r.file.string()},
           {"config", config_to_json(r.entry->config)},
           {"status", r.status},
           {"notes", r.notes},
           {"objective", objective_name(r.entry->objective)},
           {"recorded", r.entry->metrics},
           {"drift", r.drift ? json(*r.drift) : json(nullptr)},
           {"peak_tflops", peak > 0 ? json(peak / 1e12) : json(nullptr)}};
    if (r.update.changed()) j["config_run"] = config_to_json(r.update.config);
    // The re-timing's verdict and interval as recorded (null for an entry without one),
    // and whether today's median lies in that interval.
    j["certification"] =
        r.entry->certification.is_object() ? r.entry->certification : json(nullptr);
    if (r.now) {
      to_json(j["now"], *r.now);
      j["percent_of_peak"] = maybe(percent_of_peak(device, p, *r.now));
      const auto in =
          r.now->ok() ? within_recorded_interval(*r.entry, r.now->timing.median_ms) : std::nullopt;
      j["within_recorded_interval"] = in ? json(*in) : json(nullptr);
      const auto in_range =
          r.now->ok() ? within_recorded_range(*r.entry, r.now->timing.median_ms) : std::nullopt;
      j["within_recorded_range"] = in_range ? json(*in_range) : json(nullptr);
    }
    // The objective's figure today, ours and the vendor's (null where not measured).
    j["objective_value"] = maybe(r.now ? objective_value(r.entry->objective, *r.now) : std::nullopt);
    j["vendor_objective_value"] = maybe(r.vendor ? objective_value(r.entry->objective, *r.vendor) : std::nullopt);
    if (r.vendor) {
      to_json(j["vendor"], *r.vendor);
      j["vendor_percent_of_peak"] = maybe(percent_of_peak(device, p, *r.vendor));
    } else {
      j["vendor_unavailable"] = r.vendor_note;
    }
    if (r.floor) {
      to_json(j["read_floor"], *r.floor);
      const double f = r.floor->timing.median_ms;
      j["percent_of_floor"] = r.now && r.now->ok() ? json(percent_of_floor(f, r.now->timing.median_ms)) : json(nullptr);
      j["vendor_percent_of_floor"] =
          r.vendor && r.vendor->ok() ? json(percent_of_floor(f, r.vendor->timing.median_ms)) : json(nullptr);
    } else {
      j["read_floor_unavailable"] = r.floor_note;
    }
    j["floor_beaten_by"] = floor_beaten_by(r.floor, r.now, r.vendor);
    j["paired"] = r.paired ? to_json(*r.paired) : json(nullptr);
    j["paired_steady"] = r.paired_steady ? to_json(*r.paired_steady) : json(nullptr);
    if (!r.paired) j["paired_unavailable"] = r.paired_note;
    out["entries"].push_back(j);
  }
  out["contests"] = json::array();
  for (const auto& c : contests) out["contests"].push_back(to_json(c));
  out["exit_code"] = code;
  std::cout << out.dump(2) << "\n";
}

void print_text(const Sources& src, Evaluator& ev, const DeviceFacts& device, const Selection& sel,
                const std::vector<EntryResult>& results, const std::vector<ProblemContest>& contests,
                const BenchBestOptions& o, bool drift) {
  const std::vector<const BestEntry*>& other_device = sel.other_device;
  std::printf("device   %s (%s) [%s]\n", device.name.c_str(), device.arch.c_str(), device.backend.c_str());
  std::printf("entries  %zu for this device in %s", results.size(), src.label().c_str());
  if (!other_device.empty()) std::printf(" (%zu for other devices or filters left out)", other_device.size());
  if (sel.slower_left_out) std::printf(" (%zu slower ones left out: --fastest-only)", sel.slower_left_out);
  for (const auto& m : src.missing) std::printf("\nnot tuned %s", m.c_str());
  std::printf("\ndrift tolerance %.1f%%\n", o.drift_tolerance_pct);
  std::vector<std::vector<std::string>> table;
  std::set<std::string> telemetry_notes;  // each said once, not once per entry
  int i = 0;
  for (const auto& r : results) {
    const BestEntry& e = *r.entry;
    ++i;
    std::printf("\n[%d] %s %s\n    config  %s\n", i, e.template_name.c_str(), e.problem.describe().c_str(),
                config_to_json_text(e.config).c_str());
    if (src.files.size() > 1) std::printf("    from    %s\n", r.file.string().c_str());
    if (r.update.changed()) std::printf("    run as  %s\n", config_to_json_text(r.update.config).c_str());
    const auto rec = metric(e.metrics, "median_ms"), rp20 = metric(e.metrics, "p20_ms"), rp80 = metric(e.metrics, "p80_ms"),
               rtf = metric(e.metrics, "tflops");
    std::printf("    recorded  %s median %s ms [p20 %s, p80 %s], %s TFLOP/s%s (run %s, row %s, %s)\n",
                e.metrics.value("source", std::string("")).c_str(), rec ? fmt("%.4f", *rec).c_str() : "?",
                rp20 ? fmt("%.4f", *rp20).c_str() : "?", rp80 ? fmt("%.4f", *rp80).c_str() : "?",
                rtf ? fmt("%.2f", *rtf).c_str() : "?",
                e.vendor_ratio ? (", " + fmt("%.3fx", *e.vendor_ratio) + " vendor").c_str() : "",
                e.provenance.value("run_id", std::string("?")).c_str(),
                e.provenance.contains("history_row") ? e.provenance["history_row"].dump().c_str() : "?",
                e.provenance.value("timestamp", std::string("?")).c_str());
    if (e.objective != Objective::kTime)
      std::printf("    tuned for %s (%s)%s\n", objective_name(e.objective), objective_description(e.objective),
                  metric(e.metrics, "joules_per_launch")
                      ? (", recorded " + fmt("%.4g J/GEMM", *metric(e.metrics, "joules_per_launch"))).c_str()
                      : "");
    if (const std::string c = certification_text(e); !c.empty())
      std::printf("    re-timed  %s\n", c.c_str());
    if (r.now) {
      const Evaluation& n = *r.now;
      if (n.ok()) {
        std::string spread;
        if (rp20 && rp80)
          spread = n.timing.median_ms >= *rp20 && n.timing.median_ms <= *rp80 ? ", within the recorded p20-p80"
                                                                              : ", outside the recorded p20-p80";
        if (auto in = within_recorded_interval(e, n.timing.median_ms))
          spread += *in ? ", within the recorded interval" : ", outside the recorded interval";
        if (auto in = within_recorded_range(e, n.timing.median_ms))
          spread += *in ? ", within the rounds' range" : ", outside the rounds' range";
        const std::string accuracy = n.accuracy.checked ? "max error " + fmt("%.3g", n.accuracy.max_abs_error) +
                                                              ", rel " + fmt("%.3g", n.accuracy.rel_error_norm)
                                                        : std::string("accuracy not checked");
        std::printf("    now       median %.4f ms [p20 %.4f, p80 %.4f], %.2f TFLOP/s, %s; drift %s%s\n",
                    n.timing.median_ms, n.timing.p20_ms, n.timing.p80_ms, n.tflops, accuracy.c_str(),
                    r.drift ? fmt("%+.1f%%", *r.drift * 100).c_str() : "?", spread.c_str());
      } else {
        std::printf("    now       %s: %s\n", outcome_name(n.outcome), n.message.c_str());
      }
    }
    if (r.vendor)
      std::printf("    vendor    %s: median %.4f ms, %.2f TFLOP/s%s\n", ev.vendor_name().c_str(), r.vendor->timing.median_ms,
                  r.vendor->tflops,
                  r.now && r.now->ok() ? (", ratio now " + fmt("%.3f", r.vendor->timing.median_ms / r.now->timing.median_ms)).c_str() : "");
    else if (r.now)
      std::printf("    vendor    %s\n", r.vendor_note.c_str());
    if (r.now && r.vendor) std::printf("    paired    %s\n", paired_text(r.paired, r.paired_note).c_str());
    if (r.paired_steady)
      std::printf("    steady    back to back, %s\n", paired_text(r.paired_steady, "").c_str());
    // What the GPU did meanwhile: clocks, power, energy, throttling (ours, then the vendor's).
    const double flops = e.problem.flops();
    if (r.now && !telemetry_line(*r.now, flops).empty())
      std::printf("    device    ours: %s\n", telemetry_line(*r.now, flops).c_str());
    if (r.vendor && !telemetry_line(*r.vendor, flops).empty())
      std::printf("    device    vendor: %s\n", telemetry_line(*r.vendor, flops).c_str());
    if (const std::string line = objective_line(e, r.now, r.vendor); !line.empty() && r.now)
      std::printf("    objective %s\n", line.c_str());
    if (r.now && !r.now->telemetry_note.empty() &&
        telemetry_notes.insert(r.now->telemetry_note).second)
      std::printf("    note      %s\n", r.now->telemetry_note.c_str());
    if (r.now) std::printf("    floor     %s\n", floor_line(r.floor, r.floor_note, r.now, r.vendor).c_str());
    for (const auto& note : r.notes) std::printf("    note      %s\n", note.c_str());
    std::printf("    status    %s\n", r.status.c_str());
    const bool now_ok = r.now && r.now->ok();
    table.push_back({std::to_string(i), e.template_name, e.problem.describe(), rec ? fmt("%.4f", *rec) : "",
                     now_ok ? fmt("%.4f", r.now->timing.median_ms) : "",
                     r.drift ? fmt("%+.1f%%", *r.drift * 100) : "",
                     r.vendor ? fmt("%.4f", r.vendor->timing.median_ms) : "",
                     r.vendor && now_ok ? fmt("%.3fx", r.vendor->timing.median_ms / r.now->timing.median_ms) : "",
                     r.paired ? fmt("%.3fx", r.paired->median) : "",
                     r.floor ? fmt("%.4f", r.floor->timing.median_ms) : "",
                     r.floor && now_ok ? fmt("%.1f%%", percent_of_floor(r.floor->timing.median_ms, r.now->timing.median_ms)) +
                                             (floor_beaten_by(r.floor, r.now, r.vendor).empty() ? "" : "!")
                                       : "",
                     r.status});
  }
  std::printf("\n%s", format_table({"#", "template", "problem", "recorded_ms", "now_ms", "drift", "vendor_ms",
                                    "ratio_now", "ratio_paired", "read_floor_ms", "%_of_floor", "status"},
                                   table)
                          .c_str());
  for (const auto& c : contests) std::printf("contest  %s\n", contest_text(c).c_str());
  bool beaten = false;
  for (const auto& r : results) beaten |= !floor_beaten_by(r.floor, r.now, r.vendor).empty();
  if (beaten)
    std::printf("!: a GEMM (ours or the vendor's) ran faster than the read floor measured here: that floor is not the "
                "fastest read\n");
  if (drift && !o.fail_on_drift) std::printf("drift beyond %.1f%% is flagged (exit code unaffected; --fail-on-drift makes it 1)\n", o.drift_tolerance_pct);
}

std::optional<SideCost> side_cost(const std::vector<double>& fused_ms, const std::vector<double>& plain_ms) {
  // paired_ratio gives the median of plain / fused; a cost is its reciprocal less one.
  const auto r = analysis::paired_ratio(fused_ms, plain_ms);
  if (!r || !(r->median > 0)) return std::nullopt;
  SideCost c;
  c.rounds = r->rounds;
  c.fused_ms = r->ours_median_ms, c.plain_ms = r->vendor_median_ms;
  c.pct = (1 / r->median - 1) * 100;
  if (r->interval && r->interval->lo > 0) c.interval_pct = {(1 / r->interval->hi - 1) * 100, (1 / r->interval->lo - 1) * 100};
  return c;
}

namespace {
std::string cost_part(const char* who, const std::optional<SideCost>& c) {
  if (!c) return std::string(who) + " not measured";
  std::string s = std::string(who) + " " + fmt("%+.1f%%", c->pct);
  if (c->interval_pct) s += " [" + fmt("%+.1f", c->interval_pct->first) + ", " + fmt("%+.1f", c->interval_pct->second) + "]";
  return s + " (" + fmt("%.4f", c->plain_ms) + " -> " + fmt("%.4f", c->fused_ms) + " ms)";
}
nlohmann::json to_json(const std::optional<SideCost>& c) {
  if (!c) return nullptr;
  nlohmann::json j{{"rounds", c->rounds}, {"fused_ms", c->fused_ms}, {"plain_ms", c->plain_ms}, {"pct", c->pct}};
  if (c->interval_pct) j["interval_pct"] = {c->interval_pct->first, c->interval_pct->second};
  return j;
}
}  // namespace

nlohmann::json to_json(const EpilogueCost& c) {
  nlohmann::json j{{"ours", to_json(c.ours)}, {"vendor", to_json(c.vendor)}};
  if (!c.note.empty()) j["note"] = c.note;
  return j;
}

std::string epilogue_cost_line(const EpilogueCost& c, const GemmProblem& fused) {
  std::string line = "epilogue " + std::string(epilogue_name(fused.epilogue)) +
                     " over the plain GEMM: " + cost_part("ours", c.ours) + ", " + cost_part("vendor", c.vendor);
  const int rounds = c.ours ? c.ours->rounds : c.vendor ? c.vendor->rounds : 0;
  if (rounds > 0) line += "; medians of " + std::to_string(rounds) + " rounds alternating fused and plain";
  if (!c.note.empty()) line += " (" + c.note + ")";
  return line;
}

}  // namespace tilesmith::cli
