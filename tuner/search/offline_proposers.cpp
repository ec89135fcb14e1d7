#include "tuner/search/offline_proposers.h"

#include "tuner/search/evolve_proposer.h"
#include "tuner/search/exhaustive_proposer.h"
#include "tuner/search/random_proposer.h"

namespace tilesmith {

Result<std::unique_ptr<Proposer>> make_offline_proposer(const std::string& name) {
  if (name == "evolve" || name == "surrogate")
    return std::unique_ptr<Proposer>(new EvolveProposer());
  if (name == "random") return std::unique_ptr<Proposer>(new RandomProposer());
  if (name == "exhaustive" || name == "grid")
    return std::unique_ptr<Proposer>(new ExhaustiveProposer());
  return Status::not_found("unknown offline proposer '" + name +
                           "' (known: evolve, random, exhaustive)");
}

std::vector<std::string> offline_proposer_names() { return {"evolve", "random", "exhaustive"}; }

std::string default_offline_proposer() { return "evolve"; }

}  // namespace tilesmith
