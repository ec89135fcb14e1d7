#pragma once
// "evolve": the default offline proposer. A surrogate model guides the search:
//
//  1. Initial design. Until the history holds `initial_design` observations (at least
//     two of them successful), a space-filling batch: from a large random sample of
//     untried valid points, greedily the one farthest (in normalised parameter ranks)
//     from everything tried or chosen so far. With a prior (ProposalRequest::prior) that
//     agrees with the measurements, `initial_design_prior` observations instead, and the
//     next `prior_quick_evaluations` come in half batches (the model refitted sooner).
//  2. Surrogate. A random forest fitted on the history: log(time) of every ok trial,
//     clipped at the `clip_quantile` of the successes (the model's job is to tell good
//     configurations apart); every failed trial (invalid, compile_error, wrong_result,
//     timeout, crash, ...) counts as `failure_penalty` (in log units) above that, so
//     the model steers away from failures and their neighbourhood. Features: each
//     parameter's rank, and log-products/ratios of parameter pairs (SpaceView).
//  3. Candidates. Every untried valid point when the space can be enumerated (up to
//     `max_scored`, beyond which a uniform subset plus the elite's neighbourhoods);
//     otherwise an evolutionary pool: random valid samples, all one-parameter
//     neighbours, mutations and crossovers of the best configurations found.
//  4. Batch. `exploit_per_batch` points with the best predicted time;
//     `local_per_batch` untried one-parameter neighbours of the `local_elites` best
//     configurations found, by predicted time — until the search stalls (the best has
//     not improved by `stall_gain` in `stall_generations` batches): then the first local
//     pick ranks everything within `stall_radius` parameters of the best (once its
//     one-parameter neighbours are all tried), and the others
//     go to the other distinct basins found (the best configurations at least
//     `basin_distance` parameters apart), in turn, so one basin cannot take the whole
//     budget; and `far_per_batch` picks go to the promising candidates farthest from
//     everything tried (docs/search.md, "Why runs stall"). Optionally
//     `explore_per_batch` picks of the most uncertain promising candidates and, once
//     stalled, `restart_per_batch` picks far from every basin. The rest by the
//     acquisition:
//       expected improvement (forest mean and spread) over the best time found, each
//       pick damping its one-parameter neighbours' scores by `diversity_penalty`, or
//       Thompson sampling: each pick is the best candidate of a random half of the trees.
//     Before those, `second_picks` by a Gaussian process on the parameters' ranks
//     (detail/gaussian_process.h), by its expected improvement: it spreads what one
//     measurement shows about a pair of parameters to their neighbours, where the
//     forest has to see an interaction before it predicts it.
//     With `region_radius` > 0 the acquisition looks only within that many parameter
//     changes of the `local_elites` best configurations (a trust region).
//  5. Parameters with no measured effect (tuner/search/detail/effects.h): when pairs of
//     measurements that differ in one parameter alone show no more than noise between
//     them (`no_effect_pairs`, `no_effect_tolerance`), a candidate that differs from a
//     measured or already picked configuration only in such parameters is a copy of a
//     known time and is passed over (until the search stalls: the evidence comes from
//     where the search has been, not from the best it has yet to find), and distances
//     between configurations (neighbourhoods, basins, diversity) leave those parameters
//     out.
//
// Cost (docs/search.md, "Proposal cost"): the history is mapped onto the space once per
// row and kept between calls (detail/history_index.h), and each model is fitted on at
// most max_forest_rows / max_process_rows rows (detail/training_rows.h: the best, the
// most recent and a spread of the rest; every row below the bound), so a generation
// costs about the same at 20,000 rows as at 500. last_profile() says where the last
// call's time went.
//
// The parts, each in tuner/search/detail/ with its own test (tests/tuner/search/
// surrogate_test.cpp, candidate_generator_test.cpp, acquisition_test.cpp,
// pick_policies_test.cpp) and timed on its own by tilesmith_proposal_cost_bench --parts:
// surrogate.h (steps 2 and the models' predictions), candidate_generator.h (step 3 and the
// initial design's pool), acquisition.h (expected improvement, Thompson sampling, the
// second model's bound) and pick_policies.h (step 4's kinds of pick, step 5's blocking and
// distances). propose() composes them; detail/evolve_parts.h maps EvolveOptions onto them.
//
// With request.convergence_margin it also estimates how likely the best found is within
// that margin of the space's best (tuner/search/detail/convergence.h), on enumerated
// spaces.
//
// Generic: it sees only the space, the context, the history and the seed. Deterministic
// for a given seed and history: what it keeps between calls (the view of the last space,
// the mapped history) never changes a result, only its cost. Not thread-safe (one
// propose() at a time).

