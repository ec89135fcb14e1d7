#pragma once
// What the offline proposers need of a parameter space, computed once per space and
// context: the valid points (enumerated when affordable), a numeric encoding for
// models, one-parameter neighbourhoods, sampling, and the history mapped onto points.
// Generic: nothing here knows any parameter's name or meaning.
//
// Immutable after build(); const methods are thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "registry/space.h"
#include "tuner/search/proposer.h"
#include "tuner/search/detail/forest.h"

namespace tilesmith::proposers::detail {

struct PointHash {
  size_t operator()(const PointValues& p) const;
};
using PointSet = std::unordered_set<PointValues, PointHash>;

struct ViewLimits {
  // Enumerate the valid points when the pruned walk over the space ends within this many
  // value trials (ParamSpace::for_each_valid) and finds at most max_valid; otherwise the
  // view samples, each point a randomised walk of its own where few uniform draws are
  // valid. The walk's steps, not the Cartesian product, are its cost (docs/search.md,
  // "When the space view samples").
  std::uint64_t max_walk_steps = 20'000'000;
  std::uint64_t max_valid = 2'000'000;
  bool pair_features = true;
  std::uint64_t max_cached_features = 32'000'000;
};

class SpaceView {
 public:
  // With `prior` (an earlier search of the same template elsewhere, ProposalRequest::prior),
  // the view ranks and models its measurements (has_prior, prior_rank, prior_prediction);
  // with `prior_feature` as well, the features end in one more: the model's prediction.
  static std::shared_ptr<const SpaceView> build(const ParamSpace& space, const SpaceContext& ctx,
                                                const ViewLimits& limits = {},
                                                const std::vector<PriorMeasurement>* prior = nullptr,
                                                bool prior_feature = false);
  // Identifies a space and context (for caching views between calls).
  static std::string fingerprint(const ParamSpace& space, const SpaceContext& ctx);

  const ParamSpace& space() const { return space_; }
  const SpaceContext& context() const { return ctx_; }
  size_t dims() const { return domains_.size(); }

  bool enumerated() const { return enumerated_; }
  // Every valid point in enumeration order (empty unless enumerated()).
  const std::vector<PointValues>& points() const { return points_; }
  // Position in points(), or -1 (not valid, or not enumerated).
  std::int64_t index_of(const PointValues& p) const;
  bool is_valid(const PointValues& p) const;

  // Model features, feature_count() floats per point: each parameter with more than one
  // value as its rank in the sorted domain scaled to [0, 1]; then, when built with
  // pair features, for each pair of such parameters whose values are all positive, the
  // sum and the difference of their log2 values (the log of their product and ratio:
  // tile sizes, thread counts and vector widths interact that way, and a tree cannot
  // form a ratio from single-parameter splits); then, with a prior, the prior feature.
  int feature_count() const { return base_feature_count() + (prior_in_features_ ? 1 : 0); }
  // The prior feature: where the point would rank (0 fastest .. 1 slowest) among the prior's
  // measurements, by a forest fitted on them (on the features before it). A model of the
  // target fitted on it can follow the prior where it agrees with the run's own
  // measurements and split on other features where it does not, rather than being held to
  // it (docs/search.md, "Transfer"). Absent when the prior maps fewer than kMinPriorRows
  // measurements onto this space.
  bool prior_feature() const { return prior_in_features_; }
  // The prior's model at p (the prior feature's value, whether or not it is among the
  // features): nullopt without one.
  std::optional<double> prior_prediction(const PointValues& p) const;
  // Whether the view has a prior (one that mapped at least kMinPriorRows measurements).
  bool has_prior() const { return !prior_ranks_.empty(); }
  // Where the prior measured p: its rank among the prior's measurements (0 fastest .. 1
  // slowest); nullopt when the prior did not measure it (or the view has no prior).
  std::optional<double> prior_rank(const PointValues& p) const {
    auto it = prior_ranks_.find(p);
    if (it == prior_ranks_.end()) return std::nullopt;
    return it->second;
  }
  static constexpr size_t kMinPriorRows = 8;
  void encode(const PointValues& p, float* out) const;
  // encode() of points()[index], cached at build time when the space is enumerated and
  // the cache stays under ViewLimits::max_cached_features floats; else nullptr.
  const float* encoded(size_t index) const {
    return features_.empty() ? nullptr
                             : features_.data() + index * static_cast<size_t>(feature_count());
  }
  // Rank of p[d] in parameter d's sorted domain (0 .. size-1), and the value at a rank.
  int rank(size_t d, std::int64_t value) const;
  std::int64_t value_at_rank(size_t d, int rank) const {
    return sorted_[d][static_cast<size_t>(rank)];
  }
  int domain_size(size_t d) const { return static_cast<int>(sorted_[d].size()); }
  // Parameters with more than one value.
  const std::vector<size_t>& active() const { return active_; }

  // Valid points that differ from p in exactly one parameter; with adjacent_only, only
  // to the next smaller or larger value of that parameter.
  void neighbours(const PointValues& p, bool adjacent_only, std::vector<PointValues>* out) const;
  // A random valid point: uniform when enumerated, else uniform by rejection from the
  // Cartesian product when that finds one soon, else a randomised depth-first draw.
  std::optional<PointValues> sample(std::mt19937_64& rng) const;
  // Parameters in which a and b differ.
  static int hamming(const PointValues& a, const PointValues& b);

 private:
  ParamSpace space_;
  SpaceContext ctx_;
  std::vector<std::vector<std::int64_t>> domains_;  // declared order
  std::vector<std::vector<std::int64_t>> sorted_;   // ascending
  std::vector<std::unordered_map<std::int64_t, int>> rank_;
  std::vector<size_t> active_;
  std::vector<std::pair<size_t, size_t>> pairs_;               // parameter indices
  std::vector<std::unordered_map<std::int64_t, float>> log2_;  // for parameters in pairs
  std::shared_ptr<const Forest> prior_model_;                   // on the base features
  bool prior_in_features_ = false;
  std::unordered_map<PointValues, double, PointHash> prior_ranks_;
  int base_feature_count() const { return static_cast<int>(active_.size() + 2 * pairs_.size()); }
  void fit_prior(const std::vector<PriorMeasurement>& prior, bool feature);
  void encode_base(const PointValues& p, float* out) const;  // the features before the prior's
  bool enumerated_ = false;
  std::vector<PointValues> points_;
  std::vector<float> features_;
  std::unordered_map<PointValues, std::int64_t, PointHash> index_;
};

// A history row as proposers use it (detail/history_index.h keeps them): the point tried
// (whatever its outcome) and, when measured, its score (Trial::score: the run's objective,
// the time by default). Configs that do not map onto the
// space (unknown parameters, values off a domain) cannot be proposed again anyway and are
// left out.
struct Observation {
  PointValues point;
  bool ok = false;
  double score = 0;  // when ok; lower is better
};

// A seed mixing the request's seed with the history, so a proposer asked twice with the
// same seed but a grown history does not repeat its random choices.
std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t salt);

}  // namespace tilesmith::proposers::detail
