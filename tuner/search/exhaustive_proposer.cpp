#include "tuner/search/exhaustive_proposer.h"

#include "tuner/search/detail/space_view.h"
#include "tuner/search/request_check.h"

namespace tilesmith {

ProposalBatch ExhaustiveProposer::propose(const ProposalRequest& request) {
  ProposalBatch batch;
  batch.proposer = name();
  if (Status st = proposers::check_request(request); !st.ok()) {
    batch.status = st;
    return batch;
  }
  // The history and the points being measured; configs that do not map onto the space
  // cannot collide.
  proposers::detail::PointSet tried;
  auto leave_out = [&](const Config& c) {
    if (auto p = request.space->from_config(c); p.ok()) tried.insert(std::move(p).value());
  };
  if (request.history)
    for (const Trial& t : *request.history) leave_out(t.config);
  if (request.pending)
    for (const Config& c : *request.pending) leave_out(c);
  std::uint64_t position = 0;
  request.space->for_each_valid(request.context, [&](const PointValues& p) {
    ++position;
    if (batch.proposals.size() >= static_cast<size_t>(request.count)) return false;
    if (!tried.count(p))
      batch.proposals.push_back({request.space->to_config(p), "exhaustive: valid configuration #" +
                                                                  std::to_string(position) +
                                                                  " in enumeration order"});
    return batch.proposals.size() < static_cast<size_t>(request.count);
  });
  if (batch.proposals.empty() && request.count > 0)
    batch.status =
        Status::failed_precondition("exhaustive: every valid configuration has been tried");
  return batch;
}

}  // namespace tilesmith
