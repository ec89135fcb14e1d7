#pragma once
// What people ask of a history: the fastest configs, outcome counts by proposer and by
// generation, and the best-so-far over evaluations and over time. Used by
// `autotune-loop history` and by the summary at the end of a run. Pure functions over
// rows; the returned pointers point into the rows given.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tuner/records/history.h"
#include "tuner/records/objective.h"

namespace tilesmith {

// The best ok evaluation rows by `objective` (the fastest by median time by default), one
// per (template, config), at most k; rows without the objective's figure are left out.
std::vector<const HistoryRow*> top_configs(const std::vector<HistoryRow>& rows, std::size_t k,
                                           Objective objective = Objective::kTime);

// Outcome counts per group. Evaluation rows count under their outcome; proposal rows
// (rejected before evaluation) under "rejected".
struct OutcomeTable {
  std::vector<std::string> columns;  // outcome names that occur (enum order), then "rejected"
  std::vector<std::pair<std::string, std::map<std::string, std::int64_t>>> groups;  // in first-seen order
};
// Grouped by "proposer" or "proposer:model".
OutcomeTable outcomes_by_proposer(const std::vector<HistoryRow>& rows);
// Grouped by generation, in generation order.
OutcomeTable outcomes_by_generation(const std::vector<HistoryRow>& rows);

// One point per improvement of the fastest ok median time.
struct BestPoint {
  std::int64_t evaluation = 0;  // 1-based count of evaluation rows up to this one
  double elapsed_s = 0;         // since the first row's timestamp
  const HistoryRow* row = nullptr;
};
std::vector<BestPoint> best_so_far(const std::vector<HistoryRow>& rows);

// Seconds since the epoch of a timestamp column value; nullopt when it does not parse.
std::optional<double> parse_timestamp(const std::string& iso);

// Plain-text tables, columns padded to their widest cell; cells that look numeric are
// right-aligned.
std::string format_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows);
// "  1  gemm_tiled  5.712  24.07  0.47x  gen 3  row 17  evolve  {...}"; for an objective
// other than time, its value (J, J*s) after the median.
std::string format_top_table(const std::vector<const HistoryRow*>& top, Objective objective = Objective::kTime);
std::string format_outcome_table(const std::string& first_header, const OutcomeTable& table);
std::string format_best_so_far(const std::vector<BestPoint>& points);

// The whole report of `autotune-loop history`, as text or as JSON.
std::string format_history_report(const std::vector<HistoryRow>& rows, std::size_t top_k);
nlohmann::json history_report_json(const std::vector<HistoryRow>& rows, std::size_t top_k);

}  // namespace tilesmith
