#pragma once
// The flags of autotune-loop's tuning run, added to the top-level app (autotune-loop
// --m 4096 ... runs); a CLI11 config file (--config FILE, TOML or INI) holds the settings a
// user repeats. What they do is cli/run_command.h's, through tuner/assembly.

#include <optional>
#include <string>

#include "cli/cli_common.h"
#include "cli/evaluator_flags.h"
#include "tuner/assembly/run_settings.h"

namespace tilesmith::cli {

// The run's settings, and what the command line adds: the problem as flags (checked and
// turned into RunSettings::problem by the run command) and the output's.
struct RunFlags : RunSettings {
  ProblemFlags problem_flags;
  int verbose = 0;
  bool quiet = false;
  std::string log_file;  // empty: <results>/autotune-loop.log
  bool no_log_file = false;
  std::string progress = "auto";
  double status_interval_s = 30;
};

// --race's value: "25%" or "0.25" -> 0.25, "off" or "0" -> 0; invalid_argument naming the
// value otherwise (negative, not a number, over 10).
Result<double> parse_race_margin(const std::string& text);
// --retime-within's value: "25%" or "0.25" -> 0.25, "all" -> nullopt (every template is
// re-timed); invalid_argument naming the value otherwise (negative, not a number, over 10).
Result<std::optional<double>> parse_retime_within(const std::string& text);

// Adds the run's flags (and --config) to the top-level app.
void add_run_flags(CLI::App& app, RunFlags& flags);

}  // namespace tilesmith::cli
