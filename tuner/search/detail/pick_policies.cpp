#include "tuner/search/detail/pick_policies.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tuner/search/detail/effects.h"

namespace tilesmith::proposers::detail {

Distance::Distance(std::vector<char> no_effect)
    : mask_(std::move(no_effect)),
      masking_(std::find(mask_.begin(), mask_.end(), 1) != mask_.end()) {}

int Distance::operator()(const PointValues& a, const PointValues& b) const {
  return masking_ ? masked_hamming(a, b, mask_) : SpaceView::hamming(a, b);
}

BatchPicks::BatchPicks(const Candidates& cand, CandidateScores* scores,
                       const Acquisition& acquisition, const Distance& dist,
                       const std::vector<Observation>& known, size_t want)
    : cand_(cand),
      scores_(scores),
      acquisition_(acquisition),
      dist_(dist),
      want_(want),
      picked_(cand.size(), 0),
      blocked_(cand.size(), 0) {
  if (!dist.masking()) return;
  // A candidate whose projection (the point without the masked parameters) is a known
  // time's is a copy of it: blocked from the start. A pick's copies are blocked by
  // take().
  std::unordered_set<std::uint64_t> known_projections;
  for (const auto& o : known) known_projections.insert(projection_hash(o.point, dist.mask()));
  projection_.resize(cand.size());
  for (size_t i = 0; i < cand.size(); ++i) {
    projection_[i] = projection_hash(cand.point(i), dist.mask());
    blocked_[i] = known_projections.count(projection_[i]) > 0;
  }
}

void BatchPicks::take(size_t i, std::string why, bool second) {
  const size_t n = cand_.size();
  picked_[i] = 1;
  blocked_[i] = 1;
  if (dist_.masking())
    for (size_t j = 0; j < n; ++j)
      if (projection_[j] == projection_[i]) blocked_[j] = 1;
  picks_.push_back({i, std::move(why)});
  if (acquisition_.thompson() && !second) return;  // nothing to damp
  for (size_t j = 0; j < n; ++j)
    if (dist_(cand_.point(i), cand_.point(j)) <= 1) acquisition_.damp(scores_, j, second);
}

std::vector<PointValues> distinct_basins(const HistoryIndex& history, int count,
                                         int basin_distance, const Distance& dist) {
  std::vector<PointValues> basins;
  for (size_t i : history.best_first()) {
    if (basins.size() >= static_cast<size_t>(std::max(1, count))) break;
    const PointValues& p = history.observations()[i].point;
    bool distinct = true;
    for (const auto& b : basins)
      if (dist(p, b) < basin_distance) distinct = false;
    if (distinct) basins.push_back(p);
  }
  return basins;
}

PickPolicies::PickPolicies(const SpaceView& view, const HistoryIndex& history,
                           const Candidates& cand, const Acquisition& acquisition,
                           const Distance& dist, const std::vector<PointValues>& elite,
                           bool stalled, PickOptions options)
    : view_(view),
      history_(history),
      cand_(cand),
      acquisition_(acquisition),
      dist_(dist),
      elite_(elite),
      stalled_(stalled),
      options_(options),
      local_elites_(std::min(elite.size(), static_cast<size_t>(std::max(1, options.local_elites)))),
      basins_(distinct_basins(history, options.basins, options.basin_distance, dist)) {}

bool PickPolicies::within(const PointValues& p, int radius) const {
  for (size_t e = 0; e < local_elites_; ++e)
    if (dist_(p, elite_[e]) <= radius) return true;
  return false;
}

void PickPolicies::pick(BatchPicks* batch, CandidateScores* scores, std::mt19937_64& rng) const {
  best_predicted(batch, *scores);
  local(batch, *scores);
  explore(batch, *scores);
  far(batch, *scores);
  restart(batch, *scores);
  second_model(batch, scores);
  by_acquisition(batch, *scores, rng);
  leftovers(batch, *scores);
}

void PickPolicies::best_predicted(BatchPicks* batch, const CandidateScores& s) const {
  const size_t n = s.size();
  for (size_t k = 0, taken = 0;
       k < n && taken < static_cast<size_t>(options_.exploit_per_batch) && !batch->full(); ++k) {
    if (batch->blocked(s.by_mean[k])) continue;
    batch->take(s.by_mean[k], "surrogate's best prediction");
    ++taken;
  }
}

// One-parameter neighbours by predicted time (two-parameter ones once a centre's
// one-parameter neighbourhood is all tried). Around the best while the search moves.
// Once it stalls, the first pick ranks everything within stall_radius parameters of the
// best (a two-parameter move crosses a ridge no one-parameter step does) and the others
// go around the other basins in turn, so one basin cannot take the whole budget.
void PickPolicies::local(BatchPicks* batch, const CandidateScores& s) const {
  const size_t n = s.size();
  // By predicted time, or by expected improvement as the picks before left it.
  std::vector<size_t> order = s.by_mean;
  if (options_.local_by_ei)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.ei[a] > s.ei[b]; });
  // The best-ranked point within `radius` parameters of the centre.
  auto pick_within = [&](const PointValues& centre, int radius, const std::string& why) {
    for (size_t k = 0; k < n; ++k) {
      const size_t i = order[k];
      if (batch->blocked(i) || dist_(cand_.point(i), centre) > radius) continue;
      batch->take(i, why);
      return true;
    }
    return false;
  };
  // The same from min_radius out to 2 parameters, the nearest ring that has one.
  auto pick_near = [&](const PointValues& centre, int min_radius, const std::string& why) {
    for (int radius = min_radius; radius <= std::max(2, min_radius); ++radius)
      if (pick_within(centre, radius, why)) return true;
    return false;
  };
  for (int l = 0; l < options_.local_per_batch && !batch->full(); ++l) {
    if (stalled_ && l == 0 && options_.stall_neighbours_first &&
        pick_within(elite_.front(), 1, "one-parameter neighbour of the best (the search stalled)"))
      continue;
    if (stalled_ && l == 0 && options_.stall_radius > 1 &&
        pick_near(elite_.front(), options_.stall_radius,
                  "within " + std::to_string(options_.stall_radius) +
                      " parameters of the best (the search stalled)"))
      continue;
    if (stalled_ && basins_.size() > 1) {
      const size_t b =
          1 + (static_cast<size_t>(l) + history_.size() / batch->want()) % (basins_.size() - 1);
      if (pick_near(basins_[b], 1, "neighbour of basin " + std::to_string(b + 1) + " (the search stalled)"))
        continue;
    }
    if (options_.local_elites > 1) {
      // The original rule: neighbours of any of the local_elites best, by predicted time.
      for (size_t k = 0; k < n; ++k) {
        const size_t i = s.by_mean[k];
        if (batch->blocked(i) || !within(cand_.point(i), 1)) continue;
        batch->take(i, "one-parameter neighbour of one of the best so far");
        break;
      }
      continue;
    }
    pick_near(elite_.front(), 1, "one-parameter neighbour of one of the best so far");
  }
}

