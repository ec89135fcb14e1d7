#pragma once
// What one problem's folder of a problem set says about it, read without changing it:
// evaluations, the best, the vendor time, whether its search is done and whether its
// finalists were re-timed. The set's scheduler state is derived from these alone, so a
// set stopped at any moment resumes with nothing extra to keep consistent.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/evaluation.h"
#include "tuner/records/best_config.h"
#include "tuner/records/objective.h"

namespace tilesmith {

struct ProblemFolder {
  std::int64_t evals = 0;                       // evaluation rows of history.csv
  // Per evaluation row, in order: its value under the run's objective (the median time by
  // default) when it has one.
  std::vector<std::optional<double>> evaluated;
  std::optional<double> search_best;            // the lowest of them
  std::optional<Evaluation> vendor;             // the last vendor event of the journal
  std::string vendor_name;
  std::string last_stop;                        // the reason of the journal's last end event
  bool done = false;    // the last session ended on a plateau, an exhausted space or no new proposals
  bool retimed = false; // the last session re-timed the finalists and ended
  std::vector<BestEntry> winners;               // best_config.json (empty when missing)
};

// NotFound-free: a missing folder or file reads as empty. parse_error for a history or
// best_config.json that cannot be read. `objective`: what the rows are ranked by.
Result<ProblemFolder> read_problem_folder(const std::filesystem::path& dir, Objective objective = Objective::kTime);

// The best entry of best_config.json by its objective (entry_objective_value: the fastest
// for a run tuned for time), if any.
const BestEntry* best_winner(const ProblemFolder& folder);
// An entry's median time (metrics.median_ms), when positive.
std::optional<double> winner_ms(const BestEntry& entry);

}  // namespace tilesmith
