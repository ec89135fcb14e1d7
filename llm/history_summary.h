#pragma once
// One pass over the tuning history that collects what the prompt shows: counts per
// outcome, the best distinct configs, the most recent failures per outcome and, per
// parameter value, how often it was tried, how often it worked and its best score. The
// score is what the run minimises: the median time, or its other objective (energy).
// O(n log n) in the history length; 100k trials take milliseconds.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "registry/config.h"
#include "registry/outcome.h"
#include "registry/space.h"

namespace tilesmith::llm {

// A history entry as the llm module sees it: views into the caller's records (the tuner's
// Trial), so that a long history is not copied. Valid while the caller's records are.
struct TrialView {
  const Config* config = nullptr;  // never null
  Outcome outcome = Outcome::kInvalid;
  std::optional<double> score;     // set for ok trials that can be ranked; lower is better
  std::string_view message;        // failure reason or compile-log excerpt
  std::optional<double> median_ms;  // of an ok trial, where the score is not the time
};

struct ValueStats {
  std::size_t tried = 0;
  std::size_t ok = 0;
  std::optional<double> best_score;
};

struct HistorySummary {
  std::size_t total = 0;
  std::map<Outcome, std::size_t> by_outcome;
  // Indices into the history: ok trials with a score, best first, one per distinct config.
  std::vector<std::size_t> best;
  // Per failing outcome (in enum order): indices, newest first, and how many in total.
  struct Failures {
    Outcome outcome;
    std::size_t total = 0;
    std::vector<std::size_t> recent;
  };
  std::vector<Failures> failures;
  // Per parameter (in space.parameters() order): value -> stats, for values tried.
  std::vector<std::map<std::int64_t, ValueStats>> per_parameter;
};

HistorySummary summarize_history(std::span<const TrialView> history, const ParamSpace& space,
                                 std::size_t max_best, std::size_t max_failures_per_outcome);

}  // namespace tilesmith::llm
