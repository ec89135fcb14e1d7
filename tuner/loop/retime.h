#pragma once
// The end of a run: the fastest few configs of a template are measured again, and the
// fastest re-measurement wins. A search measurement that was lucky (a quiet GPU, a
// favourable clock) does not become the answer on its own; a finalist that fails its
// re-run (wrong_result, a launch error) is out.

#include <functional>
#include <vector>

#include "registry/kernel_template.h"
#include "registry/problem.h"
#include "runtime/evaluator.h"
#include "tuner/records/history.h"

namespace tilesmith {

struct RetimeResult {
  std::string template_name;
  HistoryRow row;        // the finalist's history row (its search measurement)
  Evaluation retimed;    // the re-timing
  bool winner = false;
};

// The `top` fastest ok evaluation rows of the template (one per config), fastest first.
std::vector<const HistoryRow*> retime_finalists(const std::vector<HistoryRow>& rows, const std::string& template_name,
                                                int top);

// Re-measures each finalist with `evaluator`, calling `after_each` after each one. Stops
// early (returning what it has) when `stop` says so. Marks the winner (the fastest ok
// re-timing), if any.
std::vector<RetimeResult> retime(Evaluator& evaluator, const KernelTemplate& tmpl, const GemmProblem& problem,
                                 const std::vector<const HistoryRow*>& finalists, const std::function<bool()>& stop,
                                 const std::function<void(const RetimeResult&)>& after_each);

// The winner of retime()'s results; nullptr when none passed.
const RetimeResult* retime_winner(const std::vector<RetimeResult>& results);

}  // namespace tilesmith
