#pragma once
// Tuning a problem set under one budget (docs/problem-sets.md): DIR/problem_set.json
// (the set as run), one folder per problem holding exactly what a single-problem run
// holds (each slice is a session of GenerationLoop in that folder, so every folder
// resumes as a single run does), and DIR/summary.json at the end.
//
// The budget is spent in slices chosen by next_slice (problem_set_scheduler.h) from the
// folders' standings; the search of every slice keeps the search's best in
// best_config.json, and the finalists are re-timed once per problem, at the end of the
// set. A problem's first slice warm-starts from the winners of the nearest problems
// already tuned, and every slice's proposers see the related problems' winners.
//
// Resume: run the same set into the same DIR again. The standings are read from the
// folders, so nothing is lost or repeated.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/vendor_rule.h"
#include "base/status.h"
#include "tuner/loop/loop.h"
#include "tuner/loop/problem_set.h"
#include "tuner/search/proposer.h"

namespace tilesmith {

struct ProblemSetOptions {
  std::filesystem::path results_dir = "results";
  ProblemSet set;
  // Each slice's options: candidates, seed, compile threads, vendor_baseline, settings,
  // budget.patience and retime_top (applied once per problem at the end) are used; the
  // folder, problem and the other budgets are set per slice.
  LoopOptions loop;
  std::int64_t max_evals = 0;  // the whole set's, resumed sessions included; 0: no limit
  double hours = 0;            // this session of the set; 0: no limit
  std::int64_t min_slice = 16; // evaluations every problem gets first
  std::int64_t slice = 16;     // evaluations per later slice
};

// What a problem is tuned with, made once per problem and process at its first slice.
struct ProblemTargets {
  std::vector<LoopTarget> targets;
  std::vector<std::unique_ptr<Proposer>> proposers;  // owned here; targets point into them
};

// Builds a problem's targets. `warm_start` lists the best_config.json files of the
// problems already tuned that are nearest to it (same types and layouts, closest shape
// first): their configs go first, re-validated like every proposal.
using ProblemTargetsFactory = std::function<Result<ProblemTargets>(
    const ProblemSetEntry& entry, const std::vector<std::filesystem::path>& warm_start)>;

struct ProblemResult {
  std::string name;
  GemmProblem problem;
  std::int64_t count = 1;
  std::int64_t evals = 0;
  std::optional<double> ours_ms, vendor_ms;
  // Relative spreads of the two medians (analysis::relative_spread); nullopt: not recorded.
  std::optional<double> ours_spread, vendor_spread;
  std::string template_name;  // of the winner
  std::string stop;           // why its search last stopped
};

struct ProblemSetReport {
  std::string name, source;
  StopReason reason = StopReason::kMaxEvals;  // why the set ended
  std::string detail;
  std::int64_t evals = 0;     // of the whole set
  std::vector<ProblemResult> problems;
  nlohmann::json summary;     // what went to summary.json
};

// Opens (or resumes) the set in options.results_dir and runs it to its end: failed_precondition
// when the folder holds another set (saying what differs) or is in use; the loop's errors
// otherwise. The runner, retimer and factory's targets must outlive the call.
Result<ProblemSetReport> run_problem_set(CandidateRunner& runner, const ProblemSetOptions& options,
                                         const ProblemTargetsFactory& make_targets, LoopObserver& observer,
                                         const std::atomic<bool>* stop = nullptr, Evaluator* retimer = nullptr);

// run_problem_set's checks of an existing folder (it holds this set, not another set or
// a single problem's run), made without writing anything. A missing folder passes.
Status check_problem_set_folder(const std::filesystem::path& dir, const ProblemSet& set);

// The problems already tuned (an ok result) that are like `problem` (same types, layouts,
// alpha/beta and epilogue), nearest first by log-distance of M, N and K; `tuned` gives
// each problem's result. At most `limit`.
std::vector<std::size_t> nearest_tuned(const ProblemSet& set, std::size_t problem,
                                       const std::vector<bool>& tuned, std::size_t limit);

// The problem's winner against the vendor library (analysis/vendor_rule.h): what
// libtilesmith_gemm would run for it once exported.
analysis::VendorComparison against_vendor(const ProblemResult& problem);

// summary.json's content and the table printed at the end. Per step, each problem counts
// at the time of what a package would run (against_vendor: the tuned kernel or the
// vendor library), next to the vendor's and ours as tuned.
nlohmann::json problem_set_summary_json(const ProblemSetReport& report);
std::string format_problem_set_summary(const ProblemSetReport& report);

}  // namespace tilesmith
