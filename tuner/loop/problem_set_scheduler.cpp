#include "tuner/loop/problem_set_scheduler.h"

#include <algorithm>
#include <limits>

namespace tilesmith {

std::vector<double> problem_weights(const std::vector<ProblemStanding>& problems) {
  std::vector<double> rates;  // vendor ms per flop of the problems timed
  for (const auto& p : problems)
    if (p.vendor_ms && *p.vendor_ms > 0 && p.flops > 0) rates.push_back(*p.vendor_ms / p.flops);
  double rate = 1;  // none timed: every weight in flops, one unit for all
  if (!rates.empty()) {
    std::sort(rates.begin(), rates.end());
    rate = rates[rates.size() / 2];
  }
  std::vector<double> w;
  for (const auto& p : problems) {
    const double per_run = p.vendor_ms && *p.vendor_ms > 0 ? *p.vendor_ms : p.flops * rate;
    w.push_back(per_run * static_cast<double>(std::max<std::int64_t>(1, p.count)));
  }
  return w;
}

std::int64_t effective_min_slice(std::size_t problems, const SchedulerOptions& o) {
  std::int64_t m = std::max<std::int64_t>(1, o.min_slice);
  if (o.total_evals > 0 && problems > 0)
    m = std::min(m, std::max<std::int64_t>(1, o.total_evals / static_cast<std::int64_t>(problems)));
  return m;
}

std::optional<Slice> next_slice(const std::vector<ProblemStanding>& problems, const SchedulerOptions& o) {
  std::int64_t spent = 0;
  for (const auto& p : problems) spent += p.evals;
  std::int64_t left = std::numeric_limits<std::int64_t>::max();
  if (o.total_evals > 0) left = o.total_evals - spent;
  if (left <= 0) return std::nullopt;

  const std::vector<double> weights = problem_weights(problems);
  // The minimum round goes heaviest first (ties in set order): a run cut short by --hours
  // then leaves the problems that cost least per step without a result, not the largest
  // (a 4096-token lm_head last in its file was left unevaluated).
  const std::int64_t min_slice = effective_min_slice(problems.size(), o);
  std::optional<std::size_t> first;
  for (std::size_t i = 0; i < problems.size(); ++i)
    if (!problems[i].done && problems[i].evals < min_slice && (!first || weights[i] > weights[*first])) first = i;
  if (first) return Slice{*first, std::min(min_slice - problems[*first].evals, left), true};

  std::optional<std::size_t> best;
  double best_load = 0;
  for (std::size_t i = 0; i < problems.size(); ++i) {
    if (problems[i].done) continue;
    const double priority = weights[i] * std::max(problems[i].recent_gain, o.gain_floor);
    if (!(priority > 0)) continue;
    // Evaluations per unit of priority once this slice is spent: the lowest is furthest
    // behind its share.
    const double load = static_cast<double>(problems[i].evals + o.slice) / priority;
    if (!best || load < best_load) {
      best = i;
      best_load = load;
    }
  }
  if (!best) return std::nullopt;
  return Slice{*best, std::min(std::max<std::int64_t>(1, o.slice), left), false};
}

double recent_gain(const std::vector<std::optional<double>>& evaluated, std::int64_t window) {
  const std::size_t n = evaluated.size();
  const std::size_t split = n > static_cast<std::size_t>(std::max<std::int64_t>(0, window))
                                ? n - static_cast<std::size_t>(window)
                                : 0;
  std::optional<double> before, now;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& v = evaluated[i];
    if (!v || !(*v > 0)) continue;
    if (i < split && (!before || *v < *before)) before = *v;
    if (!now || *v < *now) now = *v;
  }
  if (!now || !before) return 1;
  return std::max(0.0, *before / *now - 1);
}

}  // namespace tilesmith
