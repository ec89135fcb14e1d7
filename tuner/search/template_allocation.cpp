#include "tuner/search/template_allocation.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace tilesmith {

const char* template_allocation_name(TemplateAllocation a) {
  return a == TemplateAllocation::kEven ? "even" : "gain";
}

Result<TemplateAllocation> parse_template_allocation(std::string_view text) {
  if (text == "even") return TemplateAllocation::kEven;
  if (text == "gain") return TemplateAllocation::kByGain;
  return Status::invalid("unknown allocation '" + std::string(text) + "' (even, gain)");
}

namespace {

// Upper confidence bound on a rate of h in n (Streeter and Smith's U(mu, n) with mu = h/n).
double bound(double h, double n, double a) {
  if (n <= 0) return 1e300;
  return (h + a + std::sqrt(2 * h * a + a * a)) / n;
}

// How much of the exploration term an arm with no success under `threshold` keeps: the chance of
// a next success that far below its fastest, relative to one just under it, from the spacing of
// its fastest successes in log time (an exponential lower tail, the Hill-type estimate over the
// k fastest below the (k+1)-th). Fewer than three successes say nothing about the tail, and a
// template within 20% of the threshold may still get there by its own search (on the decode
// recordings the 1% configuration of a problem sometimes sits in such a template): 1 for both.
double tail_factor(const std::vector<Trial>& trials, double threshold, double least) {
  if (least >= 1 || threshold <= 0) return 1;
  std::vector<double> y;
  for (const Trial& t : trials)
    if (t.outcome == Outcome::kOk && t.score && *t.score > 0) y.push_back(std::log(*t.score));
  if (y.size() < 3) return 1;
  std::sort(y.begin(), y.end());
  const std::size_t k = std::min<std::size_t>(4, y.size() - 1);
  double spacing = 0;
  for (std::size_t i = 0; i < k; ++i) spacing += (y[k] - y[i]) / static_cast<double>(k);
  const double gap = y[0] - std::log(threshold);
  if (gap <= std::log(1.2)) return 1;
  if (spacing <= 0) return least;
  return std::clamp(std::exp(-gap / spacing), least, 1.0);
}

}  // namespace

std::vector<bool> arms_left_out(const std::vector<TemplateArm>& arms, const AllocationOptions& options) {
  // Arms left out by their bound: out for good once the run has a success at or below it;
  // waiting while an arm that might be faster than the bound is not yet known.
  std::optional<double> best;
  for (const auto& arm : arms)
    for (const Trial& t : *arm.trials)
      if (t.outcome == Outcome::kOk && t.score && (!best || *t.score < *best)) best = *t.score;
  auto known = [&](std::size_t i) { return static_cast<int>(arms[i].trials->size()) >= options.known_after; };
  auto bounded = [&](std::size_t i) { return arms[i].fastest_possible > 0; };
  auto out = [&](std::size_t i) { return bounded(i) && best && *best <= arms[i].fastest_possible; };
  // Arm j, not yet known, might beat arm i's bound: it has none, or a lower one it is not out by.
  auto may_beat = [&](std::size_t j, std::size_t i) {
    return j != i && arms[j].live && !known(j) &&
           (!bounded(j) || (arms[j].fastest_possible < arms[i].fastest_possible && !out(j)));
  };
  std::vector<bool> skip(arms.size(), false);
  for (std::size_t i = 0; i < arms.size(); ++i) {
    skip[i] = !arms[i].live || out(i);
    for (std::size_t j = 0; j < arms.size() && bounded(i) && !skip[i]; ++j) skip[i] = may_beat(j, i);
  }
  return skip;
}

std::vector<int> allocate_by_gain(const std::vector<TemplateArm>& arms, int total,
                                  const AllocationOptions& options) {
  std::vector<int> counts(arms.size(), 0);
  if (arms.empty() || total <= 0) return counts;
  const std::vector<bool> skip = arms_left_out(arms, options);
  // Floors first. Where the budget's end does not cover them all (the last generation of a run, or a
  // problem set's slice), they are handed out one at a time in turn, so that every arm gets part of
  // its floor rather than the first arms all of theirs and the last none.
  int left = total;
  bool any_known = false;
  std::vector<int> floors(arms.size(), 0);
  for (std::size_t i = 0; i < arms.size(); ++i) {
    if (skip[i]) continue;
    const int n = static_cast<int>(arms[i].trials->size());
    if (n >= options.known_after) any_known = true;
    floors[i] = std::max({options.known_after - n, n == 0 ? arms[i].seeds : 0, 0});
  }
  for (bool gave = true; gave && left > 0;) {
    gave = false;
    for (std::size_t i = 0; i < arms.size() && left > 0; ++i)
      if (counts[i] < floors[i]) {
        ++counts[i];
        --left;
        gave = true;
      }
  }
  if (!any_known || left == 0 || std::all_of(skip.begin(), skip.end(), [](bool x) { return x; })) return counts;

  // The threshold: the `top`-th fastest success of the run, or the fastest quarter while
  // there are fewer than 4 x top successes, so that early on it separates the leaders
  // from the rest instead of halving the run. Scores (times, or the run's other
  // objective), not ranks within a template: the templates compete on one clock.
  std::vector<double> ok_times;
  for (const auto& arm : arms)
    if (arm.live)
      for (const Trial& t : *arm.trials)
        if (t.outcome == Outcome::kOk && t.score) ok_times.push_back(*t.score);
  std::vector<double> n(arms.size(), 0), h(arms.size(), 0), a(arms.size(), options.confidence);
  if (!ok_times.empty()) {
    const std::size_t quarter = std::max<std::size_t>(1, ok_times.size() / 4);
    const std::size_t k = std::min(quarter, static_cast<std::size_t>(std::max(1, options.top))) - 1;
    std::nth_element(ok_times.begin(), ok_times.begin() + static_cast<std::ptrdiff_t>(k),
                     ok_times.end());
    const double threshold = ok_times[k];
    for (std::size_t i = 0; i < arms.size(); ++i)
      for (const Trial& t : *arms[i].trials)
        if (t.outcome == Outcome::kOk && t.score && *t.score <= threshold) ++h[i];
    for (std::size_t i = 0; i < arms.size(); ++i)
      if (h[i] == 0 && arms[i].trials->size() >= static_cast<std::size_t>(3 * options.known_after))
        a[i] *= tail_factor(*arms[i].trials, threshold, options.tail_weight);
  }
  for (std::size_t i = 0; i < arms.size(); ++i)
    n[i] = static_cast<double>(arms[i].trials->size() + counts[i]);
  // One slot at a time to the highest bound, each counted as a miss; ties to the earlier arm.
  for (; left > 0; --left) {
    std::size_t pick = 0;
    double best = -1;
    for (std::size_t i = 0; i < arms.size(); ++i) {
      if (skip[i]) continue;
      const double u = bound(h[i], n[i], a[i]);
      if (u > best) {
        best = u;
        pick = i;
      }
    }
    ++counts[pick];
    ++n[pick];
  }
  return counts;
}

}  // namespace tilesmith
