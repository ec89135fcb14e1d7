#include "tuner/loop/certify.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "analysis/stats.h"

namespace tilesmith {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kCertified:
      return "certified";
    case Verdict::kTie:
      return "tie";
    case Verdict::kSingle:
      return "single";
    case Verdict::kTooFewRounds:
      return "too_few_rounds";
    case Verdict::kUndecided:
      return "undecided";
  }
  return "undecided";
}

bool is_look(int rounds, const CertifyOptions& o) {
  if (rounds <= 0) return false;
  if (rounds >= o.max_rounds) return rounds == o.max_rounds;
  if (rounds < o.min_rounds) return false;
  return rounds == o.min_rounds ||
         (o.look_every > 0 && (rounds - o.min_rounds) % o.look_every == 0);
}

int look_count(const CertifyOptions& o) {
  int n = 0;
  for (int r = 1; r <= o.max_rounds; ++r) n += is_look(r, o) ? 1 : 0;
  return std::max(n, 1);
}

namespace {
std::vector<double> times_of(const std::vector<RoundSample>& s) {
  std::vector<double> t;
  for (const auto& x : s) t.push_back(x.ms);
  return t;
}

std::vector<double> values_of(const std::vector<RoundSample>& s, Objective o) {
  std::vector<double> v;
  for (const auto& x : s) {
    const auto value = objective_value(o, x.ms, x.joules);
    if (!value)
      throw std::invalid_argument(std::string("certify: a round without its ") + objective_description(o));
    v.push_back(*value);
  }
  return v;
}

std::optional<double> median_joules(const std::vector<RoundSample>& s) {
  std::vector<double> j;
  for (const auto& x : s) {
    if (!x.joules) return std::nullopt;
    j.push_back(*x.joules);
  }
  if (j.empty()) return std::nullopt;
  return analysis::summarize(j).median;
}

// The tie rule over the tied finalists whose paired median is the fastest's within
// median_alike: lowest spread, unless others are alike; then the figure the objective
// leaves aside (under time the lowest energy when all alike ones have a figure, under
// energy and edp the lowest time); then the lowest median value.
std::size_t break_tie(const std::vector<Standing>& st, const CertifyOptions& o, std::string* rule) {
  std::vector<std::size_t> tied;
  for (std::size_t i = 0; i < st.size(); ++i)
    if (st[i].tied && st[i].ratio_median <= 1 + o.median_alike) tied.push_back(i);
  if (tied.size() == 1) {
    *rule = "ratio";
    return tied.front();
  }
  double lowest = st[tied.front()].spread;
  for (std::size_t i : tied) lowest = std::min(lowest, st[i].spread);
  std::vector<std::size_t> alike;
  for (std::size_t i : tied)
    if (st[i].spread <= lowest * o.spread_alike) alike.push_back(i);
  auto pick = [&](auto key) {
    return *std::min_element(alike.begin(), alike.end(),
                             [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  };
  if (alike.size() == 1) {
    *rule = "spread";
    return alike.front();
  }
  if (o.objective != Objective::kTime) {
    *rule = "time";
    return pick([&](std::size_t i) { return st[i].median_ms; });
  }
  const bool energy = std::all_of(alike.begin(), alike.end(),
                                  [&](std::size_t i) { return st[i].median_joules.has_value(); });
  if (energy) {
    *rule = "energy";
    return pick([&](std::size_t i) { return *st[i].median_joules; });
  }
  *rule = "median";
  return pick([&](std::size_t i) { return st[i].median_value; });
}
}  // namespace

Certification certify(const std::vector<std::vector<RoundSample>>& samples,
                      const CertifyOptions& o) {
  if (samples.empty() || samples.front().empty())
    throw std::invalid_argument("certify: no samples");
  const std::size_t rounds = samples.front().size();
  for (const auto& s : samples)
    if (s.size() != rounds)
      throw std::invalid_argument("certify: finalists with unequal round counts");

  Certification c;
  c.objective = o.objective;
  c.rounds = static_cast<int>(rounds);
  std::vector<std::vector<double>> values;
  for (const auto& s : samples) {
    Standing st;
    const auto t = times_of(s);
    values.push_back(values_of(s, o.objective));
    const auto& v = values.back();
    st.median_ms = analysis::summarize(t).median;
    st.interval = analysis::median_interval(t, o.confidence);
    st.median_value = analysis::summarize(v).median;
    st.value_interval = analysis::median_interval(v, o.confidence);
    st.spread = analysis::relative_mad(v);
    st.median_joules = median_joules(s);
    c.standings.push_back(st);
  }
  for (std::size_t i = 1; i < c.standings.size(); ++i)
    if (c.standings[i].median_value < c.standings[c.fastest].median_value) c.fastest = i;
  c.winner = c.fastest;
  c.standings[c.fastest].tied = true;
  if (samples.size() == 1) {
    c.verdict = Verdict::kSingle;
    return c;
  }

  const double comparisons = double(samples.size() - 1);
  c.test_level = 1.0 - (1.0 - o.confidence) / (comparisons * look_count(o));
  bool separated = true, measurable = true;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (i == c.fastest) continue;
    std::vector<double> ratios;
    for (std::size_t r = 0; r < rounds; ++r)
      ratios.push_back(values[i][r] / values[c.fastest][r]);
    Standing& st = c.standings[i];
    st.ratio_median = analysis::summarize(ratios).median;
    st.ratio = analysis::median_interval(ratios, c.test_level);
    if (!st.ratio) measurable = false;
    st.tied = !st.ratio || st.ratio->lo <= 1.0;
    separated = separated && !st.tied;
  }
  const bool budget_spent = c.rounds >= o.max_rounds;
  if (separated) {
    c.verdict = Verdict::kCertified;
  } else if (!budget_spent) {
    c.verdict = Verdict::kUndecided;
  } else if (!measurable) {
    // No interval at this level in this many rounds: nothing is claimed either way, and
    // the fastest median stands as before there were intervals.
    c.verdict = Verdict::kTooFewRounds;
  } else {
    c.verdict = Verdict::kTie;
    c.winner = break_tie(c.standings, o, &c.tie_rule);
  }
  return c;
}

}  // namespace tilesmith
