#include "tuner/loop/retime_record.h"

#include <algorithm>
#include <cstdio>

namespace tilesmith {
using nlohmann::json;

namespace {
json pair_or_null(const std::optional<analysis::MedianInterval>& m) {
  return m ? json::array({m->lo, m->hi}) : json(nullptr);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string interval_text(const std::optional<analysis::MedianInterval>& m, const char* f) {
  return m ? " [" + fmt(f, m->lo) + ", " + fmt(f, m->hi) + "]" : std::string();
}

const RetimeResult* winner_of(const RetimeReport& report) {
  for (const auto& r : report.finalists)
    if (r.winner) return &r;
  return nullptr;
}

// What a ratio of the objective compares, for sentences: "time", "energy per launch".
std::string compared(Objective o) { return o == Objective::kTime ? "time" : objective_description(o); }

// The objective's own median and interval, where it is not the time (which is written anyway).
void put_value(json& j, const Standing& s, Objective o) {
  if (o == Objective::kTime) return;
  j["median_value"] = s.median_value;
  j["interval_value"] = pair_or_null(s.value_interval);
}
}  // namespace

json retime_finalist_json(const RetimeResult& r, Objective objective) {
  json f{{"config_hash", r.row.config_hash},
         {"history_row", r.row.row},
         {"search_median_ms", r.row.median_ms.value_or(0)},
         {"outcome", outcome_name(r.retimed.outcome)},
         {"winner", r.winner}};
  if (r.retimed.ok()) f["retime_median_ms"] = r.retimed.timing.median_ms;
  if (!r.standing) return f;
  const Standing& s = *r.standing;
  json rounds = json::array();
  for (const auto& x : r.rounds) rounds.push_back(x.ms);
  f["rounds_ms"] = rounds;
  f["median_ms"] = s.median_ms;
  f["interval_ms"] = pair_or_null(s.interval);
  f["spread"] = s.spread;
  f["ratio_to_fastest"] = s.ratio_median;
  f["ratio_interval"] = pair_or_null(s.ratio);
  f["tied"] = s.tied;
  if (s.median_joules) f["joules"] = *s.median_joules;
  put_value(f, s, objective);
  return f;
}

json vendor_ratio_json(const VendorRatio& r) {
  return json{{"ratio", r.median},
              {"ratio_interval", pair_or_null(r.interval)},
              {"rounds", r.rounds},
              {"median_ms", r.vendor_median_ms}};
}

json certification_json(const RetimeReport& report, const CertifyOptions& options) {
  if (!report.certification) return nullptr;
  const Certification& c = *report.certification;
  const Standing& w = c.standings[c.winner];
  json j{{"verdict", verdict_name(c.verdict)},
         {"objective", objective_name(c.objective)},
         {"rounds", c.rounds},
         {"max_rounds", options.max_rounds},
         {"confidence", options.confidence},
         {"median_ms", w.median_ms},
         {"interval_ms", pair_or_null(w.interval)},
         {"interval_coverage", w.interval ? json(w.interval->coverage) : json(nullptr)},
         {"processes", report.processes}};
  if (c.standings.size() > 1) j["test_confidence"] = c.test_level;
  if (c.objective != Objective::kTime) {
    put_value(j, w, c.objective);
    j["unit"] = objective_unit(c.objective);
  }
  if (w.median_joules) j["joules_per_launch"] = *w.median_joules;
  // Where one more measurement of the winner should fall: the range of its n rounds holds
  // a new, exchangeable one with probability (n - 1) / (n + 1), whatever the distribution.
  // (The interval of the median is narrower by design: it is about the median, not about
  // the next run; bench-best compares today's median with both.)
  const RetimeResult& winner = report.finalists[report.contestants[c.winner]];
  if (winner.rounds.size() >= 2) {
    double lo = winner.rounds.front().ms, hi = lo;
    for (const auto& r : winner.rounds) lo = std::min(lo, r.ms), hi = std::max(hi, r.ms);
    const double n = double(winner.rounds.size());
    j["range_ms"] = json::array({lo, hi});
    j["range_coverage"] = (n - 1) / (n + 1);
  }
  if (c.verdict == Verdict::kTie) {
    j["tie_rule"] = c.tie_rule;
    json tied = json::array();
    for (std::size_t k = 0; k < c.standings.size(); ++k)
      if (k != c.winner && c.standings[k].tied)
        tied.push_back(report.finalists[report.contestants[k]].row.config_hash);
    j["tied_with"] = tied;
  }
  return j;
}

std::string certification_line(const RetimeReport& report) {
  if (!report.certification) return "no verdict: no finalist passed every round";
  const Certification& c = *report.certification;
  const Standing& w = c.standings[c.winner];
  const std::string rounds = std::to_string(c.rounds) + " round" + (c.rounds == 1 ? "" : "s");
  std::string own = fmt("%.4f ms", w.median_ms) + interval_text(w.interval, "%.4f");
  if (w.interval) own += " (" + fmt("%.0f%%", w.interval->coverage * 100) + ")";
  if (c.objective != Objective::kTime) {
    // The objective first: it is what was certified; the time is what bench-best checks.
    std::string value = fmt("%.4g ", w.median_value) + objective_unit(c.objective) +
                        interval_text(w.value_interval, "%.4g");
    own = value + " at " + own;
  }
  const RetimeResult* winner = winner_of(report);
  const std::string row = winner ? "row " + std::to_string(winner->row.row) + ", " : std::string();
  switch (c.verdict) {
    case Verdict::kCertified: {
      // The closest of the others: the runner-up.
      const Standing* runner = nullptr;
      for (std::size_t k = 0; k < c.standings.size(); ++k)
        if (k != c.winner && (!runner || c.standings[k].ratio_median < runner->ratio_median))
          runner = &c.standings[k];
      return "certified after " + rounds + ": " + row + own + ", " +
             fmt("%.3fx", runner->ratio_median) + " the runner-up's " + compared(c.objective) +
             interval_text(runner->ratio, "%.3f") + " at " + fmt("%.2f%%", c.test_level * 100);
    }
    case Verdict::kTie: {
      int others = 0;
      for (std::size_t k = 0; k < c.standings.size(); ++k)
        others += k != c.winner && c.standings[k].tied ? 1 : 0;
      return "tie after " + rounds + " with " + std::to_string(others) + " other finalist" +
             (others == 1 ? "" : "s") + " (not separated at " + fmt("%.2f%%", c.test_level * 100) +
             "), broken by " + c.tie_rule + ": " + row + own;
    }
    case Verdict::kSingle:
      return "one finalist, " + rounds + ": " + row + own;
    case Verdict::kTooFewRounds:
      return "not certified: " + rounds + " allow no interval at " +
             fmt("%.2f%%", c.test_level * 100) +
             " (raise --retime-rounds); the fastest median stands: " + row + own;
    case Verdict::kUndecided:
      break;
  }
  return "undecided after " + rounds;
}

}  // namespace tilesmith
