// A problem set's summary: summary.json and the table printed at the end
// (docs/problem-sets.md, "summary.json"). Pure formatting of a ProblemSetReport.

#include <cstdio>

#include "base/format.h"
#include "tuner/loop/problem_set_run.h"

namespace tilesmith {
using nlohmann::json;

namespace {

struct Totals {
  bool complete = true;  // every problem has a vendor time
  double vendor_us = 0, ours_us = 0;
  std::vector<std::string> without_result, without_vendor;
};

// Σ count x vendor_ms against Σ count x ours_ms, a problem without an ok result counted
// at its vendor time (the vendor library is what it would run on).
Totals totals(const ProblemSetReport& r) {
  Totals t;
  for (const auto& p : r.problems) {
    if (!p.ours_ms) t.without_result.push_back(p.name);
    if (!p.vendor_ms) {
      t.without_vendor.push_back(p.name);
      t.complete = false;
      continue;
    }
    const double count = static_cast<double>(p.count);
    t.vendor_us += count * *p.vendor_ms * 1000;
    t.ours_us += count * (p.ours_ms ? *p.ours_ms : *p.vendor_ms) * 1000;
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

}  // namespace

json problem_set_summary_json(const ProblemSetReport& r) {
  json problems = json::array();
  for (const auto& p : r.problems) {
    json problem;
    to_json(problem, p.problem);
    std::optional<double> ratio;
    if (p.ours_ms && p.vendor_ms) ratio = *p.vendor_ms / *p.ours_ms;
    problems.push_back({{"name", p.name},
                        {"folder", p.name},
                        {"shape", p.problem.describe()},
                        {"problem", problem},
                        {"count", p.count},
                        {"evals", p.evals},
                        {"eval_share", r.evals ? double(p.evals) / double(r.evals) : 0.0},
                        {"ours_ms", number_or_null(p.ours_ms)},
                        {"vendor_ms", number_or_null(p.vendor_ms)},
                        {"vendor_ratio", number_or_null(ratio)},
                        {"template", p.template_name},
                        {"stop", p.stop}});
  }
  const Totals t = totals(r);
  json set_totals{{"problems_without_result", t.without_result}, {"problems_without_vendor", t.without_vendor}};
  if (t.complete) {
    set_totals["vendor_us_per_step"] = t.vendor_us;
    set_totals["ours_us_per_step"] = t.ours_us;
    set_totals["speedup"] = t.ours_us > 0 ? json(t.vendor_us / t.ours_us) : json(nullptr);
  } else {
    set_totals["vendor_us_per_step"] = nullptr;
    set_totals["ours_us_per_step"] = nullptr;
    set_totals["speedup"] = nullptr;
  }
  return {{"schema", "tilesmith.problem_set_summary/1"},
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
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-22s %-28s %6s %10s %10s %7s %7s\n", "problem", "shape", "count", "ours ms",
                "vendor ms", "ratio", "evals");
  out += buf;
  for (const auto& p : r.problems) {
    std::string ratio = "-";
    if (p.ours_ms && p.vendor_ms) {
      std::snprintf(buf, sizeof buf, "%.2fx", *p.vendor_ms / *p.ours_ms);
      ratio = buf;
    }
    std::snprintf(buf, sizeof buf, "%-22s %-28s %6lld %10s %10s %7s %4lld %2.0f%%\n", p.name.c_str(),
                  p.problem.describe().c_str(), static_cast<long long>(p.count), ms_text(p.ours_ms).c_str(),
                  ms_text(p.vendor_ms).c_str(), ratio.c_str(), static_cast<long long>(p.evals),
                  r.evals ? 100.0 * double(p.evals) / double(r.evals) : 0.0);
    out += buf;
  }
  const Totals t = totals(r);
  if (!t.complete) {
    out += "no per-step total: no vendor time for " + std::to_string(t.without_vendor.size()) + " problem(s)";
    out += t.without_vendor.size() == r.problems.size() ? " (none was timed)\n" : "\n";
  } else {
    std::snprintf(buf, sizeof buf,
                  "these GEMMs take %.1f us per step with the vendor library, %.1f us with ours: %.2fx %s\n",
                  t.vendor_us, t.ours_us, t.ours_us > 0 ? (t.vendor_us >= t.ours_us ? t.vendor_us / t.ours_us
                                                                                     : t.ours_us / t.vendor_us)
                                                        : 0.0,
                  t.vendor_us >= t.ours_us ? "faster" : "slower");
    out += buf;
  }
  if (!t.without_result.empty()) {
    std::string names;
    for (const auto& n : t.without_result) names += (names.empty() ? "" : ", ") + n;
    out += "no ok result (counted at the vendor's time): " + names + "\n";
  }
  return out;
}

}  // namespace tilesmith
