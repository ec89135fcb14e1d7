#pragma once
// Keeps the SpaceView of the last space a proposer was asked about, so a proposer
// called once per generation enumerates its space once. Not thread-safe (one per
// proposer, and proposers handle one propose() at a time).

#include <cstdint>
#include <memory>
#include <string>

#include "tuner/search/detail/space_view.h"

namespace tilesmith::proposers::detail {

class ViewCache {
 public:
  explicit ViewCache(ViewLimits limits = {}) : limits_(limits) {}
  // `prior`: ProposalRequest::prior, the same vector on every call of a run (told apart by
  // its address and size).
  std::shared_ptr<const SpaceView> get(const ParamSpace& space, const SpaceContext& ctx,
                                       const std::vector<PriorMeasurement>* prior = nullptr,
                                       bool prior_feature = false) {
    if (prior && prior->empty()) prior = nullptr;
    std::string key = SpaceView::fingerprint(space, ctx);
    if (prior) key += "|prior@" + std::to_string(reinterpret_cast<std::uintptr_t>(prior)) + "#" +
                      std::to_string(prior->size()) + (prior_feature ? "+f" : "");
    if (!view_ || key != key_) {
      view_ = SpaceView::build(space, ctx, limits_, prior, prior_feature);
      key_ = std::move(key);
    }
    return view_;
  }

 private:
  ViewLimits limits_;
  std::string key_;
  std::shared_ptr<const SpaceView> view_;
};

}  // namespace tilesmith::proposers::detail
