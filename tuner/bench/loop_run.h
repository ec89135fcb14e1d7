#pragma once
// Measures a proposer through the whole tuning loop on a recorded space: a real
// GenerationLoop (generation 0, batches of `candidates`, validation, dropping known
// configurations, failures and re-timing as a run counts them) with the replay backend,
// in a scratch results folder, as `autotune-loop --backend replay --replay-file F
// --max-evals N --seed S` would run it. Evaluations are history.csv rows of stage
// evaluation, in order. Distances to the optimum use the recorded mean times, so
// replay noise cannot flatter a result.
//
// Besides the counts, a trace per evaluation (what the proposer said it was doing, the
// recorded time) and per generation (the loop's convergence estimate), for the
// investigation in docs/search.md. Thread-compatible: one call per thread, each with
// its own proposer and scratch folder.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/replay/recording.h"
#include "tuner/loop/loop.h"
#include "tuner/bench/search_run.h"
#include "tuner/search/proposer.h"

namespace tilesmith::bench {

struct LoopRunOptions {
  int candidates = 8;                          // per generation, as the loop's default
  std::int64_t max_evals = 300;
  std::vector<double> targets = {0.05, 0.01};  // within 5% and 1% of the optimum
  int retime_top = 3;                          // the loop's default
  // The loop's --stop-when-converged (tuner/loop/convergence_stop.h); nullopt: run to
  // max_evals.
  std::optional<ConvergenceStop> stop_when_converged;
  double convergence_margin = 0.05;  // asked of the proposer when not stopping on it
  // Where the run's folder goes (created, then removed unless `keep`); must exist.
  std::filesystem::path scratch = std::filesystem::temp_directory_path();
  bool keep = false;  // leave the results folder (history.csv, journal) for a closer look
  // How several templates share a generation (one recording: no effect).
  TemplateAllocation allocation = TemplateAllocation::kByGain;
  AllocationOptions allocation_options;
};

struct LoopRunRow {
  std::string template_name;
  std::string proposer;   // history.csv's proposer column
  std::string rationale;  // the proposer's reason, cut before the prediction
  bool ok = false;
  double recorded_ms = 0;  // the recording's mean time; 0 unless ok
  int generation = 0;
};

struct LoopGeneration {
  int generation = 0;
  std::int64_t evaluated_before = 0;     // evaluations before this generation's plan
  double best_before_over_optimum = 0;   // recorded time of the best so far / optimum
  std::optional<double> p_converged;     // the loop's estimate when planning it
};

struct LoopRunResult {
  // Per target: the 1-based evaluation that first reached it; nullopt when it never did.
  std::vector<std::optional<int>> evaluations_to_target;
  int evaluations = 0;
  int proposal_rows = 0;            // rejected before evaluation
  std::int64_t dropped_known = 0;   // proposals dropped as already in the history
  double best_over_optimum = 0;     // recorded time of the best found / optimum
  double propose_seconds = 0;
  int generations = 0;
  StopReason reason = StopReason::kMaxEvals;
  std::optional<double> final_p_converged;
  std::vector<LoopRunRow> rows;               // evaluation rows, in order
  std::vector<LoopGeneration> generation_log; // one per planned generation
  Status status;
};

// One run with `seed` (proposals and replay draws). The recording must outlive the call.
LoopRunResult run_loop(const std::shared_ptr<const replay::Recording>& recording, Proposer& proposer,
                       std::uint64_t seed, const LoopRunOptions& options);

// Several recordings of one problem (recordings_for gives them), each a template of one
// run with its own proposer (proposers[i] for recordings[i]; all must outlive the call):
// a problem of a recorded set tuned with every template that serves it, as
// `autotune-loop --backend replay --replay-file DIR --m M --n N --k K` runs it. Targets
// and distances are to the fastest configuration over all of them.
LoopRunResult run_loop(const std::vector<std::shared_ptr<const replay::Recording>>& recordings,
                       const std::vector<Proposer*>& proposers, std::uint64_t seed,
                       const LoopRunOptions& options);

// The counts in the proposer-only form (search_run.h), for the shared tables.
SearchRunResult as_search_result(const LoopRunResult& r);

}  // namespace tilesmith::bench