// The most uncertain of the candidates predicted among the best explore_quantile, so a
// region the model knows little about gets measured.
void PickPolicies::explore(BatchPicks* batch, const CandidateScores& s) const {
  if (options_.explore_per_batch <= 0) return;
  const size_t n = s.size();
  const size_t pool = std::max<size_t>(1, static_cast<size_t>(options_.explore_quantile * double(n)));
  for (int e = 0; e < options_.explore_per_batch && !batch->full(); ++e) {
    size_t best = n;
    for (size_t k = 0; k < pool && k < n; ++k) {
      const size_t i = s.by_mean[k];
      if (!batch->blocked(i) && (best == n || s.stddev[i] > s.stddev[best])) best = i;
    }
    if (best == n) break;
    batch->take(best, "exploration (most uncertain of the promising)");
  }
}

// Under-sampled regions: once stalled, among the candidates predicted in the best
// far_quantile, the one farthest (in parameter ranks) from everything tried. A region
// the model has one bad sample of is predicted at the clip and never wins expected
// improvement; this measures it anyway.
void PickPolicies::far(BatchPicks* batch, const CandidateScores& s) const {
  if (!stalled_ || options_.far_per_batch <= 0) return;
  const size_t n = s.size();
  // Distances to everything tried (the first nr features: the parameters' ranks), most
  // recent first: a candidate near the search's latest points drops out soonest. The
  // order changes no result: a candidate with any tried point within the best distance
  // so far loses whichever it meets first.
  const size_t nr = view_.active().size();
  std::vector<const float*> tried;
  tried.reserve(history_.size() + batch->want());
  for (size_t i = 0; i < n; ++i)  // this batch's picks so far count as tried
    if (batch->picked(i)) tried.push_back(cand_.features(i));
  for (size_t i = history_.size(); i > 0; --i) tried.push_back(history_.ranks(i - 1));
  const size_t pool = std::max<size_t>(1, static_cast<size_t>(options_.far_quantile * double(n)));
  for (int r = 0; r < options_.far_per_batch && !batch->full(); ++r) {
    size_t best = n;
    double best_d = -1;
    for (size_t k = 0; k < pool && k < n; ++k) {
      const size_t i = s.by_mean[k];
      if (batch->blocked(i)) continue;
      const float* g = cand_.features(i);
      double nearest = std::numeric_limits<double>::infinity();
      for (size_t t = 0; t < tried.size() && nearest > best_d; ++t) {
        const float* h = tried[t];
        double d = 0;
        for (size_t q = 0; q < nr; ++q) d += std::fabs(g[q] - h[q]);
        nearest = std::min(nearest, d);
      }
      if (nearest > best_d) {
        best_d = nearest;
        best = i;
      }
    }
    if (best == n) break;
    batch->take(best, "least sampled of the promising (the search stalled)");
    tried.insert(tried.begin(), cand_.features(best));
  }
}

