#include "tuner/records/objective.h"

#include <cmath>

namespace tilesmith {

namespace {
// Each objective's words, in one table: the flag's name, the unit of its value, the phrase.
struct Words {
  Objective objective;
  const char* name;
  const char* unit;
  const char* description;
};
constexpr Words kWords[] = {
    {Objective::kTime, "time", "ms", "median time"},
    {Objective::kEnergy, "energy", "J", "energy per launch"},
    {Objective::kEdp, "edp", "J*s", "energy-delay product"},
};

const Words& words(Objective o) {
  for (const Words& w : kWords)
    if (w.objective == o) return w;
  return kWords[0];
}
}  // namespace

const char* objective_name(Objective o) { return words(o).name; }
const char* objective_unit(Objective o) { return words(o).unit; }
const char* objective_description(Objective o) { return words(o).description; }

const std::vector<std::string>& objective_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Words& w : kWords) n.push_back(w.name);
    return n;
  }();
  return names;
}

Result<Objective> parse_objective(std::string_view text) {
  for (const Words& w : kWords)
    if (text == w.name) return w.objective;
  return Status::invalid("unknown objective '" + std::string(text) + "' (time, energy or edp)");
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
