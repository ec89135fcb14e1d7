#pragma once
// The evolve proposer's picks: the kinds of pick a generation's batch is made of, in the
// order they take their share (EvolveProposer's header says why each is there):
//   1. best_predicted   exploit_per_batch of the best predicted means;
//   2. local            local_per_batch one-parameter neighbours of the best by predicted
//                       time (once stalled: within stall_radius of the best, then the
//                       other basins in turn);
//   3. explore          explore_per_batch most uncertain of the promising;
//   4. far              once stalled, far_per_batch promising candidates farthest from
//                       everything tried;
//   5. restart          once stalled, restart_per_batch best scores far from every basin;
//   6. second model     second_picks by the other model's prediction or expected
//                       improvement;
//   7. acquisition      the rest by expected improvement or Thompson sampling (within the
//                       trust region and quantile while those have any);
//   8. leftovers        only copies of known times left: they are untried all the same.
// Each pick reads the candidates' scores as the picks before it left them (a pick damps
// its neighbours' scores: BatchPicks::take), so the order is part of the behaviour.
//
// Parameters with no measured effect (detail/effects.h) shape two things here: a
// candidate that differs from a measured or picked configuration only in such
// parameters is a copy of a known time and is blocked, and Distance leaves them out.
//
// Generic and deterministic for a given rng state.

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "tuner/search/detail/acquisition.h"
#include "tuner/search/detail/candidate_generator.h"
#include "tuner/search/detail/history_index.h"

namespace tilesmith::proposers::detail {

// Parameters two configurations differ in, leaving out those with no measured effect
// (mask: 1 per such parameter; none masked: plain Hamming distance).
class Distance {
 public:
  Distance() = default;
  explicit Distance(std::vector<char> no_effect);
  bool masking() const { return masking_; }
  const std::vector<char>& mask() const { return mask_; }
  int operator()(const PointValues& a, const PointValues& b) const;

 private:
  std::vector<char> mask_;
  bool masking_ = false;
};

struct Pick {
  size_t candidate;
  std::string why;
};

// The batch as it is assembled: the picks in order, which candidates a pick may no
// longer take (picked, or a copy of a known time), and the damping each pick applies to
// its one-parameter neighbours' scores.
class BatchPicks {
 public:
  // known: the history's observations (their projections block copies while masking).
  BatchPicks(const Candidates& cand, CandidateScores* scores, const Acquisition& acquisition,
             const Distance& dist, const std::vector<Observation>& known, size_t want);
  size_t want() const { return want_; }
  size_t size() const { return picks_.size(); }
  bool full() const { return picks_.size() >= want_; }
  bool picked(size_t i) const { return picked_[i] != 0; }
  bool blocked(size_t i) const { return blocked_[i] != 0; }
  const std::vector<char>& blocked_mask() const { return blocked_; }
  // Takes candidate i: blocks it and its copies, damps its neighbours' scores (and the
  // second model's with `second`).
  void take(size_t i, std::string why, bool second = false);
  const std::vector<Pick>& picks() const { return picks_; }

 private:
  const Candidates& cand_;
  CandidateScores* scores_;
  const Acquisition& acquisition_;
  const Distance& dist_;
  size_t want_;
  std::vector<char> picked_, blocked_;
  std::vector<std::uint64_t> projection_;
  std::unordered_set<std::uint64_t> known_projections_;
  std::vector<Pick> picks_;
};

struct PickOptions {
  int exploit_per_batch = 1;
  int local_per_batch = 2;
  int local_elites = 1;
  bool local_by_ei = false;
  bool stall_neighbours_first = true;
  int stall_radius = 2;
  int basins = 4;
  int basin_distance = 3;
  int explore_per_batch = 0;
  double explore_quantile = 0.05;
  int far_per_batch = 1;
  double far_quantile = 0.1;
  int restart_per_batch = 0;
  int restart_distance = 3;
  int second_picks = 2;
  int second_exploit = 0;
  int region_radius = 0;
  double ei_quantile = 1.0;
};

// The best configurations found, each at least basin_distance parameters from every
// better one kept, best first; at most max(1, count).
std::vector<PointValues> distinct_basins(const HistoryIndex& history, int count,
                                         int basin_distance, const Distance& dist);

class PickPolicies {
 public:
  // elite: elite_points() (not empty); stalled: the best has not improved lately.
  PickPolicies(const SpaceView& view, const HistoryIndex& history, const Candidates& cand,
               const Acquisition& acquisition, const Distance& dist,
               const std::vector<PointValues>& elite, bool stalled, PickOptions options);
  const std::vector<PointValues>& basins() const { return basins_; }

  // Every kind in order, until the batch is full or no candidate is left.
  void pick(BatchPicks* batch, CandidateScores* scores, std::mt19937_64& rng) const;

  void best_predicted(BatchPicks* batch, const CandidateScores& s) const;
  void local(BatchPicks* batch, const CandidateScores& s) const;
  void explore(BatchPicks* batch, const CandidateScores& s) const;
  void far(BatchPicks* batch, const CandidateScores& s) const;
  void restart(BatchPicks* batch, const CandidateScores& s) const;
  void second_model(BatchPicks* batch, CandidateScores* s) const;
  void by_acquisition(BatchPicks* batch, const CandidateScores& s, std::mt19937_64& rng) const;
  void leftovers(BatchPicks* batch, const CandidateScores& s) const;

 private:
  // Within `radius` parameters of one of the local_elites best.
  bool within(const PointValues& p, int radius) const;

  const SpaceView& view_;
  const HistoryIndex& history_;
  const Candidates& cand_;
  const Acquisition& acquisition_;
  const Distance& dist_;
  const std::vector<PointValues>& elite_;
  bool stalled_;
  PickOptions options_;
  size_t local_elites_;
  std::vector<PointValues> basins_;
};

}  // namespace tilesmith::proposers::detail