// Once stalled, the best scores far from every basin found.
void PickPolicies::restart(BatchPicks* batch, const CandidateScores& s) const {
  if (!stalled_) return;
  const size_t n = s.size();
  for (int r = 0; r < options_.restart_per_batch && !batch->full(); ++r) {
    size_t best = n;
    for (size_t i = 0; i < n; ++i) {
      if (batch->blocked(i)) continue;
      bool far = true;
      for (const auto& b : basins_)
        if (dist_(cand_.point(i), b) < options_.restart_distance) far = false;
      if (far && (best == n || s.ei[i] > s.ei[best])) best = i;
    }
    if (best == n) break;
    batch->take(best, "restart away from the basins found (the search stalled)");
  }
}

// The second model's best prediction first (second_exploit), then its expected
// improvement, each pick damping its neighbours' scores as the first model's do.
void PickPolicies::second_model(BatchPicks* batch, CandidateScores* s) const {
  if (options_.second_picks <= 0) return;
  const std::string model = acquisition_.second_name();
  for (int r = 0; r < options_.second_picks && !batch->full(); ++r) {
    const bool exploit = r < options_.second_exploit;
    const size_t best = acquisition_.best_second(s, cand_.feature_rows(), batch->blocked_mask(), exploit);
    if (best == s->size()) break;
    batch->take(best, model + (exploit ? "best prediction" : "expected improvement"), /*second=*/true);
  }
}

// The rest of the batch by the acquisition, within the trust region (region_radius) and
// the best ei_quantile by predicted time while those have a candidate, then among all.
void PickPolicies::by_acquisition(BatchPicks* batch, const CandidateScores& s,
                                  std::mt19937_64& rng) const {
  const size_t n = s.size();
  const bool thompson = acquisition_.thompson();
  std::vector<char> eligible(n, 1);
  if (options_.region_radius > 0)
    for (size_t i = 0; i < n; ++i) eligible[i] = within(cand_.point(i), options_.region_radius);
  if (!thompson && options_.ei_quantile < 1.0) {
    const size_t keep = std::max(batch->want(), static_cast<size_t>(options_.ei_quantile * double(n)));
    for (size_t k = keep; k < n; ++k) eligible[s.by_mean[k]] = 0;
  }
  ThompsonDraw draw(s.trees, acquisition_.options().thompson_trees);
  while (!batch->full()) {
    const size_t best = thompson ? draw.pick(s, batch->blocked_mask(), eligible, rng)
                                 : acquisition_.best_ei(s, batch->blocked_mask(), eligible);
    if (best == n) {
      // The trust region or quantile ran dry: widen to every candidate.
      if (std::find(eligible.begin(), eligible.end(), 0) == eligible.end()) break;
      std::fill(eligible.begin(), eligible.end(), 1);
      continue;
    }
    batch->take(best, thompson ? "Thompson sample of the surrogate" : "expected improvement");
  }
}

// Only copies of known times are left: they are still untried configurations.
void PickPolicies::leftovers(BatchPicks* batch, const CandidateScores& s) const {
  for (size_t k = 0; k < s.size() && !batch->full(); ++k)
    if (!batch->picked(s.by_mean[k]))
      batch->take(s.by_mean[k], "surrogate's best prediction (no other is left)");
}

}  // namespace tilesmith::proposers::detail
