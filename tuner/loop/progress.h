#pragma once
// Where a run stands, for people: a snapshot the loop fills after every row, and its two
// renderings, the live status line of a terminal and the plain periodic log line of a
// nohup or tmux log. Pure formatting; thread-compatible.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace tilesmith {

struct LoopProgress {
  std::string label;                  // shown first in brackets when set (a problem set's problem and share)
  int generation = 0;                 // the generation under way (or last finished)
  std::int64_t evaluated = 0;         // evaluation rows of the whole run
  std::int64_t evaluated_session = 0; // of this session
  std::int64_t rejected = 0;          // proposal rows (rejected before evaluation) of the run
  std::map<std::string, std::int64_t> outcomes;  // evaluation rows by outcome name
  std::optional<double> best_ms, best_tflops, best_vendor_ratio;
  // The best's value when the run minimises something other than time ("0.0123 J"); "" otherwise.
  std::string best_objective;
  std::string best_template;
  // How the last generation was split over the templates ("tma_half 24, hmma 4"); "" with one.
  std::string split;
  // The run's convergence estimate: the probability that the best found is within
  // convergence_margin of the space's best (GenerationLoop's LoopReport::converged);
  // absent when the proposers cannot tell (yet).
  std::optional<double> converged;
  double convergence_margin = 0.05;
  double elapsed_s = 0;               // this session
  double measure_s = 0;               // this session's time measuring, averaged over the devices
  double per_minute = 0;              // candidates evaluated per minute in this session
  std::string workers;                // the workers' state ("" in-process or nothing to say)
  std::string budget_left;            // "3 generations, 40 evaluations, 1h02m" or "" (no limit)
};

// "1h02m03s", "4m05s", "12.3s".
std::string format_duration(double seconds);
// "gen 12 | 96 evaluated: 80 ok, 10 compile_error, 6 wrong_result | best 22.31 TFLOP/s (0.91x vendor) |
// P(within 5%) 0.93 | split tma_half 24, hmma 8 | 5m12s, 18.5/min, measuring 84% | workers: 2/2 busy, 1 crash | left: 104 evaluations", cut to
// `width` columns (0: no limit).
std::string format_status_line(const LoopProgress& p, std::size_t width = 0);
// The same facts for a log: no cut, "progress:" first.
std::string format_progress_line(const LoopProgress& p);

}  // namespace tilesmith
