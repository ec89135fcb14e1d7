#include "tuner/search/random_proposer.h"

#include <random>

#include "tuner/search/request_check.h"

namespace tilesmith {

using proposers::detail::PointSet;

ProposalBatch RandomProposer::propose(const ProposalRequest& request) {
  ProposalBatch batch;
  batch.proposer = name();
  if (Status st = proposers::check_request(request); !st.ok()) {
    batch.status = st;
    return batch;
  }
  auto view = views_.get(*request.space, request.context);
  history_.update(view, request.history);
  const PointSet& tried = history_.tried();
  // Points being measured are left out like the tried ones (their rows are coming).
  PointSet pending;
  if (request.pending)
    for (const Config& c : *request.pending)
      if (auto p = request.space->from_config(c); p.ok()) pending.insert(std::move(p).value());
  std::mt19937_64 rng(proposers::detail::mix_seed(request.seed, history_.size()));
  std::vector<PointValues> chosen;
  if (view->enumerated()) {
    // Partial Fisher-Yates over the untried points: uniform, without replacement.
    std::vector<size_t> untried;
    untried.reserve(view->points().size());
    for (size_t i = 0; i < view->points().size(); ++i)
      if (!tried.count(view->points()[i]) && !pending.count(view->points()[i])) untried.push_back(i);
    for (size_t k = 0; k < untried.size() && chosen.size() < static_cast<size_t>(request.count);
         ++k) {
      std::uniform_int_distribution<size_t> pick(k, untried.size() - 1);
      std::swap(untried[k], untried[pick(rng)]);
      chosen.push_back(view->points()[untried[k]]);
    }
  } else {
    PointSet taken;
    const int attempts = 200 * request.count + 1000;
    for (int a = 0; a < attempts && chosen.size() < static_cast<size_t>(request.count); ++a) {
      auto p = view->sample(rng);
      if (!p) break;
      if (tried.count(*p) || pending.count(*p) || !taken.insert(*p).second) continue;
      chosen.push_back(std::move(*p));
    }
  }
  for (const PointValues& p : chosen)
    batch.proposals.push_back(
        {request.space->to_config(p), "uniform random sample of the valid space"});
  if (batch.proposals.empty() && request.count > 0)
    batch.status = Status::failed_precondition("random: no untried valid configuration is left");
  return batch;
}

}  // namespace tilesmith
