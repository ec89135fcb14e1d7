#include "tuner/loop/retime.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "analysis/stats.h"

namespace tilesmith {

std::vector<const HistoryRow*> retime_finalists(const std::vector<HistoryRow>& rows,
                                                const std::string& template_name, int top,
                                                Objective objective) {
  std::vector<std::pair<double, const HistoryRow*>> ok;
  std::set<std::string> seen;
  for (const auto& r : rows)
    if (r.template_name == template_name)
      if (const auto value = objective_value(objective, r); value && seen.insert(r.key()).second)
        ok.emplace_back(*value, &r);
  std::stable_sort(ok.begin(), ok.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const HistoryRow*> best;
  for (const auto& [value, r] : ok) best.push_back(r);
  if (best.size() > static_cast<std::size_t>(std::max(top, 0)))
    best.resize(static_cast<std::size_t>(std::max(top, 0)));
  return best;
}

RoundSample round_sample(const Evaluation& e) {
  return RoundSample{e.timing.median_ms,
                     e.telemetry ? e.telemetry->joules_per_launch : std::nullopt};
}

namespace {
struct Contestant {
  RetimeResult result;
  Config config;
  std::vector<Evaluation> evaluations;  // one per round
  bool out = false;
};

// The evaluation whose value is nearest the median of all of theirs (a real measurement, with
// its own spread, to stand for the rounds). `evaluations` is not empty.
template <typename Value>
const Evaluation& nearest_to_median(const std::vector<Evaluation>& evaluations, Value value) {
  std::vector<double> t;
  for (const auto& e : evaluations) t.push_back(value(e));
  std::sort(t.begin(), t.end());
  const double median = (t[(t.size() - 1) / 2] + t[t.size() / 2]) / 2;
  const Evaluation* nearest = &evaluations.front();
  for (const auto& e : evaluations)
    if (std::fabs(value(e) - median) < std::fabs(value(*nearest) - median)) nearest = &e;
  return *nearest;
}

std::vector<std::vector<RoundSample>> samples_of(const std::vector<Contestant>& cs,
                                                 std::vector<std::size_t>* in) {
  std::vector<std::vector<RoundSample>> s;
  in->clear();
  for (std::size_t i = 0; i < cs.size(); ++i)
    if (!cs[i].out) {
      s.push_back(cs[i].result.rounds);
      in->push_back(i);
    }
  return s;
}
}  // namespace

RetimeReport retime(
    Evaluator& evaluator, const KernelTemplate& tmpl, const GemmProblem& problem,
    const std::vector<const HistoryRow*>& finalists, const CertifyOptions& options,
    const std::function<bool()>& stop,
    const std::function<void(const RetimeResult&, const Evaluation&, int round)>& after_each,
    bool with_vendor) {
  RetimeReport report;
  if (with_vendor) report.vendor.emplace();
  std::vector<Evaluation> vendor_evaluations;
  // One vendor measurement in this round; a failure ends the vendor's rounds.
  auto measure_vendor = [&] {
    if (!report.vendor || !report.vendor->note.empty()) return;
    auto v = evaluator.vendor_baseline(problem);
    if (v.ok() && v->ok() && v->timing.median_ms > 0) {
      report.vendor->ms.push_back(v->timing.median_ms);
      vendor_evaluations.push_back(*v);
    } else {
      report.vendor->note = v.ok() ? std::string(outcome_name(v->outcome)) + (v->message.empty() ? "" : ": " + v->message)
                                   : v.status().message();
    }
  };
  std::vector<Contestant> cs;
  for (const HistoryRow* r : finalists) {
    auto config = config_from_json_text(r->config);
    if (!config.ok()) continue;
    cs.push_back(
        Contestant{RetimeResult{tmpl.name(), *r, {}, {}, std::nullopt, Verdict::kUndecided, false},
                   *config,
                   {}});
  }
  auto in_count = [&] {
    return std::count_if(cs.begin(), cs.end(), [](const Contestant& c) { return !c.out; });
  };
  // A single finalist has nothing to be compared with: its own interval needs the first
  // look's rounds, no more.
  const int single_rounds = std::min(options.min_rounds, options.max_rounds);
  std::optional<Certification> verdict;
  for (int round = 1; round <= options.max_rounds && in_count() > 0; ++round) {
    // Forward in odd rounds, backward in even ones: a drift within a round then favours
    // no finalist over the rounds (docs/timing-and-tolerances.md). The vendor goes first,
    // then last, the same way.
    if (round % 2 == 1) measure_vendor();
    for (std::size_t k = 0; k < cs.size(); ++k) {
      Contestant& c = cs[round % 2 == 1 ? k : cs.size() - 1 - k];
      if (c.out) continue;
      if (stop && stop()) {
        report.stopped = true;
        break;
      }
      Evaluation e = evaluator.evaluate(tmpl, problem, c.config);
      // A round that cannot be compared by the objective (no energy figure) puts the
      // finalist out like a failed one: certify() compares only complete rounds.
      if (objective_value(options.objective, e)) {
        c.result.rounds.push_back(round_sample(e));
      } else {
        c.out = true;
        c.result.rounds.clear();
        c.result.retimed = e;
      }
      c.evaluations.push_back(e);
      if (after_each) after_each(c.result, e, round);
    }
    if (report.stopped) break;
    if (round % 2 == 0) measure_vendor();
    std::vector<std::size_t> in;
    auto samples = samples_of(cs, &in);
    if (samples.empty()) break;
    if (samples.size() == 1 ? round >= single_rounds : is_look(round, options)) {
      Certification c = certify(samples, options);
      if (c.verdict != Verdict::kUndecided) {
        verdict = std::move(c);
        report.contestants = in;
        break;
      }
    }
    if (options.rounds_per_process > 0 && round % options.rounds_per_process == 0 && round < options.max_rounds &&
        evaluator.renew_process())
      ++report.processes;
  }
  // The round nearest the median of the objective over the rounds stands for the finalist.
  for (auto& c : cs)
    if (!c.out && !c.evaluations.empty())
      c.result.retimed = nearest_to_median(c.evaluations, [&](const Evaluation& e) {
        return objective_value(options.objective, e).value_or(0);
      });
  if (verdict) {
    // A verdict comes after a whole round, so every finalist has been evaluated at least
    // once and report.finalists below keeps cs's order and indices.
    for (std::size_t k = 0; k < report.contestants.size(); ++k) {
      RetimeResult& r = cs[report.contestants[k]].result;
      r.standing = verdict->standings[k];
      r.winner = k == verdict->winner;
    }
    for (auto& c : cs) c.result.verdict = verdict->verdict;
    report.certification = std::move(verdict);
  }
  for (auto& c : cs)
    if (!c.evaluations.empty()) report.finalists.push_back(std::move(c.result));
  if (report.vendor && !vendor_evaluations.empty())
    report.vendor->retimed =
        nearest_to_median(vendor_evaluations, [](const Evaluation& e) { return e.timing.median_ms; });
  return report;
}

std::optional<VendorRatio> paired_vendor_ratio(const std::vector<RoundSample>& winner, const VendorRounds& vendor,
                                               double confidence) {
  const std::size_t n = std::min(winner.size(), vendor.ms.size());
  std::vector<double> ratios, v;
  for (std::size_t i = 0; i < n; ++i)
    if (winner[i].ms > 0) {
      ratios.push_back(vendor.ms[i] / winner[i].ms);
      v.push_back(vendor.ms[i]);
    }
  if (ratios.empty()) return std::nullopt;
  VendorRatio r;
  r.median = analysis::summarize(ratios).median;
  r.interval = analysis::median_interval(ratios, confidence);
  r.rounds = static_cast<int>(ratios.size());
  r.vendor_median_ms = analysis::summarize(v).median;
  return r;
}

const RetimeResult* retime_winner(const std::vector<RetimeResult>& results) {
  for (const auto& r : results)
    if (r.winner) return &r;
  return nullptr;
}

}  // namespace tilesmith