#include <cstddef>

#include "tuner/search/proposer.h"
#include "tuner/search/detail/acquisition.h"
#include "tuner/search/detail/candidate_generator.h"
#include "tuner/search/detail/forest.h"
#include "tuner/search/detail/gaussian_process.h"
#include "tuner/search/detail/history_index.h"
#include "tuner/search/detail/pick_policies.h"
#include "tuner/search/detail/surrogate.h"
#include "tuner/search/detail/view_cache.h"

namespace tilesmith {

namespace proposers::detail {
struct CandidateScores;
}

enum class Acquisition { kExpectedImprovement, kThompson };
// The model behind the predictions: a random forest (detail/forest.h) or a Gaussian
// process with one length scale per parameter (detail/gaussian_process.h).
enum class Surrogate { kForest, kGaussianProcess };

// The parts' own defaults (each part's options struct), so that EvolveOptions and a part
// built on its own start from the same values, written once.
namespace evolve_defaults {
inline constexpr proposers::detail::SurrogateOptions kSurrogateDefaults{};
inline constexpr proposers::detail::CandidateOptions kCandidateDefaults{};
inline constexpr proposers::detail::AcquisitionOptions kAcquisitionDefaults{};
inline constexpr proposers::detail::PickOptions kPickDefaults{};
}  // namespace evolve_defaults

struct EvolveOptions {
  int initial_design = 16;
  // With a prior (ProposalRequest::prior): the initial design ends at initial_design_prior
  // observations instead while the prior agrees with them (the rank correlation of its
  // model's prediction with the measured times is at least prior_agree_rho). On the search
  // benchmark's transfer pairs 10 was the best of 8, 10 and 12 (docs/search.md, "Transfer").
  // prior_feature adds the prior's prediction to the models' features (SpaceView::
  // prior_feature): off, it held the search in the prior's basin (TITAN RTX <- RTX 3090: 60
  // evaluations to 5% against 29 without it).
  int initial_design_prior = 10;
  double prior_agree_rho = 0.5;
  bool prior_feature = false;
  // Where the shorter design ended, the next prior_quick_evaluations evaluations come in
  // batches of half the size asked for (at least 1): the prior's picks have shown the model
  // where to look, and refitting it after 4 measurements rather than 8 takes the next step
  // from there sooner. On the transfer pairs (seeds 1-80): TITAN RTX <- RTX 3090 20 -> 16
  // evaluations to 5%, fp32 4096^3 <- 128x4096x4096 20 -> 17, the rest unchanged
  // (docs/search.md, "Transfer"). 0: whole batches.
  int prior_quick_evaluations = 8;
  Surrogate surrogate = Surrogate::kForest;
  proposers::detail::ForestOptions forest;
  proposers::detail::GaussianProcessOptions gaussian_process;
  // The Gaussian process's clip (it models how bad the bad ones are better than a forest
  // does; 1: none).
  double gp_clip_quantile = evolve_defaults::kSurrogateDefaults.gp_clip_quantile;
  // Picks per batch by the other model (the Gaussian process when the surrogate is the
  // forest, and the other way round): the first second_exploit by its best prediction,
  // the rest by its expected improvement. Two Gaussian-process picks beside the forest
  // halve the median on gemm_wgmma fp32 128 and lower the worst run on five of the six
  // recorded spaces (docs/search.md, "Fourth pass"); 0 turns the Gaussian process off.
  int second_picks = evolve_defaults::kPickDefaults.second_picks;
  int second_exploit = evolve_defaults::kPickDefaults.second_exploit;
  // log-time units beyond the slowest success (0.7: about 2x)
  double failure_penalty = evolve_defaults::kSurrogateDefaults.failure_penalty;
  // Targets above this quantile of the successful log-times are clipped to it, so the
  // trees spend their splits telling good configurations apart rather than bad ones
  // (1: no clipping). Failures then sit failure_penalty above the clip.
  double clip_quantile = evolve_defaults::kSurrogateDefaults.clip_quantile;
  int exploit_per_batch = evolve_defaults::kPickDefaults.exploit_per_batch;
  int local_per_batch = evolve_defaults::kPickDefaults.local_per_batch;
  int local_elites = evolve_defaults::kPickDefaults.local_elites;
  Acquisition acquisition = Acquisition::kExpectedImprovement;
  // expected improvement only
  double diversity_penalty = evolve_defaults::kAcquisitionDefaults.diversity_penalty;
  // expected improvement's xi (log units)
  double exploration = evolve_defaults::kAcquisitionDefaults.exploration;
  // Expected improvement only considers this best fraction of the candidates by
  // predicted time (1: all).
  double ei_quantile = evolve_defaults::kPickDefaults.ei_quantile;
  // fraction of the trees behind each Thompson pick
  double thompson_trees = evolve_defaults::kAcquisitionDefaults.thompson_trees;
  // 0: no trust region
  int region_radius = evolve_defaults::kPickDefaults.region_radius;
  // random part of the pool when the space is not enumerated
  size_t pool_size = evolve_defaults::kCandidateDefaults.pool_size;
  // largest candidate set scored per call
  size_t max_scored = evolve_defaults::kCandidateDefaults.max_scored;
  int elite = 8;                // best configurations whose neighbourhoods join the pool
  // The convergence estimate's spread factor (tuner/search/detail/convergence.h),
  // calibrated on the recorded spaces.
  double convergence_spread = 1.0;
  // ... weighed by 1 - exp(-evaluations since the best last improved by stall_gain /
  // (convergence_stood batches)); 0: the model alone.
  double convergence_stood = 4.0;
  // Stalls: the search has stalled when the best has not improved by stall_gain in
  // stall_generations batches (0: never). Then local search moves to the other basins
  // (the `basins` best configurations at least basin_distance parameters apart) and
  // restart_per_batch picks go to the best expected improvement at least
  // restart_distance parameters from every basin.
  int stall_generations = 3;
  double stall_gain = 0.01;
  int basins = evolve_defaults::kPickDefaults.basins;
  int basin_distance = evolve_defaults::kPickDefaults.basin_distance;
  int restart_per_batch = evolve_defaults::kPickDefaults.restart_per_batch;
  int restart_distance = evolve_defaults::kPickDefaults.restart_distance;
  // Once stalled: far_per_batch picks of the candidates farthest from everything tried
  // among the best far_quantile by predicted time.
  int far_per_batch = evolve_defaults::kPickDefaults.far_per_batch;
  double far_quantile = evolve_defaults::kPickDefaults.far_quantile;
  // Once stalled, the first local pick ranks everything within this many parameters of
  // the best (1: one-parameter neighbours only).
  int stall_radius = evolve_defaults::kPickDefaults.stall_radius;
  // ... but only once every one-parameter neighbour of the best is tried.
  bool stall_neighbours_first = evolve_defaults::kPickDefaults.stall_neighbours_first;
  // Exploration share: per batch, the most uncertain candidates among the best
  // explore_quantile by predicted time.
  int explore_per_batch = evolve_defaults::kPickDefaults.explore_per_batch;
  double explore_quantile = evolve_defaults::kPickDefaults.explore_quantile;
  // Parameters with no measured effect (tuner/search/detail/effects.h): at least
  // no_effect_pairs pairs of measurements that differ in the parameter alone, with a
  // mean absolute log-time difference of at most no_effect_tolerance (0 pairs: off).
  // Candidates that differ from a measured configuration only in such parameters are
  // passed over while others are left; distances leave those parameters out.
  int no_effect_pairs = 2;
  double no_effect_tolerance = 0.01;
  // The effect is judged on pairs measured so far, not near the best the search has
  // yet to find: once the search stalls, copies are candidates like any other.
  bool no_effect_until_stall = true;
  // Judge by the largest difference of a pair instead of the mean.
  bool no_effect_max = false;
  // Local picks by expected improvement instead of predicted time.
  bool local_by_ei = evolve_defaults::kPickDefaults.local_by_ei;
  // Rows each model is fitted on, at most (0: every row); past the bound, the best
  // training_best_share of it, the most recent training_recent_share and the rest spread
  // over the history (detail/training_rows.h). Both fits grow faster than the rows (a
  // forest as rows x log rows, a Gaussian process's factorisation as rows cubed), and
  // the process's prediction at every candidate costs rows x candidates: the largest
  // part of a generation on a space of 17,956 points. 300 process rows keep every call
  // of a 300-evaluation run (the search benchmark's) exactly as it was
  // (docs/search.md, "Proposal cost").
  size_t max_forest_rows = evolve_defaults::kSurrogateDefaults.max_forest_rows;
  size_t max_process_rows = evolve_defaults::kSurrogateDefaults.max_process_rows;
  double training_best_share = evolve_defaults::kSurrogateDefaults.best_share;
  double training_recent_share = evolve_defaults::kSurrogateDefaults.recent_share;
};

// Where one propose() call's time went (milliseconds), and the sizes behind it.
struct EvolveProfile {
  double view_ms = 0;         // the space's view (built once per space)
  double history_ms = 0;      // bringing the mapped history up to date
  double process_fit_ms = 0;  // the Gaussian process
  double forest_fit_ms = 0;   // the forest
  double candidates_ms = 0;   // gathering the candidates
  double score_ms = 0;        // both models' predictions at every candidate
  double picks_ms = 0;        // the batch's picks (and the convergence estimate)
  size_t history_rows = 0, absorbed_rows = 0, forest_rows = 0, process_rows = 0, candidates = 0;
};

class EvolveProposer final : public Proposer {
 public:
  explicit EvolveProposer(EvolveOptions options = {});
  std::string name() const override { return "evolve"; }
  bool independent() const override { return true; }
  // Fewer than request.count only when fewer untried valid configurations remain;
  // status failed_precondition when none remain.
  ProposalBatch propose(const ProposalRequest& request) override;
  // The last propose() call's profile (all zero before the first, and phases a call
  // did not reach, such as the models during the initial design).
  const EvolveProfile& last_profile() const { return profile_; }

 private:
  // Observations the initial design runs to (initial_design, or initial_design_prior with
  // a prior that agrees with them).
  int design_length(const proposers::detail::SpaceView& view, const proposers::detail::HistoryIndex& history) const;
  ProposalBatch initial_design(const ProposalRequest& request,
                               const proposers::detail::SpaceView& view, std::mt19937_64& rng, size_t want);
  // request.pending as points of the space (those that map onto it), kept in pending_.
  const std::vector<PointValues>& pending_points(const ProposalRequest& request);
  // The convergence estimate (request.convergence_margin) from the candidates' scores.
  double converged(double margin, const proposers::detail::SpaceView& view,
                   const proposers::detail::HistoryIndex& history,
                   const proposers::detail::CandidateScores& scores, size_t want) const;
  EvolveOptions options_;
  proposers::detail::ViewCache views_;
  proposers::detail::HistoryIndex history_;
  EvolveProfile profile_;
  std::vector<PointValues> pending_;
};

}  // namespace tilesmith
