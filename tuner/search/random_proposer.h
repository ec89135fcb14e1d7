#pragma once
// "random": configurations drawn uniformly from the valid space, distinct, never one
// already in the history. The baseline every other strategy must beat.
// Deterministic for a seed and history. The history is mapped onto the space row by row as
// it grows (detail/history_index.h), not again in every call, so a call's cost does not
// grow with the night. Not thread-safe: one propose() at a time.

#include "tuner/search/proposer.h"
#include "tuner/search/detail/history_index.h"
#include "tuner/search/detail/view_cache.h"

namespace tilesmith {

class RandomProposer final : public Proposer {
 public:
  std::string name() const override { return "random"; }
  bool independent() const override { return true; }
  // Fewer than request.count proposals only when fewer untried valid configs remain;
  // status failed_precondition when none remain.
  ProposalBatch propose(const ProposalRequest& request) override;
  // History rows the last propose() mapped (only the new ones, unless it started over).
  size_t last_absorbed_rows() const { return history_.absorbed_last(); }

 private:
  proposers::detail::ViewCache views_;
  proposers::detail::HistoryIndex history_;
};

}  // namespace tilesmith
