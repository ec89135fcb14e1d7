#pragma once
// The flags of autotune-loop's tuning run, added to the top-level app (autotune-loop
// --m 4096 ... runs); a CLI11 config file (--config FILE, TOML or INI) holds the settings a
// user repeats. What they do is cli/run_command.h's.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/cli_common.h"
#include "cli/evaluator_setup.h"

namespace tilesmith::cli {

struct RunFlags {
  ProblemFlags problem;
  std::string problem_file;
  std::string problems;  // a problem set file (docs/problem-sets.md)
  std::vector<std::string> templates;
  std::string kernels_dir;
  EvaluatorFlags evaluator;
  std::string proposer = "auto";
  std::string fallback_proposer;
  std::string llm_url, llm_model, llm_api_key_env, provider = "openai";
  double llm_timeout_s = 600, llm_connect_timeout_s = 10, llm_deadline_s = 2400;
  int llm_retries = 4;
  std::optional<double> llm_temperature;
  int llm_max_tokens = 16384, llm_prompt_tokens = 12000;
  int candidates = 8;
  int generations = 0;
  std::int64_t max_evals = 0;
  double hours = 0;
  int patience = 0;
  // --stop-when-converged [MARGIN[/PROBABILITY]]: unset, "" (the defaults) or the text.
  std::optional<std::string> stop_when_converged;
  std::string results = "results";
  std::uint64_t seed = 1;
  int retime = 3;
  std::vector<std::string> warm_start;  // best_config.json files or results folders
  int compile_threads = -1;  // -1: automatic
  bool no_vendor = false;
  int verbose = 0;
  bool quiet = false;
  std::string log_file;  // empty: <results>/autotune-loop.log
  bool no_log_file = false;
  std::string progress = "auto";
  double status_interval_s = 30;
};

// Adds the run's flags (and --config) to the top-level app.
void add_run_flags(CLI::App& app, RunFlags& flags);

}  // namespace tilesmith::cli
