#include "tuner/loop/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace tilesmith {

std::string format_duration(double seconds) {
  char buf[48];
  if (!(seconds >= 0)) seconds = 0;
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  } else {
    const long long s = static_cast<long long>(seconds);
    if (s < 3600) std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
    else std::snprintf(buf, sizeof buf, "%lldh%02lldm%02llds", s / 3600, (s / 60) % 60, s % 60);
  }
  return buf;
}

namespace {
std::string body(const LoopProgress& p) {
  std::string out = (p.label.empty() ? "" : "[" + p.label + "] ") + "gen " + std::to_string(p.generation) + " | " + std::to_string(p.evaluated) + " evaluated";
  // Outcomes, most frequent first, ok always first.
  std::vector<std::pair<std::string, std::int64_t>> counts(p.outcomes.begin(), p.outcomes.end());
  std::stable_sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
    if ((a.first == "ok") != (b.first == "ok")) return a.first == "ok";
    return a.second > b.second;
  });
  std::string parts;
  for (const auto& [name, n] : counts) parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + name;
  if (!parts.empty()) out += ": " + parts;
  if (p.rejected) out += " (+" + std::to_string(p.rejected) + " rejected)";
  char buf[96];
  if (p.best_tflops) {
    std::snprintf(buf, sizeof buf, " | best %.2f TFLOP/s", *p.best_tflops);
    out += buf;
    if (p.best_ms) {
      std::snprintf(buf, sizeof buf, " %.4g ms", *p.best_ms);
      out += buf;
    }
    if (!p.best_objective.empty()) out += " " + p.best_objective;
    if (p.best_vendor_ratio) {
      std::snprintf(buf, sizeof buf, " (%.2fx vendor)", *p.best_vendor_ratio);
      out += buf;
    }
  } else {
    out += " | no valid config yet";
  }
  if (p.converged) {
    std::snprintf(buf, sizeof buf, " | P(within %.3g%%) %.2f", p.convergence_margin * 100, *p.converged);
    out += buf;
  }
  if (!p.split.empty()) out += " | split " + p.split;
  out += " | " + format_duration(p.elapsed_s);
  if (p.per_minute > 0) {
    std::snprintf(buf, sizeof buf, p.per_minute >= 100 ? ", %.0f/min" : ", %.3g/min", p.per_minute);
    out += buf;
  }
  if (p.elapsed_s > 0) {
    std::snprintf(buf, sizeof buf, ", measuring %.0f%%", 100.0 * p.measure_s / p.elapsed_s);
    out += buf;
  }
  if (!p.workers.empty()) out += " | " + p.workers;
  if (!p.budget_left.empty()) out += " | left: " + p.budget_left;
  return out;
}
}  // namespace

std::string format_status_line(const LoopProgress& p, std::size_t width) {
  std::string s = body(p);
  if (width > 1 && s.size() >= width) s = s.substr(0, width - 2) + "~";
  return s;
}

std::string format_progress_line(const LoopProgress& p) { return "progress: " + body(p); }

}  // namespace tilesmith
