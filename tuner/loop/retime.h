#pragma once
// The end of a run: the best few configs of a template (by the run's objective: the
// fastest under time) are measured again, in interleaved rounds (A B C, C B A, ...), until
// the best is certified better than the others or the round budget is spent
// (tuner/loop/certify.h has the statistics). A search
// measurement that was lucky (a quiet GPU, a favourable clock) does not become the answer
// on its own; a clock that drifts during the re-timing slows every finalist alike; a
// finalist that fails any of its re-runs (wrong_result, a launch error, or a round
// without the objective's figure, e.g. no energy) is out.

#include <functional>
#include <optional>
#include <vector>

#include "registry/kernel_template.h"
#include "registry/problem.h"
#include "runtime/evaluator.h"
#include "tuner/loop/certify.h"
#include "tuner/records/history.h"

namespace tilesmith {

struct RetimeResult {
  std::string template_name;
  HistoryRow row;  // the finalist's history row (its search measurement)
  // The round whose median is nearest the finalist's median over its rounds (a real
  // measurement, with its own spread); for a finalist that is out, the failing round.
  Evaluation retimed;
  std::vector<RoundSample> rounds;        // its samples in round order, while it was in
  std::optional<Standing> standing;       // its place in the contest; absent when it is out
  Verdict verdict = Verdict::kUndecided;  // the template's contest (the same for each finalist)
  bool winner = false;
};

// The vendor library measured in the same rounds as the finalists (retime()'s
// with_vendor), so that the winner's ratio to it compares measurements seconds apart
// rather than the winner's end-of-run rounds with the vendor's start-of-run figure (at a
// power cap the GPU runs hotter and slower after minutes of tuning).
struct VendorRounds {
  std::vector<double> ms;             // its median per round, in round order
  std::optional<Evaluation> retimed;  // the round nearest its median over the rounds
  std::string note;                   // why it stopped being measured, if it did
};

// The winner's throughput over the vendor's, round by round (vendor_ms / winner_ms of the
// same round): its median and, with enough rounds, the interval of that median at
// `confidence` (analysis/median_interval.h).
struct VendorRatio {
  double median = 0;
  std::optional<analysis::MedianInterval> interval;
  int rounds = 0;
  double vendor_median_ms = 0;
};
std::optional<VendorRatio> paired_vendor_ratio(const std::vector<RoundSample>& winner, const VendorRounds& vendor,
                                               double confidence);

struct RetimeReport {
  std::vector<RetimeResult> finalists;         // in the order given
  std::optional<VendorRounds> vendor;          // with_vendor: the vendor's rounds
  std::optional<Certification> certification;  // over those that passed every round
  std::vector<std::size_t> contestants;        // finalists[] index of each standing
  bool stopped = false;                        // `stop` ended it before the verdict
  int processes = 1;  // the measuring processes the rounds were spread over (1: one, or none renewable)
};

// The `top` best ok evaluation rows of the template by `objective` (one per config), best
// first; rows without the objective's figure are not finalists.
std::vector<const HistoryRow*> retime_finalists(const std::vector<HistoryRow>& rows,
                                                const std::string& template_name, int top,
                                                Objective objective = Objective::kTime);

// One round's sample from a finalist's evaluation (its median, and energy where measured).
RoundSample round_sample(const Evaluation& e);

// Re-measures the finalists with `evaluator` in rounds, `options` deciding when to stop
// and after how many rounds the evaluator renews its measuring process (Evaluator::
// renew_process: a median certified in one process can be 0.3% wide while the next process
// runs 1% faster, notes/device-runs.md run 119), and what they are compared by
// (options.objective),
// calling `after_each` after every evaluation with its round (1-based). A single finalist
// is measured for options.min_rounds rounds (capped by max_rounds), so its interval is
// known too. Stops early (stopped = true, returning what it has) when `stop` says so.
// Marks the winner, if any finalist passed every round.
// With `with_vendor`, the vendor library (Evaluator::vendor_baseline) is measured once per
// round too, first in odd rounds and last in even ones; a vendor measurement that fails
// ends its rounds (report.vendor keeps why) and leaves the finalists' contest as it is.
RetimeReport retime(
    Evaluator& evaluator, const KernelTemplate& tmpl, const GemmProblem& problem,
    const std::vector<const HistoryRow*>& finalists, const CertifyOptions& options,
    const std::function<bool()>& stop,
    const std::function<void(const RetimeResult&, const Evaluation&, int round)>& after_each,
    bool with_vendor = false);

// The winner of retime()'s results; nullptr when none passed.
const RetimeResult* retime_winner(const std::vector<RetimeResult>& results);

}  // namespace tilesmith
