#include "tuner/search/evolve_proposer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "analysis/stats.h"
#include "tuner/search/detail/acquisition.h"
#include "tuner/search/detail/candidate_generator.h"
#include "tuner/search/detail/convergence.h"
#include "tuner/search/detail/effects.h"
#include "tuner/search/detail/evolve_parts.h"
#include "tuner/search/detail/pick_policies.h"
#include "tuner/search/detail/surrogate.h"
#include "tuner/search/request_check.h"

namespace tilesmith {

namespace parts = proposers::detail;
using proposers::detail::HistoryIndex;
using proposers::detail::SpaceView;

namespace {

std::string fmt_ms(double ms) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.4g ms", ms);
  return buf;
}

using Clock = std::chrono::steady_clock;

// Milliseconds since *t, and *t moved to now: one phase of EvolveProfile.
double lap_ms(Clock::time_point* t) {
  const auto now = Clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - *t).count();
  *t = now;
  return ms;
}

}  // namespace

namespace proposers::detail {

SurrogateOptions surrogate_options(const EvolveOptions& o) {
  SurrogateOptions s;
  s.process_leads = o.surrogate == Surrogate::kGaussianProcess;
  s.second = o.second_picks > 0;
  s.forest = o.forest;
  s.gaussian_process = o.gaussian_process;
  s.clip_quantile = o.clip_quantile;
  s.gp_clip_quantile = o.gp_clip_quantile;
  s.failure_penalty = o.failure_penalty;
  s.max_forest_rows = o.max_forest_rows;
  s.max_process_rows = o.max_process_rows;
  s.best_share = o.training_best_share;
  s.recent_share = o.training_recent_share;
  return s;
}

CandidateOptions candidate_options(const EvolveOptions& o) {
  CandidateOptions c;
  c.pool_size = o.pool_size;
  c.max_scored = o.max_scored;
  return c;
}

AcquisitionOptions acquisition_options(const EvolveOptions& o) {
  AcquisitionOptions a;
  // Thompson sampling draws from the forest's trees: not with the process leading.
  a.thompson = o.surrogate != Surrogate::kGaussianProcess && o.acquisition == tilesmith::Acquisition::kThompson;
  a.exploration = o.exploration;
  a.diversity_penalty = o.diversity_penalty;
  a.thompson_trees = o.thompson_trees;
  return a;
}

PickOptions pick_options(const EvolveOptions& o) {
  PickOptions p;
  p.exploit_per_batch = o.exploit_per_batch;
  p.local_per_batch = o.local_per_batch;
  p.local_elites = o.local_elites;
  p.local_by_ei = o.local_by_ei;
  p.stall_neighbours_first = o.stall_neighbours_first;
  p.stall_radius = o.stall_radius;
  p.basins = o.basins;
  p.basin_distance = o.basin_distance;
  p.explore_per_batch = o.explore_per_batch;
  p.explore_quantile = o.explore_quantile;
  p.far_per_batch = o.far_per_batch;
  p.far_quantile = o.far_quantile;
  p.restart_per_batch = o.restart_per_batch;
  p.restart_distance = o.restart_distance;
  p.second_picks = o.second_picks;
  p.second_exploit = o.second_exploit;
  p.region_radius = o.region_radius;
  p.ei_quantile = o.ei_quantile;
  return p;
}

TrainingData training_data(const HistoryIndex& history, const SpaceView& view) {
  TrainingData d;
  d.observations = &history.observations();
  d.best_first = &history.best_first();
  d.features = history.features(0);
  d.stride = view.feature_count();
  d.ranks = static_cast<int>(view.active().size());
  return d;
}

size_t elite_count(const EvolveOptions& o) {
  return static_cast<size_t>(std::max(o.elite, o.local_elites));
}

size_t since_gain(const HistoryIndex& history) { return history.size() - history.last_gain(); }

bool stalled(const EvolveOptions& o, const HistoryIndex& history, size_t want) {
  return o.stall_generations > 0 && since_gain(history) >= static_cast<size_t>(o.stall_generations) * want;
}

Distance distance(const EvolveOptions& o, const HistoryIndex& history, bool stalled) {
  // The effect is judged on pairs measured so far, not near the best the search has yet
  // to find: once the search stalls (no_effect_until_stall), nothing is masked.
  if (o.no_effect_pairs <= 0 || (stalled && o.no_effect_until_stall)) return Distance();
  return Distance(no_effect_mask(history.effects(), o.no_effect_pairs, o.no_effect_tolerance,
                                 o.no_effect_max));
}

}  // namespace proposers::detail

