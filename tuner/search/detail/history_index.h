#pragma once
// The history as the evolve proposer reads it, kept between calls so that a generation
// costs what its new rows cost rather than what the whole history does (docs/search.md,
// "Proposal cost"): each row's config is mapped onto the space once (its point, its
// model features, its index in an enumerated space), the successes are kept fastest
// first, the stall bookkeeping and the one-parameter effects are updated row by row.
//
// Contract: successive calls pass a history that extends the previous one (rows
// appended, as the loop's history grows). update() checks that the rows it holds still
// lead the history — the last 64 of them and 64 spread over the others, compared by
// value (no parsing, no allocation) — and starts over when they do not, when the history
// is shorter, or when the view changed. Rows are always absorbed one at a time in
// history order, so the state after update() depends only on the view and the rows: a
// resumed run (nothing kept) proposes exactly what an uninterrupted one (everything
// kept) would. A caller that rewrites rows in the middle of a history it passed before,
// in a way the spot checks miss, gets proposals made from the old rows.
//
// Not thread-safe; one per proposer.

#include <cstdint>
#include <memory>
#include <vector>

#include "tuner/search/detail/effects.h"
#include "tuner/search/detail/space_view.h"

namespace tilesmith::proposers::detail {

class HistoryIndex {
 public:
  // stall_gain: the relative improvement that counts as a gain for last_gain().
  explicit HistoryIndex(double stall_gain = 0.01) : stall_gain_(stall_gain) {}

  // Brings the index up to date with `history` (nullptr: empty) on `view`.
  void update(const std::shared_ptr<const SpaceView>& view, const std::vector<Trial>* history);

  // Rows that map onto the space, in history order (repeats of a point included).
  const std::vector<Observation>& observations() const { return observations_; }
  size_t size() const { return observations_.size(); }
  size_t ok_count() const { return ok_count_; }
  // Every point tried, whatever its outcome.
  const PointSet& tried() const { return tried_; }
  // SpaceView::encode() of observations()[i]: feature_count() floats.
  const float* features(size_t i) const {
    return features_.data() + i * static_cast<size_t>(feature_count_);
  }
  // The first SpaceView::active().size() features of observations()[i] (the parameters'
  // normalised ranks), kept contiguous for scans over every observation.
  const float* ranks(size_t i) const { return ranks_.data() + i * rank_count_; }
  size_t rank_count() const { return rank_count_; }
  // Index of observations()[i] in the view's points(); -1 when the view is not enumerated.
  std::int64_t space_index(size_t i) const { return space_index_[i]; }
  // Indices of the successful observations, best (lowest score) first; equal scores in
  // history order.
  const std::vector<size_t>& best_first() const { return best_first_; }
  // Observations up to and including the last that improved the best by stall_gain
  // (0: none did).
  size_t last_gain() const { return last_gain_; }
  // The one-parameter effects of the successes (tuner/search/detail/effects.h).
  const ParameterEffects& effects() const { return effects_.effects(); }
  // How many rows were absorbed by the last update(), and whether it started over.
  size_t absorbed_last() const { return absorbed_last_; }
  bool rebuilt_last() const { return rebuilt_last_; }

 private:
  void reset(const std::shared_ptr<const SpaceView>& view);
  bool same_row(size_t row, const Trial& t) const;
  void absorb(const Trial& t);

  double stall_gain_;
  std::shared_ptr<const SpaceView> view_;
  int feature_count_ = 0;
  // The space's parameters by name, for comparing a Config (a map ordered by name) with
  // a point in one in-order walk.
  std::vector<size_t> by_name_;
  // Per history row: its observation, or -1 with the row's config kept (it did not map).
  std::vector<std::int64_t> row_observation_;
  std::vector<Config> unmapped_;
  std::vector<Outcome> row_outcome_;
  std::vector<double> row_score_;  // -1 when the row has no score
  std::vector<Observation> observations_;
  std::vector<float> features_;
  size_t rank_count_ = 0;
  std::vector<float> ranks_;
  std::vector<std::int64_t> space_index_;
  std::vector<size_t> best_first_;
  PointSet tried_;
  size_t ok_count_ = 0;
  double run_best_ = 0;
  size_t last_gain_ = 0;
  EffectsTracker effects_;
  size_t absorbed_last_ = 0;
  bool rebuilt_last_ = false;
};

}  // namespace tilesmith::proposers::detail
