#pragma once
// bench-best --rounds: the kernels benched for one problem and the vendor library measured
// again in alternating rounds (forward, then backward: A B V, V B A, ...), one median of
// each per round. From those rounds come each kernel's ratio to the vendor, round by round
// (analysis/paired_ratio.h), and, where several entries serve one problem (winners of
// different runs, seeds or templates), a contest between them with the re-timing's
// statistics (tuner/loop/certify.h): a certified winner or a tie. Measured seconds apart,
// all of them see the same clocks, so a drift between measurements biases none of them.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/paired_ratio.h"
#include "runtime/evaluator.h"
#include "tuner/loop/certify.h"

namespace tilesmith::cli {

// One kernel of the rounds: how to measure it once (its median, or why not).
struct RoundContestant {
  std::string label;  // "[2] gemm_tma_half" (for notes)
  std::function<Evaluation()> measure;
};

struct ProblemRounds {
  int rounds = 0;                           // completed rounds
  std::vector<std::vector<double>> ms;      // per contestant, per completed round
  std::vector<double> vendor_ms;            // per completed round (empty without the vendor)
  std::string note;                         // why the rounds stopped, or why there were none
  std::vector<std::optional<analysis::PairedRatio>> paired;  // per contestant, against the vendor
  // The same from the back-to-back times (TimingStats::steady_ms), where every round has them.
  std::vector<std::optional<analysis::PairedRatio>> paired_steady;
  std::optional<Certification> contest;     // two or more contestants: who is faster
};

// Why a contestant of the rounds has no paired ratio: the note that ended the rounds, no
// vendor to pair with, or a round without a positive time.
std::string unpaired_note(const ProblemRounds& rounds, bool with_vendor);

// How many rounds: `rounds`, then, with the vendor, two more at a time (one of each order)
// while a contestant's paired interval is wider than `ratio_width` (its upper bound less its
// lower), as long as a whole pair fits in `max_rounds`. On a GPU at its power cap 8 rounds
// gave intervals 0.2 wide at M = 4096 (notes/device-runs.md, runs 196 and 205): too wide to
// tell 0.97 from 1.03.
struct RoundsPlan {
  int rounds = 0;
  int max_rounds = 0;       // at most `rounds` (the default): exactly `rounds`
  double ratio_width = 0;   // the interval's width that ends the extra rounds
};

// Whether the rounds so far leave a contestant's ratio to the vendor wider than the plan
// wants (no interval yet counts as wide).
bool ratio_too_wide(const ProblemRounds& so_far, const RoundsPlan& plan);

// Runs the plan's rounds of the contestants and (when `vendor` is given) the vendor, then
// the paired ratios and the contest. A failed measurement ends the rounds with a note; what
// the completed rounds say is kept.
ProblemRounds measure_rounds(const std::vector<RoundContestant>& contestants,
                             const std::function<Result<Evaluation>()>* vendor, const RoundsPlan& plan);
inline ProblemRounds measure_rounds(const std::vector<RoundContestant>& contestants,
                                    const std::function<Result<Evaluation>()>* vendor, int rounds) {
  return measure_rounds(contestants, vendor, RoundsPlan{rounds});
}

}  // namespace tilesmith::cli
