#pragma once
// The offline proposers by name: what the loop falls back on without an LLM, and what
// the search benchmark compares.
//   random      uniform over the valid space (tuner/search/random_proposer.h)
//   exhaustive  every valid configuration in enumeration order (also "grid")
//   evolve      surrogate-guided search, the default (also "surrogate")

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "tuner/search/proposer.h"

namespace tilesmith {

// A new proposer; not_found naming the known ones for any other name.
Result<std::unique_ptr<Proposer>> make_offline_proposer(const std::string& name);
// Canonical names, default first: {"evolve", "random", "exhaustive"}.
std::vector<std::string> offline_proposer_names();
// "evolve".
std::string default_offline_proposer();

}  // namespace tilesmith
