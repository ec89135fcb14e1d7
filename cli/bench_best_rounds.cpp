#include "cli/bench_best_rounds.h"

namespace tilesmith::cli {

std::string unpaired_note(const ProblemRounds& rounds, bool with_vendor) {
  if (!rounds.note.empty()) return rounds.note;
  return with_vendor ? "a round gave no positive time" : "no vendor figure to pair with";
}

bool ratio_too_wide(const ProblemRounds& so_far, const RoundsPlan& plan) {
  for (std::size_t i = 0; i < so_far.ms.size(); ++i) {
    const auto p = analysis::paired_ratio(so_far.ms[i], so_far.vendor_ms);
    if (!p || !p->interval || p->interval->hi - p->interval->lo > plan.ratio_width) return true;
  }
  return false;
}

ProblemRounds measure_rounds(const std::vector<RoundContestant>& contestants,
                             const std::function<Result<Evaluation>()>* vendor, const RoundsPlan& plan) {
  const int rounds = plan.rounds;
  ProblemRounds out;
  out.ms.resize(contestants.size());
  out.paired.resize(contestants.size());
  out.paired_steady.resize(contestants.size());
  std::vector<std::vector<double>> steady(contestants.size());
  std::vector<double> vendor_steady;
  if (rounds <= 0) {
    out.note = "not measured (--rounds 0)";
    return out;
  }
  // Slot i < n: contestant i; slot n: the vendor.
  const std::size_t n = contestants.size();
  const std::size_t slots = n + (vendor ? 1 : 0);
  // The plan's rounds, then pairs of rounds while a ratio is still too wide.
  auto another_round = [&](int round) {
    if (round < rounds) return true;
    if (!vendor) return false;
    if ((round - rounds) % 2 == 1) return true;  // the second of a pair
    return round + 2 <= plan.max_rounds && ratio_too_wide(out, plan);
  };
  for (int round = 0; another_round(round) && out.note.empty(); ++round) {
    std::vector<double> got(slots, 0);
    std::vector<std::optional<double>> got_steady(slots);
    for (std::size_t k = 0; k < slots && out.note.empty(); ++k) {
      const std::size_t slot = analysis::ours_first(round) ? k : slots - 1 - k;
      const std::string where = "round " + std::to_string(round + 1) + ", ";
      if (slot < n) {
        const Evaluation e = contestants[slot].measure();
        if (!e.ok() || !(e.timing.median_ms > 0))
          out.note = where + contestants[slot].label + ": " + outcome_name(e.outcome) + " " + e.message;
        else
          got[slot] = e.timing.median_ms, got_steady[slot] = e.timing.steady_ms;
      } else {
        auto v = (*vendor)();
        if (!v.ok() || !v->ok() || !(v->timing.median_ms > 0))
          out.note = where + "vendor: " +
                     (v.ok() ? std::string(outcome_name(v->outcome)) + " " + v->message : v.status().message());
        else
          got[slot] = v->timing.median_ms, got_steady[slot] = v->timing.steady_ms;
      }
    }
    if (!out.note.empty()) break;
    for (std::size_t i = 0; i < n; ++i) {
      out.ms[i].push_back(got[i]);
      if (got_steady[i]) steady[i].push_back(*got_steady[i]);
    }
    if (vendor) {
      out.vendor_ms.push_back(got[n]);
      if (got_steady[n]) vendor_steady.push_back(*got_steady[n]);
    }
    ++out.rounds;
  }
  if (out.rounds == 0) return out;
  if (vendor)
    for (std::size_t i = 0; i < n; ++i) {
      out.paired[i] = analysis::paired_ratio(out.ms[i], out.vendor_ms);
      if (int(steady[i].size()) == out.rounds && int(vendor_steady.size()) == out.rounds)
        out.paired_steady[i] = analysis::paired_ratio(steady[i], vendor_steady);
    }
  if (n >= 2) {
    // One look, after the rounds run: bench-best does not stop early.
    CertifyOptions o;
    o.min_rounds = o.max_rounds = out.rounds;
    o.look_every = 0;
    std::vector<std::vector<RoundSample>> samples(n);
    for (std::size_t i = 0; i < n; ++i)
      for (double ms : out.ms[i]) samples[i].push_back(RoundSample{ms, std::nullopt});
    out.contest = certify(samples, o);
  }
  return out;
}

}  // namespace tilesmith::cli
