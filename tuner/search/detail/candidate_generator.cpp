#include "tuner/search/detail/candidate_generator.h"

#include <algorithm>
#include <numeric>

namespace tilesmith::proposers::detail {

Candidates::Candidates(const SpaceView& view, const HistoryIndex& history)
    : view_(view), tried_(history.tried()) {
  if (view.enumerated()) {
    taken_.assign(view.points().size(), 0);
    for (size_t i = 0; i < history.size(); ++i)
      if (history.space_index(i) >= 0) taken_[static_cast<size_t>(history.space_index(i))] = 1;
  }
}

void Candidates::exclude(const PointValues& p) {
  if (view_.enumerated()) {
    const std::int64_t i = view_.index_of(p);
    if (i >= 0) taken_[static_cast<size_t>(i)] = 1;
  } else {
    seen_.insert(p);
  }
}

Candidates CandidateGenerator::start() const {
  Candidates cand(view_, history_);
  if (pending_)
    for (const auto& p : *pending_) cand.exclude(p);
  return cand;
}

void Candidates::add_index(size_t i) {
  if (taken_[i]) return;
  taken_[i] = 1;
  points_.push_back(&view_.points()[i]);
  index_.push_back(static_cast<std::int64_t>(i));
}

void Candidates::add(const PointValues& p) {
  if (view_.enumerated()) {
    std::int64_t i = view_.index_of(p);
    if (i >= 0) add_index(static_cast<size_t>(i));
    return;
  }
  if (tried_.count(p) || !seen_.insert(p).second) return;
  owned_.push_back(p);
  points_.push_back(&owned_.back());
  index_.push_back(-1);
}

void Candidates::finish() {
  const size_t nf = static_cast<size_t>(view_.feature_count());
  features_.assign(points_.size(), nullptr);
  size_t own = 0;
  for (size_t i = 0; i < points_.size(); ++i)
    if (index_[i] < 0 || !view_.encoded(static_cast<size_t>(index_[i]))) ++own;
  buffer_.resize(own * nf);
  own = 0;
  for (size_t i = 0; i < points_.size(); ++i) {
    const float* cached = index_[i] >= 0 ? view_.encoded(static_cast<size_t>(index_[i])) : nullptr;
    if (cached) {
      features_[i] = cached;
    } else {
      float* f = buffer_.data() + own++ * nf;
      view_.encode(*points_[i], f);
      features_[i] = f;
    }
  }
}

std::vector<PointValues> elite_points(const HistoryIndex& history, size_t count) {
  std::vector<PointValues> elite;
  PointSet seen;
  for (size_t i : history.best_first()) {
    if (elite.size() >= count) break;
    const PointValues& p = history.observations()[i].point;
    if (seen.insert(p).second) elite.push_back(p);
  }
  return elite;
}

Candidates CandidateGenerator::generate(const std::vector<PointValues>& elite,
                                        std::mt19937_64& rng) const {
  const SpaceView& view = view_;
  Candidates cand = start();
  // The elite's neighbourhoods come first: on a space too large to score whole, the
  // uniform draw alone would miss most of them, and local search needs them.
  std::vector<PointValues> scratch;
  for (const auto& e : elite) {
    scratch.clear();
    view.neighbours(e, /*adjacent_only=*/false, &scratch);
    for (const auto& p : scratch) cand.add(p);
  }
  if (view.enumerated() && view.points().size() <= options_.max_scored + history_.tried().size()) {
    for (size_t i = 0; i < view.points().size(); ++i) cand.add_index(i);
  } else if (view.enumerated()) {
    std::uniform_int_distribution<size_t> pick(0, view.points().size() - 1);
    for (size_t i = 0; i < options_.max_scored; ++i) cand.add_index(pick(rng));
  } else {
    for (size_t i = 0; i < options_.pool_size; ++i)
      if (auto p = view.sample(rng)) cand.add(*p);
    // Mutations (two or three parameters re-drawn) and uniform crossovers of the elite:
    // random samples of a large constrained space are mostly mediocre, and these stay
    // near what is known to be good.
    const auto& active = view.active();
    if (!active.empty()) {
      std::uniform_int_distribution<size_t> pick_elite(0, elite.size() - 1);
      std::uniform_int_distribution<size_t> pick_dim(0, active.size() - 1);
      for (size_t i = 0; i < options_.pool_size / 2; ++i) {
        PointValues p = elite[pick_elite(rng)];
        if (i % 2 == 0) {
          const int changes = 2 + static_cast<int>(rng() % 2);
          for (int c = 0; c < changes; ++c) {
            const size_t d = active[pick_dim(rng)];
            std::uniform_int_distribution<int> pick_rank(0, view.domain_size(d) - 1);
            p[d] = view.value_at_rank(d, pick_rank(rng));
          }
        } else {
          const PointValues& other = elite[pick_elite(rng)];
          for (size_t d : active)
            if (rng() & 1) p[d] = other[d];
        }
        if (view.is_valid(p)) cand.add(p);
      }
    }
  }
  cand.finish();
  return cand;
}

Candidates CandidateGenerator::initial_pool(const std::vector<PointValues>& seeds,
                                            std::mt19937_64& rng, size_t* seed_count) const {
  const SpaceView& view = view_;
  Candidates cand = start();
  // The template's seeds come first, each untried one in its order (they take the first
  // positions); then the space-filling sample keeps its distance from them.
  for (const auto& p : seeds) cand.add(p);
  *seed_count = cand.size();
  constexpr size_t kPool = 4000;
  if (view.enumerated()) {
    // The first kPool of a seeded partial Fisher-Yates shuffle: distinct points.
    std::vector<size_t> order(view.points().size());
    std::iota(order.begin(), order.end(), size_t{0});
    const size_t take = std::min(order.size(), kPool);
    for (size_t k = 0; k < take; ++k) {
      std::uniform_int_distribution<size_t> pick(k, order.size() - 1);
      std::swap(order[k], order[pick(rng)]);
      cand.add_index(order[k]);
    }
  } else {
    for (size_t i = 0; i < kPool; ++i)
      if (auto p = view.sample(rng)) cand.add(*p);
  }
  cand.finish();
  return cand;
}

}  // namespace tilesmith::proposers::detail