EvolveProposer::EvolveProposer(EvolveOptions options)
    : options_(options), history_(options.stall_gain) {}

const std::vector<PointValues>& EvolveProposer::pending_points(const ProposalRequest& request) {
  pending_.clear();
  if (request.pending)
    for (const Config& c : *request.pending)
      if (auto p = request.space->from_config(c); p.ok()) pending_.push_back(std::move(p).value());
  return pending_;
}

ProposalBatch EvolveProposer::initial_design(const ProposalRequest& request, const SpaceView& view,
                                             std::mt19937_64& rng, size_t want) {
  const HistoryIndex& history = history_;
  ProposalBatch batch;
  batch.proposer = name();
  // The template's seeds first, each valid one in its order.
  std::vector<PointValues> seed_points;
  if (request.seeds)
    for (const Config& seed : *request.seeds) {
      auto point = request.space->from_config(seed);
      if (point.ok() && view.is_valid(*point)) seed_points.push_back(*point);
    }
  size_t seeds = 0;
  const parts::Candidates cand =
      parts::CandidateGenerator(view, history, parts::candidate_options(options_), &pending_points(request))
          .initial_pool(seed_points, rng, &seeds);
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

int EvolveProposer::design_length(const SpaceView& view, const HistoryIndex& history) const {
  // A prior that agrees with the measurements so far (the rank correlation between its
  // model's prediction and the measured times at least prior_agree_rho) has shown where to
  // look: the model takes over sooner. One that does not (an unrelated space, another
  // problem whose order is not this one's) leaves the space-filling start as long as cold.
  // Until six measurements succeeded the agreement is not judged, and the design runs to
  // the shorter length, where it is judged. Past both lengths the answer no longer matters
  // (and is not worth a prediction per row).
  if (!view.has_prior() ||
      history.size() >= static_cast<size_t>(std::max(options_.initial_design, options_.initial_design_prior)))
    return options_.initial_design;
  std::vector<double> predicted, measured;
  for (const auto& o : history.observations())
    if (o.ok) {
      predicted.push_back(*view.prior_prediction(o.point));
      measured.push_back(o.score);
    }
  if (predicted.size() < 6 || analysis::rank_correlation(predicted, measured) >= options_.prior_agree_rho)
    return options_.initial_design_prior;
  return options_.initial_design;
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
  auto view_ptr = views_.get(*request.space, request.context, request.prior, options_.prior_feature);
  const SpaceView& view = *view_ptr;
  profile_.view_ms = lap_ms(&clock);
  history_.update(view_ptr, request.history);
  const HistoryIndex& history = history_;
  profile_.history_ms = lap_ms(&clock);
  profile_.history_rows = history.size();
  profile_.absorbed_rows = history.absorbed_last();
  std::mt19937_64 rng(parts::mix_seed(request.seed, history.size()));

  const size_t design = static_cast<size_t>(design_length(view, history));
  if (history.size() < design || history.ok_count() < 2) {
    // A prior that agrees hands over to the model where its design ends, without a batch of
    // space-filling samples more; otherwise batches are whole, as cold.
    size_t count = want;
    if (view.has_prior() && design == static_cast<size_t>(options_.initial_design_prior) && history.size() < design)
      count = std::min(want, design - history.size());
    return initial_design(request, view, rng, count);
  }

  // Half batches just past a design that an agreeing prior shortened (prior_quick_evaluations).
  size_t batch_size = want;
  if (view.has_prior() && design == static_cast<size_t>(options_.initial_design_prior) &&
      design < static_cast<size_t>(options_.initial_design) &&
      history.size() < design + static_cast<size_t>(std::max(0, options_.prior_quick_evaluations)))
    batch_size = std::max<size_t>(1, want / 2);

  // The parts, in the order they draw from rng: the surrogate (the forest's seed), the
  // candidates (a pool's draws), the picks (Thompson's draws).
  parts::SurrogateModels models;
  models.fit(parts::training_data(history, view), parts::surrogate_options(options_), rng);
  profile_.process_rows = models.process_rows();
  profile_.forest_rows = models.forest_rows();
  profile_.process_fit_ms = models.process_fit_ms();
  profile_.forest_fit_ms = models.forest_fit_ms();
  lap_ms(&clock);

  const std::vector<PointValues> elite = parts::elite_points(history, parts::elite_count(options_));
  const parts::Candidates cand =
      parts::CandidateGenerator(view, history, parts::candidate_options(options_), &pending_points(request))
          .generate(elite, rng);
  const size_t n = cand.size();
  profile_.candidates = n;
  profile_.candidates_ms = lap_ms(&clock);
  if (n == 0) {
    if (want > 0)
      batch.status = Status::failed_precondition("evolve: no untried valid configuration is left");
    return batch;
  }

  const parts::Acquisition acquisition(models, parts::acquisition_options(options_));
  parts::CandidateScores scores = acquisition.score(cand.feature_rows(), n);
  profile_.score_ms = lap_ms(&clock);

  const bool stalled = parts::stalled(options_, history, want);
  const parts::Distance dist = parts::distance(options_, history, stalled);
  if (request.convergence_margin && view.enumerated())
    batch.converged = converged(*request.convergence_margin, view, history, scores, want);
  parts::BatchPicks picks(cand, &scores, acquisition, dist, history.observations(), batch_size);
  parts::PickPolicies(view, history, cand, acquisition, dist, elite, stalled,
                       parts::pick_options(options_))
      .pick(&picks, &scores, rng);
  for (const parts::Pick& p : picks.picks())
    batch.proposals.push_back({request.space->to_config(cand.point(p.candidate)),
                               p.why + ", predicted " + fmt_ms(std::exp(scores.mean[p.candidate])) +
                                   " (best so far " + fmt_ms(std::exp(models.best())) + ")"});
  profile_.picks_ms = lap_ms(&clock);
  return batch;
}

// How likely the best found is within the asked margin of the space's best: over every
// untried point when all were scored, a uniform subset standing for the rest otherwise
// (no estimate from an evolutionary pool: it is not a sample of the space).
double EvolveProposer::converged(double margin, const SpaceView& view, const HistoryIndex& history,
                                 const parts::CandidateScores& scores, size_t want) const {
  const size_t n = scores.size();
  parts::ConvergenceInputs ci;
  ci.mean = &scores.mean;
  ci.stddev = &scores.stddev;
  ci.threshold = std::log(history.observations()[history.best_first().front()].score) - std::log1p(margin);
  ci.spread_scale = options_.convergence_spread;
  const double untried = double(view.points().size()) - double(history.tried().size());
  ci.coverage = std::max(1.0, untried / double(n));
  // The model alone is too sure early on, before its picks have had a chance to find
  // what it does not know (docs/search.md, "Convergence estimate"): it is weighed by
  // how long the best has stood, 1 - exp(-evaluations since the last 1% gain / tau).
  const double tau = options_.convergence_stood * double(want);
  const double stood = tau > 0 ? 1 - std::exp(-double(parts::since_gain(history)) / tau) : 1.0;
  return parts::probability_none_better(ci) * stood;
}

}  // namespace tilesmith
