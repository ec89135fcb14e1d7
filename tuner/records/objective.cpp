#include "tuner/records/objective.h"

#include <cmath>

namespace tilesmith {

const char* objective_name(Objective o) {
  switch (o) {
    case Objective::kTime: return "time";
    case Objective::kEnergy: return "energy";
    case Objective::kEdp: return "edp";
  }
  return "time";
}

const std::vector<std::string>& objective_names() {
  static const std::vector<std::string> names{"time", "energy", "edp"};
  return names;
}

Result<Objective> parse_objective(std::string_view text) {
  for (Objective o : {Objective::kTime, Objective::kEnergy, Objective::kEdp})
    if (text == objective_name(o)) return o;
  return Status::invalid("unknown objective '" + std::string(text) + "' (time, energy or edp)");
}

const char* objective_unit(Objective o) {
  switch (o) {
    case Objective::kTime: return "ms";
    case Objective::kEnergy: return "J";
    case Objective::kEdp: return "J*s";
  }
  return "ms";
}

const char* objective_description(Objective o) {
  switch (o) {
    case Objective::kTime: return "median time";
    case Objective::kEnergy: return "energy per launch";
    case Objective::kEdp: return "energy-delay product";
  }
  return "median time";
}

bool needs_energy(Objective o) { return o != Objective::kTime; }

std::optional<double> objective_value(Objective o, std::optional<double> median_ms,
                                      std::optional<double> joules_per_launch) {
  // A zero or negative figure is a measurement that went wrong, not a winner.
  auto usable = [](const std::optional<double>& v) { return v && std::isfinite(*v) && *v > 0; };
  if (!usable(median_ms)) return std::nullopt;
  if (o == Objective::kTime) return median_ms;
  if (!usable(joules_per_launch)) return std::nullopt;
  if (o == Objective::kEnergy) return joules_per_launch;
  return *joules_per_launch * (*median_ms / 1e3);
}

std::optional<double> objective_value(Objective o, const HistoryRow& row) {
  if (!row.evaluated() || !row.ok()) return std::nullopt;
  return objective_value(o, row.median_ms, row.joules_per_launch);
}

std::optional<double> objective_value(Objective o, const Evaluation& e) {
  if (!e.ok()) return std::nullopt;
  return objective_value(o, e.timing.median_ms,
                         e.telemetry ? e.telemetry->joules_per_launch : std::nullopt);
}

}  // namespace tilesmith
