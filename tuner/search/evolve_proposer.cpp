#include "tuner/search/evolve_proposer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <numeric>
#include <random>
#include <unordered_set>

#include "tuner/search/detail/convergence.h"
#include "tuner/search/detail/effects.h"
#include "tuner/search/detail/training_rows.h"
#include "tuner/search/request_check.h"

namespace tilesmith {

using proposers::detail::Forest;
using proposers::detail::HistoryIndex;
using proposers::detail::Observation;
using proposers::detail::PointSet;
using proposers::detail::SpaceView;

namespace {

std::string fmt_ms(double ms) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.4g ms", ms);
  return buf;
}

double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// Expected improvement (log units) over the best log-time, with exploration xi.
double expected_improvement(double best, double mean, double sd, double xi) {
  const double improvement = best - mean - xi;
  if (sd <= 1e-12) return std::max(0.0, improvement);
  const double z = improvement / sd;
  return improvement * normal_cdf(z) + sd * normal_pdf(z);
}

// Untried candidates with their features, deduplicated, in a deterministic order. Points
// of an enumerated space are referenced by index (features from the view's cache);
// others are owned.
class Candidates {
 public:
  Candidates(const SpaceView& view, const HistoryIndex& history)
      : view_(view), tried_(history.tried()) {
    if (view.enumerated()) {
      taken_.assign(view.points().size(), 0);
      for (size_t i = 0; i < history.size(); ++i)
        if (history.space_index(i) >= 0) taken_[static_cast<size_t>(history.space_index(i))] = 1;
    }
  }

  void add_index(size_t i) {
    if (taken_[i]) return;
    taken_[i] = 1;
    points_.push_back(&view_.points()[i]);
    index_.push_back(static_cast<std::int64_t>(i));
  }

