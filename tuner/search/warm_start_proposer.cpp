#include "tuner/search/warm_start_proposer.h"

#include <algorithm>

#include <set>

namespace tilesmith {

WarmStartProposer::WarmStartProposer(std::vector<WarmStartSeed> seeds, std::unique_ptr<Proposer> inner,
                                     WarmStartOptions options)
    : seeds_(std::move(seeds)), inner_(std::move(inner)), options_(std::move(options)) {}

std::string WarmStartProposer::name() const { return std::string(kWarmStartProposerName) + "+" + inner_->name(); }

ProposalBatch WarmStartProposer::propose(const ProposalRequest& given) {
  ProposalRequest request = given;
  if (!request.prior && !options_.prior.empty()) request.prior = &options_.prior;
  // Without a space nothing can be validated: the wrapped proposer reports the request.
  if (seeds_.empty() || !request.space || request.count < 1) return inner_->propose(request);

  // Recomputed from the history on every call rather than remembered, so that a resumed
  // run, whose history holds the seeds measured before the stop, picks up exactly here.
  std::set<Config> tried;
  if (request.history)
    for (const auto& t : *request.history) tried.insert(t.config);

  ProposalBatch out;
  out.proposer = kWarmStartProposerName;
  int skipped = 0;
  std::string first_reason;
  for (const auto& seed : seeds_) {
    if (Status st = request.space->validate(seed.config, request.context); !st.ok()) {
      if (seed.quiet_if_invalid) continue;  // expected for a set's related problems
      if (skipped++ == 0) first_reason = seed.origin + ": " + st.message();
      continue;
    }
    if (tried.count(seed.config) || static_cast<int>(out.proposals.size()) >= request.count) continue;
    out.proposals.push_back({seed.config, "warm start: " + seed.origin, kWarmStartProposerName});
  }
  if (!reported_) {
    reported_ = true;
    const auto told = std::count_if(seeds_.begin(), seeds_.end(), [](const WarmStartSeed& s) { return !s.quiet_if_invalid; });
    // Validity depends only on the space and the context, which stay the same for one
    // proposer, so the first call tells the whole story.
    if (skipped > 0 && options_.on_event)
      options_.on_event((options_.label.empty() ? "" : options_.label + ": ") + "warm start: " +
                        std::to_string(skipped) + " of " + std::to_string(told) +
                        " seed(s) skipped, not valid for this problem (first: " + first_reason + ")");
  }
  if (out.proposals.empty()) return inner_->propose(request);
  return out;
}

}  // namespace tilesmith
