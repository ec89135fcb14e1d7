#include "tuner/search/detail/history_index.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace tilesmith::proposers::detail {

void HistoryIndex::reset(const std::shared_ptr<const SpaceView>& view) {
  view_ = view;
  feature_count_ = view->feature_count();
  rank_count_ = view->active().size();
  ranks_.clear();
  const auto& params = view->space().parameters();
  by_name_.resize(params.size());
  std::iota(by_name_.begin(), by_name_.end(), size_t{0});
  std::sort(by_name_.begin(), by_name_.end(),
            [&](size_t a, size_t b) { return params[a].name < params[b].name; });
  row_observation_.clear();
  unmapped_.clear();
  row_outcome_.clear();
  row_score_.clear();
  observations_.clear();
  features_.clear();
  space_index_.clear();
  best_first_.clear();
  tried_.clear();
  ok_count_ = 0;
  run_best_ = std::numeric_limits<double>::infinity();
  last_gain_ = 0;
  effects_.reset(view->dims(), view->active());
}

// The row as kept equals the trial: same outcome and score, and the same config (for a
// mapped row: exactly the space's parameters with the point's values, which is what
// ParamSpace::from_config accepted).
bool HistoryIndex::same_row(size_t row, const Trial& t) const {
  if (row_outcome_[row] != t.outcome || row_score_[row] != (t.score ? *t.score : -1.0))
    return false;
  const std::int64_t o = row_observation_[row];
  if (o < 0) return unmapped_[static_cast<size_t>(-o - 1)] == t.config;
  const PointValues& p = observations_[static_cast<size_t>(o)].point;
  if (t.config.size() != by_name_.size()) return false;
  const auto& params = view_->space().parameters();
  size_t k = 0;
  for (const auto& [name, value] : t.config) {
    const size_t d = by_name_[k++];
    if (value != p[d] || name != params[d].name) return false;
  }
  return true;
}

void HistoryIndex::absorb(const Trial& t) {
  row_outcome_.push_back(t.outcome);
  row_score_.push_back(t.score ? *t.score : -1.0);
  auto p = view_->space().from_config(t.config);
  if (!p.ok()) {
    unmapped_.push_back(t.config);
    row_observation_.push_back(-static_cast<std::int64_t>(unmapped_.size()));
    return;
  }
  const size_t i = observations_.size();
  row_observation_.push_back(static_cast<std::int64_t>(i));
  Observation o;
  o.point = std::move(p).value();
  o.ok = t.outcome == Outcome::kOk && t.score.has_value() && *t.score > 0;
  o.score = o.ok ? *t.score : 0;
  tried_.insert(o.point);
  features_.resize(features_.size() + static_cast<size_t>(feature_count_));
  view_->encode(o.point, features_.data() + i * static_cast<size_t>(feature_count_));
  const float* f = features(i);
  ranks_.insert(ranks_.end(), f, f + rank_count_);
  space_index_.push_back(view_->index_of(o.point));
  if (o.ok) {
    ++ok_count_;
    // After every equal score: the order std::stable_sort by score gives.
    auto at =
        std::upper_bound(best_first_.begin(), best_first_.end(), o.score,
                         [&](double score, size_t j) { return score < observations_[j].score; });
    best_first_.insert(at, i);
    if (o.score < run_best_) {
      if (o.score < run_best_ * (1 - stall_gain_)) last_gain_ = i + 1;
      run_best_ = o.score;
    }
    effects_.add(o.point, std::log(o.score));
  }
  observations_.push_back(std::move(o));
}

void HistoryIndex::update(const std::shared_ptr<const SpaceView>& view,
                          const std::vector<Trial>* history) {
  const size_t rows = history ? history->size() : 0;
  const size_t kept = row_outcome_.size();
  bool keep = view_ == view && kept <= rows;
  // The rows kept must still lead the history. Comparing all of them would touch every
  // row's config each generation (15 ms at 20,000 rows); the last kSpotTail rows, where
  // a caller reorders (the loop sorts a generation's rows as they arrive), and kSpotSpread
  // rows spread over the rest catch a different history at a fixed cost.
  constexpr size_t kSpotTail = 64, kSpotSpread = 64;
  for (size_t r = kept > kSpotTail ? kept - kSpotTail : 0; keep && r < kept; ++r)
    keep = same_row(r, (*history)[r]);
  const size_t head = kept > kSpotTail ? kept - kSpotTail : 0;
  for (size_t k = 0; keep && head > 0 && k < kSpotSpread; ++k) {
    const size_t r = k * head / kSpotSpread;
    keep = same_row(r, (*history)[r]);
  }
  rebuilt_last_ = !keep;
  if (!keep) reset(view);
  const size_t from = row_outcome_.size();
  for (size_t r = from; r < rows; ++r) absorb((*history)[r]);
  absorbed_last_ = rows - from;
}

}  // namespace tilesmith::proposers::detail
