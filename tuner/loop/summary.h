#pragma once
// The summary printed when a run ends: why it stopped, where the time went (the share
// of wall time spent measuring on the GPU), the top configs, outcome counts by
// proposer, the re-timed finalists and what went to best_config.json. Pure formatting.

#include <cstddef>
#include <filesystem>
#include <string>

#include "registry/device_facts.h"
#include "registry/problem.h"
#include "tuner/loop/loop.h"

namespace tilesmith {

struct SummaryContext {
  GemmProblem problem;
  DeviceFacts device;
  std::filesystem::path results_dir;
  std::size_t top = 5;
};

// "P(best found within 5% of the space's best) = 0.93 (the proposer's estimate after 240
// evaluations)", or why there is none.
std::string convergence_line(const LoopReport& report);

std::string format_run_summary(const LoopReport& report, const SummaryContext& context);

}  // namespace tilesmith
