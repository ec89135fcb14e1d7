#pragma once
// A best_config.json entry from what the loop knows: the winning history row (and its
// re-timing when there was one), the device, the template, the vendor baseline and
// where it all came from. Pure.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "registry/device_facts.h"
#include "registry/kernel_template.h"
#include "registry/problem.h"
#include "runtime/evaluation.h"
#include "tuner/records/best_config.h"
#include "tuner/records/history.h"

namespace tilesmith {

struct BestEntryContext {
  DeviceFacts device;
  GemmProblem problem;
  std::string run_id;
  std::string results_dir;
  std::string vendor_library;          // Evaluator::vendor_name()
  std::optional<Evaluation> vendor;    // this session's baseline, when there is one
  Objective objective = Objective::kTime;  // what the run minimised (recorded in the entry)
};

// The metrics object of an entry from a history row's columns (absent columns left out).
nlohmann::json metrics_from_row(const HistoryRow& row);

// metrics: the re-timing's ("source": "retime") or the row's ("source": "search"), plus
// "search_median_ms"; the time and, where measured, the energy per launch of both the
// winner and the vendor; vendor ratio from the context's baseline; provenance names the row.
BestEntry make_best_entry(const BestEntryContext& context, const KernelTemplate& tmpl, const HistoryRow& row,
                          const Evaluation* retimed);

}  // namespace tilesmith
