#pragma once
// "random": configurations drawn uniformly from the valid space, distinct, never one
// already in the history. The baseline every other strategy must beat.
// Deterministic for a seed and history. Not thread-safe: one propose() at a time.

#include "tuner/search/proposer.h"
#include "tuner/search/detail/view_cache.h"

namespace tilesmith {

class RandomProposer final : public Proposer {
 public:
  std::string name() const override { return "random"; }
  // Fewer than request.count proposals only when fewer untried valid configs remain;
  // status failed_precondition when none remain.
  ProposalBatch propose(const ProposalRequest& request) override;

 private:
  proposers::detail::ViewCache views_;
};

}  // namespace tilesmith
