#pragma once
// The evolve proposer's candidates: the untried valid points a generation chooses from.
//  - An enumerated space whose untried points number at most max_scored: all of them
//    (scoring every one costs less than any pool would miss). Scoring and picking cost
//    grows with the candidates, not the history: gemm_warp's 188,000 points took 0.9 s a
//    generation (H200 host, fp32 4096^3), more than the GPU measured meanwhile.
//  - A larger enumerated space: the elite's one-parameter neighbourhoods and a uniform
//    draw of max_scored points (repeats and tried points fall away).
//  - A space that cannot be enumerated: the elite's neighbourhoods, pool_size random
//    valid samples, and pool_size / 2 mutations (two or three parameters re-drawn) and
//    uniform crossovers of the elite: an evolutionary pool.
// The initial design draws from its own pool: the template's seeds first, then up to
// 4,000 random points (initial_pool()).
//
// Generic and deterministic for a given rng state.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "tuner/search/detail/history_index.h"
#include "tuner/search/detail/space_view.h"

namespace tilesmith::proposers::detail {

// Untried candidates with their features, deduplicated, in a deterministic order (the
// order they were added in). Points of an enumerated space are referenced by index
// (features from the view's cache); others are owned. Keeps references to the view and
// the history's tried points: both must outlive it.
class Candidates {
 public:
  Candidates(const SpaceView& view, const HistoryIndex& history);
  // Moves keep the owned points where they are (a deque's elements stay put), so the
  // pointers to them stay good; a copy would not.
  Candidates(Candidates&&) = default;
  Candidates(const Candidates&) = delete;
  Candidates& operator=(const Candidates&) = delete;

  // Never offers p (a point being measured: ProposalRequest::pending). Call before adding.
  void exclude(const PointValues& p);
  // Adds points()[i] of an enumerated view unless tried or added already.
  void add_index(size_t i);
  // Adds p unless tried, added already, or (enumerated view) not one of its points.
  void add(const PointValues& p);
  // Call once after the last add(): fills features for points the view has not cached.
  void finish();

  size_t size() const { return points_.size(); }
  const PointValues& point(size_t i) const { return *points_[i]; }
  const float* features(size_t i) const { return features_[i]; }
  const float* const* feature_rows() const { return features_.data(); }

 private:
  const SpaceView& view_;
  const PointSet& tried_;
  std::vector<char> taken_;  // enumerated spaces: tried or already added, by index
  PointSet seen_;
  std::deque<PointValues> owned_;  // stable addresses
  std::vector<const PointValues*> points_;
  std::vector<std::int64_t> index_;
  std::vector<const float*> features_;
  std::vector<float> buffer_;
};

// The best distinct successful points, best first, at most `count`.
std::vector<PointValues> elite_points(const HistoryIndex& history, size_t count);

struct CandidateOptions {
  size_t pool_size = 20000;   // random part of the pool when the space is not enumerated
  size_t max_scored = 20000;  // largest candidate set of an enumerated space
};

class CandidateGenerator {
 public:
  // pending (may be null): points being measured, left out like the tried ones.
  CandidateGenerator(const SpaceView& view, const HistoryIndex& history,
                     CandidateOptions options = {}, const std::vector<PointValues>* pending = nullptr)
      : view_(view), history_(history), options_(options), pending_(pending) {}
  // A generation's candidates around `elite` (elite_points(); not empty), finished.
  Candidates generate(const std::vector<PointValues>& elite, std::mt19937_64& rng) const;
  // The initial design's pool, finished: `seeds` (valid points, in order) first, then a
  // random sample. Returns how many of the candidates are seeds in *seed_count.
  Candidates initial_pool(const std::vector<PointValues>& seeds, std::mt19937_64& rng,
                          size_t* seed_count) const;

 private:
  const SpaceView& view_;
  const HistoryIndex& history_;
  CandidateOptions options_;
  const std::vector<PointValues>* pending_;
  Candidates start() const;  // the tried and pending points left out
};

}  // namespace tilesmith::proposers::detail
