#pragma once
// A run's history.csv as a Kernel Tuner cache file: every configuration of one template
// that the run evaluated, with its measured time or its failure, so the space the run
// explored can be replayed without a GPU (`--backend replay --replay-file`) and searched
// again by the search benchmark. Recording a space is a run with `--proposer random`
// (uniform over the valid space; the whole space when the budget allows) and
// `--retime 0`, then this conversion (`autotune-loop history --kernel-tuner-cache`).
//
// Pure functions over rows already read; thread-compatible.

#include <string>
#include <vector>

#include "base/status.h"
#include "registry/problem.h"
#include "runtime/replay/kernel_tuner_cache.h"
#include "tuner/records/history.h"

namespace tilesmith {

// The row's problem from its columns; the leaky slope is only in problem_key, so the
// rebuilt problem is checked against the key (and the slope taken from it). invalid,
// naming the row, when they disagree or a column does not parse.
Result<GemmProblem> problem_of_row(const HistoryRow& r);

// The evaluated rows of `template_name` (empty: the one template the rows hold) as a
// cache: tune_params are the values each parameter took in those rows, one record per
// distinct configuration from its first evaluation (a later re-timing of the same
// configuration is not a second record); an ok record's "time" is the measured median
// (tilesmith keeps the summary of a measurement, not its repetitions, so "times" is
// absent and a replay answers with that median), a failure its outcome. The "tilesmith"
// object holds the whole problem, the device and the template's source hash.
// Errors (invalid_argument, naming what to do): no evaluated rows of the template;
// several templates and none named; rows of several problems, template versions or
// devices (a cache holds one measured space); a configuration that is not a JSON object
// of integers.
Result<replay::KernelTunerCache> kernel_tuner_cache_from_history(const std::vector<HistoryRow>& rows,
                                                                 const std::string& template_name);

}  // namespace tilesmith
