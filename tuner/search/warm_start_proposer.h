#pragma once
// A proposer that evaluates earlier winners first (tuner/search/warm_start.h), then hands over.
//
//  - While seeds remain that validate for this request (ParamSpace::validate with the
//    request's context) and are not in the request's history (configs compared exactly),
//    a batch holds only those seeds, in seed order, at most request.count of them; every
//    Proposal and the batch say "warm-start", the rationale names the seed's origin.
//  - Once none remains, every call goes to the wrapped proposer unchanged.
//  - Seeds that do not validate are skipped; the first call that sees any says once, via
//    `on_event`, how many and the first reason.
//
// Deterministic: the proposals depend only on the seeds, the request and what the wrapped
// proposer answers, so a resumed run (same history) proposes what the killed one would
// have. Not thread-safe: one propose() at a time.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tuner/search/proposer.h"
#include "tuner/search/warm_start.h"

namespace tilesmith {

inline constexpr const char* kWarmStartProposerName = "warm-start";

struct WarmStartOptions {
  std::string label;  // prefixes event lines, e.g. the template's name; may be empty
  // Called with a one-line description of the seeds skipped as invalid (for the loop's
  // log). May be empty.
  std::function<void(const std::string&)> on_event;
  // An earlier search's measurements of the template elsewhere (`--prior`, a set's
  // neighbours' histories): handed to the wrapped proposer with every request
  // (ProposalRequest::prior) that does not carry one already.
  std::vector<PriorMeasurement> prior;
};

class WarmStartProposer final : public Proposer {
 public:
  WarmStartProposer(std::vector<WarmStartSeed> seeds, std::unique_ptr<Proposer> inner, WarmStartOptions options = {});

  std::string name() const override;  // "warm-start+<inner>"
  // The seeds are this proposer's own; on_event must be thread-safe (the run's is spdlog).
  bool independent() const override { return inner_->independent(); }
  ProposalBatch propose(const ProposalRequest& request) override;

 private:
  std::vector<WarmStartSeed> seeds_;
  std::unique_ptr<Proposer> inner_;
  WarmStartOptions options_;
  bool reported_ = false;
};

}  // namespace tilesmith
