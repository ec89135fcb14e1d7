#pragma once
// What a tuning run minimises (autotune-loop --objective; docs/timing-and-tolerances.md,
// "Objectives"): the median time of a launch (the default), the energy of one launch, or
// their product, the energy-delay product. Every place that picks "the best" (the loop's
// best so far, the proposers' targets, the certification of the finalists, best_config.json,
// problem sets, export) asks objective_value() here, so they cannot disagree on what
// "better" means. Pure.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "runtime/evaluation.h"
#include "tuner/records/history.h"

namespace tilesmith {

enum class Objective { kTime, kEnergy, kEdp };

// "time", "energy", "edp": the flag's words, also what best_config.json and the journal record.
const char* objective_name(Objective o);
const std::vector<std::string>& objective_names();
// invalid_argument naming the choices for any other text.
Result<Objective> parse_objective(std::string_view text);
// The unit of objective_value(): "ms", "J", "J*s".
const char* objective_unit(Objective o);
// For sentences: "median time", "energy per launch", "energy-delay product".
const char* objective_description(Objective o);
// Whether the objective needs the energy counter (the evaluator's energy window on).
bool needs_energy(Objective o);

// The value the run minimises, lower is better: the median time in ms (time), the energy
// of one launch in joules (energy), joules x seconds (edp). nullopt when a figure it needs is
// missing, not finite or not positive: such a candidate cannot be ranked, and counts as a
// failure wherever candidates are ranked.
std::optional<double> objective_value(Objective o, std::optional<double> median_ms,
                                      std::optional<double> joules_per_launch);
// The same for an ok evaluation row of history.csv; nullopt for any other row.
std::optional<double> objective_value(Objective o, const HistoryRow& row);
// The same for an ok evaluation; nullopt for any other.
std::optional<double> objective_value(Objective o, const Evaluation& e);

}  // namespace tilesmith
