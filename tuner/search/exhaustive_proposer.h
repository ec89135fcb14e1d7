#pragma once
// "exhaustive" (grid): the valid configurations in enumeration order (odometer order,
// last parameter fastest), skipping every one already in the history. Over repeated
// calls it visits each valid configuration exactly once.
// Deterministic (ignores the seed). Stateless between calls; not thread-safe.

#include "tuner/search/proposer.h"

namespace tilesmith {

class ExhaustiveProposer final : public Proposer {
 public:
  std::string name() const override { return "exhaustive"; }
  bool independent() const override { return true; }
  // status failed_precondition when every valid configuration has been tried.
  ProposalBatch propose(const ProposalRequest& request) override;
};

}  // namespace tilesmith