  void add(const PointValues& p) {
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

  // Call once after the last add(): fills features for points the view has not cached.
  void finish() {
    const size_t nf = static_cast<size_t>(view_.feature_count());
    features_.assign(points_.size(), nullptr);
    size_t own = 0;
    for (size_t i = 0; i < points_.size(); ++i)
      if (index_[i] < 0 || !view_.encoded(static_cast<size_t>(index_[i]))) ++own;
    buffer_.resize(own * nf);
    own = 0;
    for (size_t i = 0; i < points_.size(); ++i) {
      const float* cached =
          index_[i] >= 0 ? view_.encoded(static_cast<size_t>(index_[i])) : nullptr;
      if (cached) {
        features_[i] = cached;
      } else {
        float* f = buffer_.data() + own++ * nf;
        view_.encode(*points_[i], f);
        features_[i] = f;
      }
    }
  }

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

using Clock = std::chrono::steady_clock;

// Milliseconds since *t, and *t moved to now: one phase of EvolveProfile.
double lap_ms(Clock::time_point* t) {
  const auto now = Clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - *t).count();
  *t = now;
  return ms;
}

}  // namespace

EvolveProposer::EvolveProposer(EvolveOptions options)
    : options_(options), history_(options.stall_gain) {}

ProposalBatch EvolveProposer::initial_design(const ProposalRequest& request, const SpaceView& view,
                                             std::mt19937_64& rng) {
  const HistoryIndex& history = history_;
  ProposalBatch batch;
  batch.proposer = name();
  const size_t want = static_cast<size_t>(request.count);
  Candidates cand(view, history);
  // The template's seeds come first, each valid and untried one in its order (they take
  // the first positions of cand); then the space-filling sample keeps its distance from them.
  if (request.seeds)
    for (const Config& seed : *request.seeds) {
      auto point = request.space->from_config(seed);
      if (point.ok() && view.is_valid(*point)) cand.add(*point);
    }
  const size_t seeds = cand.size();
  constexpr size_t kPool = 4000;
  if (view.enumerated()) {
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
  // Maximin over normalised ranks (the first active features): each pick is the
  // candidate farthest from everything tried or picked.
  const size_t nr = view.active().size();
  std::vector<double> nearest(cand.size(), std::numeric_limits<double>::infinity());
  auto account = [&](const float* f) {
    for (size_t i = 0; i < cand.size(); ++i) {
      const float* g = cand.features(i);
      double d = 0;
      for (size_t k = 0; k < nr; ++k) d += std::fabs(g[k] - f[k]);
      nearest[i] = std::min(nearest[i], d);
    }
  };
  for (size_t i = 0; i < history.size(); ++i) account(history.features(i));
  std::vector<char> picked(cand.size(), 0);
  while (batch.proposals.size() < want) {
    const size_t next = batch.proposals.size();
    size_t best = cand.size();
    if (next < seeds) {
      best = next;
    } else {
      for (size_t i = 0; i < cand.size(); ++i)
        if (!picked[i] && (best == cand.size() || nearest[i] > nearest[best])) best = i;
    }
    if (best == cand.size()) break;
    picked[best] = 1;
    account(cand.features(best));
    batch.proposals.push_back({request.space->to_config(cand.point(best)),
                               best < seeds ? "initial design: the template's seed (a schedule known to be good)"
                                            : "initial design: space-filling sample " +
                                                  std::to_string(history.size() + batch.proposals.size() + 1)});
  }
  if (batch.proposals.empty() && want > 0)
    batch.status = Status::failed_precondition("evolve: no untried valid configuration is left");
  return batch;
}

ProposalBatch EvolveProposer::propose(const ProposalRequest& request) {
  ProposalBatch batch;
  batch.proposer = name();
  if (Status st = proposers::check_request(request); !st.ok()) {
    batch.status = st;
    return batch;
  }
  const size_t want = static_cast<size_t>(request.count);
  profile_ = {};
  auto clock = Clock::now();
  auto view_ptr = views_.get(*request.space, request.context);
  const SpaceView& view = *view_ptr;
  profile_.view_ms = lap_ms(&clock);
  history_.update(view_ptr, request.history);
  const HistoryIndex& history = history_;
  const auto& observations = history.observations();
  profile_.history_ms = lap_ms(&clock);
  profile_.history_rows = history.size();
  profile_.absorbed_rows = history.absorbed_last();
  std::mt19937_64 rng(proposers::detail::mix_seed(request.seed, history.size()));

  if (history.size() < static_cast<size_t>(options_.initial_design) || history.ok_count() < 2)
    return initial_design(request, view, rng);

  // ---- Surrogate ---------------------------------------------------------------------
  const int nf = view.feature_count();
  const std::vector<size_t>& ok_order = history.best_first();  // fastest first
  const double best_ok = std::log(observations[ok_order.front()].score);
  // Each model is fitted on a bounded subset of the history (detail/training_rows.h):
  // every row while there are few, so short runs fit what they always did.
  auto bound = [&](size_t max_rows) {
    return proposers::detail::TrainingBound{max_rows, options_.training_best_share,
                                            options_.training_recent_share};
  };
  // Features of the chosen rows, row-major (nf per row).
  auto features_of = [&](const std::vector<size_t>& rows) {
    std::vector<float> x(rows.size() * static_cast<size_t>(nf));
    for (size_t r = 0; r < rows.size(); ++r)
      std::copy_n(history.features(rows[r]), nf, x.data() + r * static_cast<size_t>(nf));
    return x;
  };
  // Targets: log(score) (the time, or the run's other objective: Trial::score) of every
  // success, clipped at a quantile of all the successes (1:
  // the slowest); failures failure_penalty above the clip.
  auto targets = [&](const std::vector<size_t>& rows, double clip_quantile) {
    const size_t k = clip_quantile < 1.0
                         ? static_cast<size_t>(clip_quantile * double(ok_order.size() - 1))
                         : ok_order.size() - 1;
    const double clip = std::log(observations[ok_order[k]].score);
    std::vector<double> y;
    y.reserve(rows.size());
    for (size_t i : rows) {
      const Observation& o = observations[i];
      y.push_back(o.ok ? std::min(std::log(o.score), clip) : clip + options_.failure_penalty);
    }
    return y;
  };
  const bool gp = options_.surrogate == Surrogate::kGaussianProcess;
  // The second model's picks (second_picks): the other of forest and Gaussian process.
  const bool want_forest = !gp || options_.second_picks > 0;
  const bool want_process = gp || options_.second_picks > 0;
  Forest forest;
  proposers::detail::GaussianProcess process;
  if (want_process) {  // on the parameters' ranks, the first features
    const auto rows = proposers::detail::training_rows(history.size(), ok_order,
                                                       bound(options_.max_process_rows));
    profile_.process_rows = rows.size();
    process.fit(features_of(rows), nf, static_cast<int>(view.active().size()),
                targets(rows, options_.gp_clip_quantile), options_.gaussian_process);
  }
  profile_.process_fit_ms = lap_ms(&clock);
  if (want_forest) {
    const auto rows =
        proposers::detail::training_rows(history.size(), ok_order, bound(options_.max_forest_rows));
    profile_.forest_rows = rows.size();
    forest.fit(features_of(rows), nf, targets(rows, options_.clip_quantile), options_.forest,
               rng());
  }
  profile_.forest_fit_ms = lap_ms(&clock);

  std::vector<PointValues> elite;  // best distinct successful points, best first
  {
    PointSet seen;
    for (size_t i : ok_order) {
      if (elite.size() >= static_cast<size_t>(std::max(options_.elite, options_.local_elites)))
        break;
      if (seen.insert(observations[i].point).second) elite.push_back(observations[i].point);
    }
  }

  // ---- Candidates --------------------------------------------------------------------
  Candidates cand(view, history);
  std::vector<PointValues> scratch;
  for (const auto& e : elite) {
    scratch.clear();
    view.neighbours(e, /*adjacent_only=*/false, &scratch);
    for (const auto& p : scratch) cand.add(p);
  }
  if (view.enumerated() && view.points().size() <= options_.max_scored + history.tried().size()) {
    for (size_t i = 0; i < view.points().size(); ++i) cand.add_index(i);
  } else if (view.enumerated()) {
    std::uniform_int_distribution<size_t> pick(0, view.points().size() - 1);
    for (size_t i = 0; i < options_.max_scored; ++i) cand.add_index(pick(rng));
  } else {
    for (size_t i = 0; i < options_.pool_size; ++i)
      if (auto p = view.sample(rng)) cand.add(*p);
    // Mutations (two or three parameters re-drawn) and uniform crossovers of the elite.
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
  const size_t n = cand.size();
  profile_.candidates = n;
  profile_.candidates_ms = lap_ms(&clock);
  if (n == 0) {
    if (want > 0)
      batch.status = Status::failed_precondition("evolve: no untried valid configuration is left");
    return batch;
  }

  // ---- Scores ------------------------------------------------------------------------
  const int trees = forest.tree_count();
  const bool thompson = !gp && options_.acquisition == Acquisition::kThompson;
  std::vector<double> per_tree(thompson ? n * static_cast<size_t>(trees) : 0);
  std::vector<double> mu(n), sigma(n), score(n);
  // The second model's predictions, for its picks (second_picks). score2 is its expected
  // improvement where `exact2`, elsewhere an upper bound: the Gaussian process's mean is
  // cheap and its deviation is not, and no deviation exceeds the prior's, so the
  // deviation is computed only where the bound could still win a pick (see the picks).
  std::vector<double> mu2, score2;
  std::vector<char> exact2;
  if (gp) process.predict(cand.feature_rows(), n, mu.data(), sigma.data());
  if (options_.second_picks > 0) {
    mu2.resize(n);
    score2.resize(n);
    exact2.assign(n, gp ? 1 : 0);
    if (gp) {
      for (size_t i = 0; i < n; ++i) {
        double sd = 0;
        forest.predict(cand.features(i), &mu2[i], &sd);
        score2[i] = expected_improvement(best_ok, mu2[i], sd, options_.exploration);
      }
    } else {
      process.predict_mean(cand.feature_rows(), n, mu2.data());
      for (size_t i = 0; i < n; ++i)
        score2[i] = expected_improvement(best_ok, mu2[i], process.prior_stddev(), options_.exploration);
    }
  }
  // The Gaussian process's expected improvement at these candidates, in place of the
  // bound, keeping the damping applied so far (damping2).
  std::vector<double> damping2(options_.second_picks > 0 ? n : 0, 1.0);
  auto make_exact2 = [&](const std::vector<size_t>& which) {
    std::vector<const float*> rows;
    for (size_t i : which) rows.push_back(cand.features(i));
    std::vector<double> mean(which.size()), sd(which.size());
    process.predict(rows.data(), rows.size(), mean.data(), sd.data());
    for (size_t k = 0; k < which.size(); ++k) {
      const size_t i = which[k];
      score2[i] = damping2[i] * expected_improvement(best_ok, mu2[i], sd[k], options_.exploration);
      exact2[i] = 1;
    }
  };
  for (size_t i = 0; i < n; ++i) {
    if (gp) {
      // mu and sigma came from the process above.
    } else if (thompson) {
      double* t = per_tree.data() + i * static_cast<size_t>(trees);
      forest.predict_trees(cand.features(i), t);
      double s = 0, s2 = 0;
      for (int k = 0; k < trees; ++k) {
        s += t[k];
        s2 += t[k] * t[k];
      }
      mu[i] = s / trees;
      sigma[i] = std::sqrt(std::max(0.0, s2 / trees - mu[i] * mu[i]));
    } else {
      forest.predict(cand.features(i), &mu[i], &sigma[i]);
    }
    score[i] = expected_improvement(best_ok, mu[i], sigma[i], options_.exploration);
  }
  profile_.score_ms = lap_ms(&clock);

  std::vector<size_t> by_mean(n);
  std::iota(by_mean.begin(), by_mean.end(), size_t{0});
  std::stable_sort(by_mean.begin(), by_mean.end(),
                   [&](size_t a, size_t b) { return mu[a] < mu[b]; });

  // Has the search stalled? Evaluations since the best improved by at least stall_gain.
  const size_t since_gain = history.size() - history.last_gain();
  const bool stalled = options_.stall_generations > 0 &&
                       since_gain >= static_cast<size_t>(options_.stall_generations) * want;
  // ---- Parameters with no measured effect -------------------------------------------
  // A candidate that differs from a measured (or already picked) configuration only in
  // such parameters is a copy of a known time: it is passed over while anything else is
  // left, and distances between configurations leave those parameters out.
  std::vector<char> no_effect;
  bool masking = false;
  if (options_.no_effect_pairs > 0 && !(stalled && options_.no_effect_until_stall)) {
    no_effect =
        proposers::detail::no_effect_mask(history.effects(), options_.no_effect_pairs,
                                          options_.no_effect_tolerance, options_.no_effect_max);
    masking = std::find(no_effect.begin(), no_effect.end(), 1) != no_effect.end();
  }
  std::vector<std::uint64_t> projection;
  std::unordered_set<std::uint64_t> known_projections;
  if (masking) {
    projection.resize(n);
    for (size_t i = 0; i < n; ++i)
      projection[i] = proposers::detail::projection_hash(cand.point(i), no_effect);
    for (const auto& o : observations)
      known_projections.insert(proposers::detail::projection_hash(o.point, no_effect));
  }
  auto dist = [&](const PointValues& a, const PointValues& b) {
    return masking ? proposers::detail::masked_hamming(a, b, no_effect) : SpaceView::hamming(a, b);
  };

  // ---- Batch -------------------------------------------------------------------------
  std::vector<char> picked(n, 0);
  // Not to be picked: picked already, or a copy of a known time.
  auto blocked = [&](size_t i) {
    return picked[i] || (masking && known_projections.count(projection[i]) > 0);
  };
  auto take = [&](size_t i, const std::string& why) {
    picked[i] = 1;
    if (masking) known_projections.insert(projection[i]);
    batch.proposals.push_back({request.space->to_config(cand.point(i)),
                               why + ", predicted " + fmt_ms(std::exp(mu[i])) + " (best so far " +
                                   fmt_ms(std::exp(best_ok)) + ")"});
    if (!thompson)
      for (size_t j = 0; j < n; ++j)
        if (dist(cand.point(i), cand.point(j)) <= 1) score[j] *= options_.diversity_penalty;
  };
  const size_t local_elites =
      std::min(elite.size(), static_cast<size_t>(std::max(1, options_.local_elites)));
  auto within = [&](const PointValues& p, int radius) {
    for (size_t e = 0; e < local_elites; ++e)
      if (dist(p, elite[e]) <= radius) return true;
    return false;
  };

  // How likely the best found is within the asked margin of the space's best: over every
  // untried point when all were scored, a uniform subset standing for the rest otherwise;
  // no estimate from an evolutionary pool (it is not a sample of the space).
  if (request.convergence_margin && view.enumerated()) {
    proposers::detail::ConvergenceInputs ci;
    ci.mean = &mu;
    ci.stddev = &sigma;
    ci.threshold = best_ok - std::log1p(*request.convergence_margin);
    ci.spread_scale = options_.convergence_spread;
    const double untried = double(view.points().size()) - double(history.tried().size());
    ci.coverage = std::max(1.0, untried / double(n));
    // The model alone is too sure early on, before its picks have had a chance to find
    // what it does not know (docs/search.md, "Convergence estimate"): it is weighed by
    // how long the best has stood, 1 - exp(-evaluations since the last 1% gain / tau).
    const double tau = options_.convergence_stood * double(want);
    const double stood = tau > 0 ? 1 - std::exp(-double(since_gain) / tau) : 1.0;
    batch.converged = proposers::detail::probability_none_better(ci) * stood;
  }
  // Distinct basins: the best configurations found, each at least basin_distance
  // parameters away from every better one kept, best first.
  std::vector<PointValues> basins;
  for (size_t i : ok_order) {
    if (basins.size() >= static_cast<size_t>(std::max(1, options_.basins))) break;
    const PointValues& p = observations[i].point;
    bool distinct = true;
    for (const auto& b : basins)
      if (dist(p, b) < options_.basin_distance) distinct = false;
    if (distinct) basins.push_back(p);
  }

  for (size_t k = 0, taken = 0; k < n && taken < static_cast<size_t>(options_.exploit_per_batch) &&
                                batch.proposals.size() < want;
       ++k) {
    if (blocked(by_mean[k])) continue;
    take(by_mean[k], "surrogate's best prediction");
    ++taken;
  }
  // Local search: one-parameter neighbours by predicted time (two-parameter ones once a
  // centre's one-parameter neighbourhood is all tried). Around the best while the search
  // moves. Once it stalls, the first pick ranks everything within stall_radius
  // parameters of the best (a two-parameter move crosses a ridge no one-parameter step
  // does) and the others go around the other basins in turn, so one basin cannot take
  // the whole budget.
  // Local picks rank by predicted time, or by expected improvement (local_by_ei).
  std::vector<size_t> local_order = by_mean;
  if (options_.local_by_ei)
    std::stable_sort(local_order.begin(), local_order.end(),
                     [&](size_t a, size_t b) { return score[a] > score[b]; });
  // The best-ranked point within `radius` parameters of the centre.
  auto local_pick_within = [&](const PointValues& centre, int radius, const std::string& why) {
    for (size_t k = 0; k < n; ++k) {
      const size_t i = local_order[k];
      if (blocked(i) || dist(cand.point(i), centre) > radius) continue;
      take(i, why);
      return true;
    }
    return false;
  };
  // The same from min_radius out to 2 parameters, the nearest ring that has one.
  auto local_pick = [&](const PointValues& centre, int min_radius, const std::string& why) {
    for (int radius = min_radius; radius <= std::max(2, min_radius); ++radius)
      if (local_pick_within(centre, radius, why)) return true;
    return false;
  };
  for (int l = 0; l < options_.local_per_batch && batch.proposals.size() < want; ++l) {
    if (stalled && l == 0 && options_.stall_neighbours_first &&
        local_pick_within(elite.front(), 1,
                          "one-parameter neighbour of the best (the search stalled)"))
      continue;
    if (stalled && l == 0 && options_.stall_radius > 1 &&
        local_pick(elite.front(), options_.stall_radius,
                   "within " + std::to_string(options_.stall_radius) + " parameters of the best (the search stalled)"))
      continue;
    if (stalled && basins.size() > 1) {
      const size_t b = 1 + (static_cast<size_t>(l) + history.size() / want) % (basins.size() - 1);
      if (local_pick(basins[b], 1, "neighbour of basin " + std::to_string(b + 1) + " (the search stalled)")) continue;
    }
    if (options_.local_elites > 1) {
      // The original rule: neighbours of any of the local_elites best.
      bool done = false;
      for (size_t k = 0; k < n && !done; ++k) {
        const size_t i = by_mean[k];
        if (blocked(i) || !within(cand.point(i), 1)) continue;
        take(i, "one-parameter neighbour of one of the best so far");
        done = true;
      }
      continue;
    }
    local_pick(elite.front(), 1, "one-parameter neighbour of one of the best so far");
  }
  // Exploration share: the most uncertain of the candidates predicted among the best
  // explore_quantile, so a region the model knows little about gets measured.
  if (options_.explore_per_batch > 0) {
    const size_t pool = std::max<size_t>(1, static_cast<size_t>(options_.explore_quantile * double(n)));
    for (int e = 0; e < options_.explore_per_batch && batch.proposals.size() < want; ++e) {
      size_t best_i = n;
      for (size_t k = 0; k < pool && k < n; ++k) {
        const size_t i = by_mean[k];
        if (!blocked(i) && (best_i == n || sigma[i] > sigma[best_i])) best_i = i;
      }
      if (best_i == n) break;
      take(best_i, "exploration (most uncertain of the promising)");
    }
  }
  // Under-sampled regions: once stalled, among the candidates predicted in the best
  // far_quantile, the one farthest (in parameter ranks) from everything tried. A region
  // the model has one bad sample of is predicted at the clip and never wins expected
  // improvement; this measures it anyway.
  if (stalled && options_.far_per_batch > 0) {
    // Distances to everything tried (the first nr features: the parameters' ranks),
    // most recent first: a candidate near the search's latest points drops out soonest.
    // The order changes no result: a candidate with any tried point within the best
    // distance so far loses whichever it meets first.
    const size_t nr = view.active().size();
    std::vector<const float*> tried_f;
    tried_f.reserve(history.size() + want);
    for (size_t i = 0; i < n; ++i)  // this batch's picks so far count as tried
      if (picked[i]) tried_f.push_back(cand.features(i));
    for (size_t i = history.size(); i > 0; --i) tried_f.push_back(history.ranks(i - 1));
    const size_t pool = std::max<size_t>(1, static_cast<size_t>(options_.far_quantile * double(n)));
    for (int r = 0; r < options_.far_per_batch && batch.proposals.size() < want; ++r) {
      size_t best_i = n;
      double best_d = -1;
      for (size_t k = 0; k < pool && k < n; ++k) {
        const size_t i = by_mean[k];
        if (blocked(i)) continue;
        const float* g = cand.features(i);
        double nearest = std::numeric_limits<double>::infinity();
        for (size_t t = 0; t < tried_f.size() && nearest > best_d; ++t) {
          const float* h = tried_f[t];
          double d = 0;
          for (size_t q = 0; q < nr; ++q) d += std::fabs(g[q] - h[q]);
          nearest = std::min(nearest, d);
        }
        if (nearest > best_d) {
          best_d = nearest;
          best_i = i;
        }
      }
      if (best_i == n) break;
      take(best_i, "least sampled of the promising (the search stalled)");
      tried_f.insert(tried_f.begin(), cand.features(best_i));
    }
  }
  // Restart: once stalled, the best predicted candidates far from every basin found.
  if (stalled) {
    for (int r = 0; r < options_.restart_per_batch && batch.proposals.size() < want; ++r) {
      size_t best_i = n;
      for (size_t i = 0; i < n; ++i) {
        if (blocked(i)) continue;
        bool far = true;
        for (const auto& b : basins)
          if (dist(cand.point(i), b) < options_.restart_distance) far = false;
        if (far && (best_i == n || score[i] > score[best_i])) best_i = i;
      }
      if (best_i == n) break;
      take(best_i, "restart away from the basins found (the search stalled)");
    }
  }

  // The second model's picks: its best prediction first (second_exploit), then its
  // expected improvement, each pick damping its neighbours' scores as the first model's do.
  if (options_.second_picks > 0) {
    const std::string model = gp ? "forest's " : "Gaussian process's ";
    constexpr size_t kExactBlock = 256;
    for (int r = 0; r < options_.second_picks && batch.proposals.size() < want; ++r) {
      const bool exploit = r < options_.second_exploit;
      size_t best_i = n;
      for (;;) {
        best_i = n;
        for (size_t i = 0; i < n; ++i) {
          if (blocked(i)) continue;
          if (best_i == n || (exploit ? mu2[i] < mu2[best_i] : score2[i] > score2[best_i])) best_i = i;
        }
        if (best_i == n || exploit || exact2[best_i]) break;
        // The leader is a bound: the deviation of the leading bounds, then look again.
        // A candidate whose bound is below an exact score cannot win, so the pick is the
        // one that scoring every candidate would make.
        std::vector<size_t> open;
        for (size_t i = 0; i < n; ++i)
          if (!exact2[i] && !blocked(i)) open.push_back(i);
        const size_t k = std::min(kExactBlock, open.size());
        std::partial_sort(open.begin(), open.begin() + static_cast<std::ptrdiff_t>(k), open.end(),
                          [&](size_t a, size_t b) { return score2[a] > score2[b] || (score2[a] == score2[b] && a < b); });
        open.resize(k);
        make_exact2(open);
      }
      if (best_i == n) break;
      take(best_i, model + (exploit ? "best prediction" : "expected improvement"));
      for (size_t j = 0; j < n; ++j)
        if (dist(cand.point(best_i), cand.point(j)) <= 1) {
          score2[j] *= options_.diversity_penalty;
          damping2[j] *= options_.diversity_penalty;
        }
    }
  }

  std::vector<char> eligible(n, 1);
  if (options_.region_radius > 0)
    for (size_t i = 0; i < n; ++i) eligible[i] = within(cand.point(i), options_.region_radius);
  if (!thompson && options_.ei_quantile < 1.0) {
    const size_t keep = std::max(want, static_cast<size_t>(options_.ei_quantile * double(n)));
    for (size_t k = keep; k < n; ++k) eligible[by_mean[k]] = 0;
  }
  std::vector<int> tree_order(static_cast<size_t>(trees));
  std::iota(tree_order.begin(), tree_order.end(), 0);
  const int draw = std::max(1, static_cast<int>(std::lround(options_.thompson_trees * trees)));
  while (batch.proposals.size() < want) {
    size_t best = n;
    if (thompson) {
      std::shuffle(tree_order.begin(), tree_order.end(), rng);
      double best_value = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < n; ++i) {
        if (blocked(i) || !eligible[i]) continue;
        const double* t = per_tree.data() + i * static_cast<size_t>(trees);
        double v = 0;
        for (int k = 0; k < draw; ++k) v += t[tree_order[static_cast<size_t>(k)]];
        if (v < best_value) {
          best_value = v;
          best = i;
        }
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        if (blocked(i) || !eligible[i]) continue;
        if (best == n || score[i] > score[best] || (score[i] == score[best] && mu[i] < mu[best]))
          best = i;
      }
    }
    if (best == n) {
      // The trust region or quantile ran dry: widen to every candidate.
      if (std::find(eligible.begin(), eligible.end(), 0) == eligible.end()) break;
      std::fill(eligible.begin(), eligible.end(), 1);
      continue;
    }
    take(best, thompson ? "Thompson sample of the surrogate" : "expected improvement");
  }
  // Only copies of known times are left: they are still untried configurations.
  for (size_t k = 0; k < n && batch.proposals.size() < want; ++k)
    if (!picked[by_mean[k]]) take(by_mean[k], "surrogate's best prediction (no other is left)");
  profile_.picks_ms = lap_ms(&clock);
  return batch;
}

}  // namespace tilesmith
