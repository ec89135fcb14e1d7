#pragma once
// A tuning run's settings, whatever gave them: autotune-loop's flags and --config file fill
// them (cli/run_flags.h), tuner/assembly builds the run from them. Each is named after the
// flag that sets it, and errors name the flag, so the user reads the words they typed.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "registry/problem.h"
#include "tuner/assembly/open_evaluator.h"
#include "tuner/assembly/proposer_factory.h"
#include "tuner/records/objective.h"

namespace tilesmith {

struct RunSettings {
  // The problem as given (--m/--n/--k and friends); otherwise problem_file (--problem-file),
  // or with --backend replay the recording's. A set (problems) takes neither.
  std::optional<GemmProblem> problem;
  std::string problem_file;
  std::string problems;  // a problem set file (docs/problem-sets.md)
  std::vector<std::string> templates;
  std::string kernels_dir;
  EvaluatorSettings evaluator;
  std::string proposer = "auto";
  std::string fallback_proposer;
  // The endpoint, model and limits (--llm-*, --provider); its log files go into `results`.
  LlmSettings llm;
  int candidates = 8;
  // How a generation is split over several templates: "gain" (by what each can still
  // gain) or "even" (candidates each); tuner/search/template_allocation.h.
  std::string allocation = "gain";
  int generations = 0;
  std::int64_t max_evals = 0;
  double hours = 0;
  int patience = 0;
  // --stop-when-converged [MARGIN[/PROBABILITY]]: unset, "" (the defaults) or the text.
  std::optional<std::string> stop_when_converged;
  std::string results = "results";
  std::uint64_t seed = 1;
  // What the run minimises (--objective): the median time, or with energy and edp the energy
  // counter's figure, which turns the evaluator's energy window on (kEnergyWindowMs).
  Objective objective = Objective::kTime;
  int retime = 3;
  // --race: LoopOptions::race_margin (0: off); a fraction, parsed from "25%", "0.25" or "off".
  double race_margin = 0.25;
  // --overlap: LoopOptions::overlap_generations; "auto" is on for GPUs, off for the replay
  // backend (whose answers take no time, and whose runs are compared exactly).
  std::string overlap = "auto";
  int retime_rounds = 16;  // the re-timing's budget of interleaved rounds (tuner/loop/certify.h)
  // --retime-within: LoopOptions::retime_within, parsed from "25%" or "0.25"; nullopt ("all"):
  // every template is re-timed.
  std::optional<double> retime_within = 0.25;
  std::vector<std::string> warm_start;  // best_config.json files or results folders
  std::vector<std::string> prior;       // results folders, history.csv or Kernel Tuner caches (tuner/search/prior.h)
  int compile_threads = -1;             // -1: automatic
  bool no_vendor = false;
};

}  // namespace tilesmith
