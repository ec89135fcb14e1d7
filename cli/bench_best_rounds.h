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

// Runs up to `rounds` rounds of the contestants and (when `vendor` is given) the vendor,
// then the paired ratios and the contest. A failed measurement ends the rounds with a note;
// what the completed rounds say is kept.
ProblemRounds measure_rounds(const std::vector<RoundContestant>& contestants,
                             const std::function<Result<Evaluation>()>* vendor, int rounds);

}  // namespace tilesmith::cli
