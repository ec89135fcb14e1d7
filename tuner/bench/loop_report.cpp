#include "tuner/bench/loop_report.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace tilesmith::bench {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string count_or_miss(const std::optional<int>& v) { return v ? std::to_string(*v) : "miss"; }

}  // namespace

std::string format_loop_details(const std::string& proposer, const std::vector<LoopRunResult>& runs, int first_seed) {
  std::string out = "| " + proposer +
                    " seed | to 5% | to 1% | best/opt | evaluated | not ok | rejected | dropped as known | "
                    "last improvement at | what found the best | evaluations by reason |\n"
                    "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const LoopRunResult& r = runs[i];
    int not_ok = 0, last_improvement = 0;
    double best = 0;
    std::string best_by;
    std::map<std::string, int> kinds;
    for (size_t k = 0; k < r.rows.size(); ++k) {
      const auto& row = r.rows[k];
      ++kinds[row.rationale.empty() ? row.proposer : row.rationale];
      if (!row.ok) {
        ++not_ok;
        continue;
      }
      if (row.recorded_ms > 0 && (best == 0 || row.recorded_ms < best)) {
        best = row.recorded_ms;
        best_by = row.rationale;
        last_improvement = static_cast<int>(k) + 1;
      }
    }
    std::string kind_text;
    for (const auto& [k, n] : kinds) kind_text += (kind_text.empty() ? "" : "; ") + k + " " + std::to_string(n);
    out += "| " + std::to_string(first_seed + static_cast<int>(i)) + " | " +
           count_or_miss(r.evaluations_to_target.size() > 0 ? r.evaluations_to_target[0] : std::nullopt) + " | " +
           count_or_miss(r.evaluations_to_target.size() > 1 ? r.evaluations_to_target[1] : std::nullopt) + " | " +
           fmt("%.3f", r.best_over_optimum) + " | " + std::to_string(r.evaluations) + " | " + std::to_string(not_ok) +
           " | " + std::to_string(r.proposal_rows) + " | " + std::to_string(r.dropped_known) + " | " +
           std::to_string(last_improvement) + " | " + best_by + " | " + kind_text + " |\n";
  }
  return out;
}

std::string format_calibration(const std::string& proposer, const std::vector<LoopRunResult>& runs, double margin) {
  struct Bin {
    double lo, hi;
    int n = 0, right = 0;
    double sum_p = 0;
  };
  std::vector<Bin> bins = {{0, 0.1}, {0.1, 0.5}, {0.5, 0.8}, {0.8, 0.9}, {0.9, 0.95}, {0.95, 0.99}, {0.99, 1.0001}};
  for (const auto& r : runs)
    for (const auto& g : r.generation_log) {
      if (!g.p_converged) continue;
      const bool truth = g.best_before_over_optimum <= 1 + margin + 1e-12;
      for (auto& b : bins)
        if (*g.p_converged >= b.lo && *g.p_converged < b.hi) {
          ++b.n;
          b.right += truth;
          b.sum_p += *g.p_converged;
        }
    }
  std::string m = fmt("%.3g%%", margin * 100);
  std::string out = "| " + proposer + ": estimate P(within " + m +
                    ") | generations | mean estimate | truly within " + m + " |\n|---|---|---|---|\n";
  for (const auto& b : bins) {
    if (!b.n) continue;
    out += "| " + fmt("%.2f", b.lo) + "-" + fmt("%.2f", std::min(1.0, b.hi)) + " | " + std::to_string(b.n) + " | " +
           fmt("%.3f", b.sum_p / b.n) + " | " + fmt("%.3f", double(b.right) / b.n) + " |\n";
  }
  for (double level : {0.9, 0.95}) {
    int reached = 0, right = 0;
    std::vector<double> at;
    for (const auto& r : runs)
      for (const auto& g : r.generation_log)
        if (g.p_converged && *g.p_converged >= level) {
          ++reached;
          right += g.best_before_over_optimum <= 1 + margin + 1e-12;
          at.push_back(static_cast<double>(g.evaluated_before));
          break;
        }
    std::sort(at.begin(), at.end());
    out += "\nfirst estimate >= " + fmt("%.2f", level) + ": in " + std::to_string(reached) + " of " +
           std::to_string(runs.size()) + " runs, right (truly within " + m + ") in " + std::to_string(right) +
           (at.empty() ? std::string() : ", median at " + fmt("%.0f", at[at.size() / 2]) + " evaluations") + "\n";
  }
  return out;
}

}  // namespace tilesmith::bench
