#pragma once
// The checks every offline proposer makes on a request before using it.

#include "base/status.h"
#include "tuner/search/proposer.h"

namespace tilesmith::proposers {

// invalid_argument without a space or with a negative count; the space's context
// problems (an expression reads a constant the context lacks) as failed_precondition.
Status check_request(const ProposalRequest& request);

}  // namespace tilesmith::proposers
