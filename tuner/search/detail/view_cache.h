#pragma once
// Keeps the SpaceView of the last space a proposer was asked about, so a proposer
// called once per generation enumerates its space once. Not thread-safe (one per
// proposer, and proposers handle one propose() at a time).

#include <memory>
#include <string>

#include "tuner/search/detail/space_view.h"

namespace tilesmith::proposers::detail {

class ViewCache {
 public:
  explicit ViewCache(ViewLimits limits = {}) : limits_(limits) {}
  std::shared_ptr<const SpaceView> get(const ParamSpace& space, const SpaceContext& ctx) {
    std::string key = SpaceView::fingerprint(space, ctx);
    if (!view_ || key != key_) {
      view_ = SpaceView::build(space, ctx, limits_);
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
