#pragma once
// A history of a given length on a recorded space, for measuring what a proposer costs
// as the history grows (proposal_cost_bench.cpp) without first running a search that
// long: distinct recorded configurations in a seeded random order, each replayed (so a
// success carries a re-measured time, as in a run), mixed with a share of failures —
// configurations of the parameters' Cartesian product that break the space's
// constraints, the rows an LLM's rejected proposals leave in a real history.

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "runtime/replay/recording.h"
#include "runtime/replay/replay_evaluator.h"
#include "tuner/search/proposer.h"

namespace tilesmith::bench {

struct RecordedHistoryOptions {
  size_t rows = 500;
  double failure_share = 0.25;  // of the rows, failures (invalid) rather than measurements
  std::uint64_t seed = 1;
};

// Fails (invalid argument) when the recording has fewer distinct configurations than the
// successes asked for, or when the failures asked for cannot be drawn (a space whose
// Cartesian product is all valid). Deterministic for the options.
Result<std::vector<Trial>> recorded_history(const replay::Recording& recording,
                                            replay::ReplayEvaluator& evaluator,
                                            const RecordedHistoryOptions& options);

// The trial a replay of `config` gives: what the loop records for an evaluation.
Trial replay_trial(const replay::Recording& recording, replay::ReplayEvaluator& evaluator,
                   const Config& config, const std::string& proposer);

}  // namespace tilesmith::bench
