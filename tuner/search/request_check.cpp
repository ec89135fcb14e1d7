#include "tuner/search/request_check.h"

namespace tilesmith::proposers {

Status check_request(const ProposalRequest& request) {
  if (!request.space) return Status::invalid("proposal request without a parameter space");
  if (request.count < 0) return Status::invalid("proposal request for a negative count");
  Status ctx = request.space->check_context(request.context);
  if (!ctx.ok()) return Status::failed_precondition(ctx.message());
  return {};
}

}  // namespace tilesmith::proposers
