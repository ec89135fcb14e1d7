#pragma once
// tilesmith_search_bench --set: the split of a generation over templates, measured on
// recorded problem sets. The recordings are grouped by problem; each problem's recordings
// run together, one template each (evolve), through the whole loop with the replay
// backend (run_loop over several recordings), once per allocation, over seeds
// first_seed .. first_seed + seeds - 1; targets are within options.targets of the fastest
// configuration over all of the problem's templates. Prints per problem its templates, a
// markdown row per allocation and target (median, quartiles, worst seed, misses, and where
// the evaluations went until the first target), and a summary table at the end
// (docs/search.md, "Budget across templates").

#include <memory>
#include <string>
#include <vector>

#include "runtime/replay/recording.h"
#include "tuner/bench/search_run.h"
#include "tuner/search/template_allocation.h"

namespace tilesmith::bench {

// `allocations`: names parse_template_allocation takes. Returns the exit code: 0, 1 when
// a run failed (said on stderr), 2 for an unknown allocation.
int run_sets(const std::vector<std::shared_ptr<const replay::Recording>>& recordings,
             const std::vector<std::string>& allocations,
             const AllocationOptions& allocation_options, int seeds, int first_seed, int jobs,
             const SearchRunOptions& options);

}  // namespace tilesmith::bench
