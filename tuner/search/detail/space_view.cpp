#include "tuner/search/detail/space_view.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "base/hash.h"

namespace tilesmith::proposers::detail {

size_t PointHash::operator()(const PointValues& p) const {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (std::int64_t v : p) {
    h ^= static_cast<std::uint64_t>(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ULL;
  }
  return static_cast<size_t>(h ^ (h >> 31));
}

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t salt) {
  std::uint64_t x = seed ^ (salt * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string SpaceView::fingerprint(const ParamSpace& space, const SpaceContext& ctx) {
  Hasher h;
  h.add_field(space.to_json().dump());
  for (const auto& [k, v] : ctx.constants) h.add_field(k).add_field(std::to_string(v));
  if (ctx.device) {
    h.add_field(std::to_string(ctx.device->max_threads_per_block));
    h.add_field(std::to_string(ctx.device->shared_per_block_optin));
  }
  return h.hex();
}

std::shared_ptr<const SpaceView> SpaceView::build(const ParamSpace& space, const SpaceContext& ctx,
                                                  const ViewLimits& limits,
                                                  const std::vector<PriorMeasurement>* prior,
                                                  bool prior_feature) {
  auto v = std::make_shared<SpaceView>();
  v->space_ = space;
  v->ctx_ = ctx;
  for (size_t d = 0; d < space.parameters().size(); ++d) {
    const auto& values = space.parameters()[d].values;
    v->domains_.push_back(values);
    std::vector<std::int64_t> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    std::unordered_map<std::int64_t, int> rank;
    for (size_t i = 0; i < sorted.size(); ++i) rank[sorted[i]] = static_cast<int>(i);
    v->sorted_.push_back(std::move(sorted));
    v->rank_.push_back(std::move(rank));
    if (values.size() > 1) v->active_.push_back(d);
  }
  v->log2_.resize(v->domains_.size());
  if (limits.pair_features) {
    std::vector<size_t> positive;
    for (size_t d : v->active_) {
      const auto& dom = v->sorted_[d];
      if (dom.front() <= 0) continue;
      for (std::int64_t x : dom)
        v->log2_[d][x] = static_cast<float>(std::log2(static_cast<double>(x)));
      positive.push_back(d);
    }
    for (size_t i = 0; i < positive.size(); ++i)
      for (size_t j = i + 1; j < positive.size(); ++j)
        v->pairs_.emplace_back(positive[i], positive[j]);
  }
  if (prior && !prior->empty()) v->fit_prior(*prior, prior_feature);
  const bool walked = space.for_each_valid(
      ctx,
      [&](const PointValues& p) {
        if (v->points_.size() >= limits.max_valid) return false;
        v->points_.push_back(p);
        return true;
      },
      limits.max_walk_steps);
  if (!walked) {  // too many steps or too many points: the view samples
    v->points_.clear();
    return v;
  }
  v->enumerated_ = true;
  v->index_.reserve(v->points_.size());
  for (size_t i = 0; i < v->points_.size(); ++i) v->index_.emplace(v->points_[i], static_cast<std::int64_t>(i));
  const size_t nf = static_cast<size_t>(v->feature_count());
  if (nf > 0 && v->points_.size() * nf <= limits.max_cached_features) {
    v->features_.resize(v->points_.size() * nf);
    for (size_t i = 0; i < v->points_.size(); ++i) v->encode(v->points_[i], v->features_.data() + i * nf);
  }
  return v;
}

std::int64_t SpaceView::index_of(const PointValues& p) const {
  auto it = index_.find(p);
  return it == index_.end() ? -1 : it->second;
}

bool SpaceView::is_valid(const PointValues& p) const {
  if (enumerated_) return index_.count(p) > 0;
  return space_.is_valid(p, ctx_);
}

int SpaceView::rank(size_t d, std::int64_t value) const {
  auto it = rank_[d].find(value);
  return it == rank_[d].end() ? -1 : it->second;
}

void SpaceView::fit_prior(const std::vector<PriorMeasurement>& prior, bool feature) {
  // The prior's measurements that map onto this space (values in its domains; whether the
  // point is valid here does not matter: the measurement still says how the region ran),
  // fastest first.
  std::vector<std::pair<double, PointValues>> rows;
  for (const PriorMeasurement& m : prior) {
    auto point = space_.from_config(m.config);
    if (!point.ok() || !(m.time_ms > 0)) continue;
    bool in_domains = true;
    for (size_t d = 0; d < domains_.size() && in_domains; ++d) in_domains = rank(d, (*point)[d]) >= 0;
    if (in_domains) rows.emplace_back(m.time_ms, std::move(point).value());
  }
  if (rows.size() < kMinPriorRows) return;
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < rows.size(); ++i)
    prior_ranks_.emplace(rows[i].second, static_cast<double>(i) / static_cast<double>(rows.size() - 1));
  // Targets are ranks (0 fastest .. 1 slowest): another GPU's or problem's times differ by a
  // scale and more, their order is what carries over. At most kMaxRows rows are fitted (all
  // of the fastest kBest, the rest spread evenly), so a prior of a whole recorded space
  // costs a fraction of a second once per run.
  constexpr size_t kMaxRows = 2000, kBest = 500;
  std::vector<size_t> keep;
  if (rows.size() <= kMaxRows) {
    for (size_t i = 0; i < rows.size(); ++i) keep.push_back(i);
  } else {
    for (size_t i = 0; i < kBest; ++i) keep.push_back(i);
    const size_t rest = rows.size() - kBest, slots = kMaxRows - kBest;
    for (size_t j = 0; j < slots; ++j) keep.push_back(kBest + j * rest / slots);
  }
  const int nf = base_feature_count();
  if (nf == 0) return;
  std::vector<float> x(keep.size() * static_cast<size_t>(nf));
  std::vector<double> y(keep.size());
  for (size_t k = 0; k < keep.size(); ++k) {
    encode_base(rows[keep[k]].second, x.data() + k * static_cast<size_t>(nf));
    y[k] = static_cast<double>(keep[k]) / static_cast<double>(rows.size() - 1);
  }
  ForestOptions options;
  options.trees = 24;
  options.min_leaf = 2;
  auto model = std::make_shared<Forest>();
  model->fit(x, nf, y, options, /*seed=*/0x9e3779b97f4a7c15ULL);  // fixed: the view is deterministic
  prior_model_ = std::move(model);
  prior_in_features_ = feature;
}

std::optional<double> SpaceView::prior_prediction(const PointValues& p) const {
  if (!prior_model_) return std::nullopt;
  std::vector<float> f(static_cast<size_t>(base_feature_count()));
  encode_base(p, f.data());
  double mean = 0, spread = 0;
  prior_model_->predict(f.data(), &mean, &spread);
  return mean;
}

void SpaceView::encode(const PointValues& p, float* out) const {
  encode_base(p, out);
  if (prior_in_features_) {
    double mean = 0, spread = 0;
    prior_model_->predict(out, &mean, &spread);
    out[base_feature_count()] = static_cast<float>(mean);
  }
}

void SpaceView::encode_base(const PointValues& p, float* out) const {
  for (size_t i = 0; i < active_.size(); ++i) {
    const size_t d = active_[i];
    out[i] = static_cast<float>(rank(d, p[d])) / static_cast<float>(sorted_[d].size() - 1);
  }
  float* pair_out = out + active_.size();
  for (const auto& [a, b] : pairs_) {
    const float la = log2_[a].at(p[a]), lb = log2_[b].at(p[b]);
    *pair_out++ = la + lb;
    *pair_out++ = la - lb;
  }
}

void SpaceView::neighbours(const PointValues& p, bool adjacent_only,
                           std::vector<PointValues>* out) const {
  PointValues q = p;
  for (size_t d : active_) {
    const int r = rank(d, p[d]);
    for (int nr = 0; nr < domain_size(d); ++nr) {
      if (nr == r || (adjacent_only && std::abs(nr - r) != 1)) continue;
      q[d] = sorted_[d][static_cast<size_t>(nr)];
      if (is_valid(q)) out->push_back(q);
    }
    q[d] = p[d];
  }
}

std::optional<PointValues> SpaceView::sample(std::mt19937_64& rng) const {
  if (enumerated_) {
    if (points_.empty()) return std::nullopt;
    std::uniform_int_distribution<size_t> pick(0, points_.size() - 1);
    return points_[pick(rng)];
  }
  PointValues p(domains_.size());
  for (int attempt = 0; attempt < 256; ++attempt) {
    for (size_t d = 0; d < domains_.size(); ++d) {
      std::uniform_int_distribution<size_t> pick(0, domains_[d].size() - 1);
      p[d] = domains_[d][pick(rng)];
    }
    if (space_.is_valid(p, ctx_)) return p;
  }
  return space_.sample_valid(ctx_, rng());
}

int SpaceView::hamming(const PointValues& a, const PointValues& b) {
  int n = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) n += a[i] != b[i];
  return n;
}

}  // namespace tilesmith::proposers::detail
