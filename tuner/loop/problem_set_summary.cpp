// A problem set's summary: summary.json and the table printed at the end
// (docs/problem-sets.md, "summary.json"). Pure formatting of a ProblemSetReport.

#include <cstdio>

#include "base/format.h"
#include "tuner/loop/problem_set_run.h"

namespace tilesmith {
using nlohmann::json;

analysis::VendorComparison against_vendor(const ProblemResult& p) {
  std::optional<analysis::Measurement> ours, vendor;
  if (p.ours_ms) ours = analysis::Measurement{*p.ours_ms, p.ours_spread};
  if (p.vendor_ms) vendor = analysis::Measurement{*p.vendor_ms, p.vendor_spread};
  return analysis::compare_with_vendor(ours, vendor);
}

namespace {

// One problem's figures: ours as tuned, and as dispatched (the rule's pick; the vendor's
// time where there is no ok result, which is what would run).
struct Figures {
  analysis::VendorComparison vs_vendor;
  bool on_vendor = false;                // the vendor library runs it (no result, or the rule)
  std::optional<double> dispatched_ms;   // null only without either time
};

Figures figures(const ProblemResult& p) {
  Figures f;
  f.vs_vendor = against_vendor(p);
  if (!p.ours_ms) {
    f.on_vendor = p.vendor_ms.has_value();
    f.dispatched_ms = p.vendor_ms;
  } else if (f.vs_vendor.runs_tuned()) {
    f.dispatched_ms = p.ours_ms;
  } else {
    f.on_vendor = true;
    f.dispatched_ms = p.vendor_ms;
  }
  return f;
}

struct Totals {
  bool complete = true;  // every problem has a vendor time
  double vendor_us = 0, tuned_us = 0, dispatched_us = 0;
  std::vector<std::string> without_result, without_vendor, on_vendor;
};

// Σ count x vendor_ms against Σ count x ours_ms (as tuned) and Σ count x dispatched_ms.
// A problem without an ok result counts at its vendor time in both (the vendor library is
// what it would run on).
Totals totals(const ProblemSetReport& r) {
  Totals t;
  for (const auto& p : r.problems) {
    const Figures f = figures(p);
    if (!p.ours_ms) t.without_result.push_back(p.name);
    else if (f.on_vendor) t.on_vendor.push_back(p.name);
    if (!p.vendor_ms) {
      t.without_vendor.push_back(p.name);
      t.complete = false;
      continue;
    }
    const double count = static_cast<double>(p.count);
    t.vendor_us += count * *p.vendor_ms * 1000;
    t.tuned_us += count * (p.ours_ms ? *p.ours_ms : *p.vendor_ms) * 1000;
    t.dispatched_us += count * *f.dispatched_ms * 1000;
  }
  return t;
}

json number_or_null(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::string ms_text(const std::optional<double>& v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", *v);
  return buf;
}

// "1.16x faster" / "1.10x slower" for `base` against `ours`.
std::string speed_text(double base, double ours) {
  if (!(ours > 0) || !(base > 0)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2fx %s", base >= ours ? base / ours : ours / base,
                base >= ours ? "faster" : "slower");
  return buf;
}

}  // namespace

json problem_set_summary_json(const ProblemSetReport& r) {
  json problems = json::array();
  for (const auto& p : r.problems) {
    json problem;
    to_json(problem, p.problem);
    std::optional<double> ratio;
    if (p.ours_ms && p.vendor_ms) ratio = *p.vendor_ms / *p.ours_ms;
    const Figures f = figures(p);
    problems.push_back({{"name", p.name},
                        {"folder", p.name},
                        {"shape", p.problem.describe()},
                        {"problem", problem},
                        {"count", p.count},
                        {"evals", p.evals},
                        {"eval_share", r.evals ? double(p.evals) / double(r.evals) : 0.0},
                        {"ours_ms", number_or_null(p.ours_ms)},
                        {"ours_spread", number_or_null(p.ours_spread)},
                        {"vendor_ms", number_or_null(p.vendor_ms)},
                        {"vendor_spread", number_or_null(p.vendor_spread)},
                        {"vendor_ratio", number_or_null(ratio)},
                        {"runs", !f.dispatched_ms ? json(nullptr) : json(f.on_vendor ? "vendor" : "tuned")},
                        {"dispatched_ms", number_or_null(f.dispatched_ms)},
                        {"vs_vendor", p.ours_ms ? f.vs_vendor.describe() : std::string("no ok result")},
                        {"template", p.template_name},
                        {"stop", p.stop}});
  }
  const Totals t = totals(r);
  json set_totals{{"problems_without_result", t.without_result},
                  {"problems_without_vendor", t.without_vendor},
                  {"problems_on_vendor", t.on_vendor}};
  auto put = [&](const char* key, std::optional<double> v) {
    set_totals[key] = number_or_null(t.complete ? v : std::nullopt);
  };
  put("vendor_us_per_step", t.vendor_us);
  put("ours_us_per_step", t.dispatched_us);
  put("tuned_us_per_step", t.tuned_us);
  put("speedup", t.dispatched_us > 0 ? std::optional<double>(t.vendor_us / t.dispatched_us) : std::nullopt);
  put("tuned_speedup", t.tuned_us > 0 ? std::optional<double>(t.vendor_us / t.tuned_us) : std::nullopt);
  return {{"schema", "tilesmith.problem_set_summary/2"},
          {"set", r.name},
          {"source", r.source},
          {"stopped", stop_reason_name(r.reason)},
          {"detail", r.detail},
          {"evals", r.evals},
          {"problems", problems},
          {"totals", set_totals},
          {"time", utc_timestamp_now()}};
}

std::string format_problem_set_summary(const ProblemSetReport& r) {
  std::string out = "problem set " + r.name + ": " + stop_reason_name(r.reason) +
                    (r.detail.empty() ? "" : " (" + r.detail + ")") + "; " + std::to_string(r.evals) +
                    " evaluated\n";
  char buf[320];
  std::snprintf(buf, sizeof buf, "%-22s %-28s %6s %10s %10s %7s %-7s %s\n", "problem", "shape", "count", "ours ms",
                "vendor ms", "ratio", "runs", "evals");
  out += buf;
  for (const auto& p : r.problems) {
    std::string ratio = "-";
    if (p.ours_ms && p.vendor_ms) {
      std::snprintf(buf, sizeof buf, "%.2fx", *p.vendor_ms / *p.ours_ms);
      ratio = buf;
    }
    const Figures f = figures(p);
    const char* runs = !f.dispatched_ms ? "-" : f.on_vendor ? "vendor" : "ours";
    std::snprintf(buf, sizeof buf, "%-22s %-28s %6lld %10s %10s %7s %-7s %4lld %2.0f%%\n", p.name.c_str(),
                  p.problem.describe().c_str(), static_cast<long long>(p.count), ms_text(p.ours_ms).c_str(),
                  ms_text(p.vendor_ms).c_str(), ratio.c_str(), runs, static_cast<long long>(p.evals),
                  r.evals ? 100.0 * double(p.evals) / double(r.evals) : 0.0);
    out += buf;
  }
  const Totals t = totals(r);
  if (!t.complete) {
    out += "no per-step total: no vendor time for " + std::to_string(t.without_vendor.size()) + " problem(s)";
    out += t.without_vendor.size() == r.problems.size() ? " (none was timed)\n" : "\n";
  } else {
    // The headline is what a package of these winners runs: never above the vendor's.
    std::snprintf(buf, sizeof buf,
                  "these GEMMs take %.1f us per step with the vendor library, %.1f us with ours as dispatched: %s "
                  "(ours as tuned: %.1f us, %s)\n",
                  t.vendor_us, t.dispatched_us, speed_text(t.vendor_us, t.dispatched_us).c_str(), t.tuned_us,
                  speed_text(t.vendor_us, t.tuned_us).c_str());
    out += buf;
  }
  if (!t.on_vendor.empty()) {
    std::string names;
    for (const auto& n : t.on_vendor) names += (names.empty() ? "" : ", ") + n;
    out += "dispatched to the vendor library (tuned kernel not faster by more than the noise): " + names + "\n";
  }
  if (!t.without_result.empty()) {
    std::string names;
    for (const auto& n : t.without_result) names += (names.empty() ? "" : ", ") + n;
    out += "no ok result (counted at the vendor's time): " + names + "\n";
  }
  return out;
}

}  // namespace tilesmith
