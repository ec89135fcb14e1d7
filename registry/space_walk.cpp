// Enumerating and sampling the valid points of registry/space.h: one odometer, walked in
// domain order (enumeration) or in a random order per level (sampling).

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "registry/detail/space_impl.h"
#include "registry/space.h"

namespace tilesmith {

using space_detail::extend_prefix;
using space_detail::kPrefixSeed;

// Depth first, one parameter per level; the last parameter turns fastest. A level skips
// values no allowed point starts with (restricted spaces) and values whose level checks
// fail. enter(k) is called each time level k starts over (to reorder it); pick(k, i) is
// the domain position of the i-th value tried at level k; leaf(point) gets each valid
// point and returns false to stop. At most max_steps values are tried. Returns true when
// the space was walked to its end, false when leaf stopped it or the steps ran out.
template <class Enter, class Pick, class Leaf>
bool ParamSpace::Impl::walk(std::vector<double>& values, const SpaceContext& ctx, std::uint64_t max_steps,
                            Enter&& enter, Pick&& pick, Leaf&& leaf) const {
  const size_t n = params.size();
  PointValues point(n);
  std::vector<size_t> idx(n, 0);
  std::vector<std::uint64_t> prefix(n + 1, kPrefixSeed);  // prefix[k]: hash of point[0..k)
  const Allowed* allowed_points = allowed.get();
  std::uint64_t steps = 0;
  size_t k = 0;
  enter(size_t{0});
  while (steps < max_steps) {
    const auto& dom = params[k].values;
    bool descended = false;
    while (idx[k] < dom.size() && steps < max_steps) {
      ++steps;
      point[k] = dom[pick(k, idx[k])];
      values[k] = static_cast<double>(point[k]);
      bool ok = true;
      if (allowed_points) {
        prefix[k + 1] = extend_prefix(prefix[k], point[k]);
        ok = allowed_points->prefixes[k].count(prefix[k + 1]) && (k + 1 < n || allowed_points->set.count(point));
      }
      if (ok && check_level(static_cast<int>(k), values, ctx)) {
        if (k + 1 == n) {
          if (!leaf(point)) return false;
          ++idx[k];
          continue;
        }
        descended = true;
        break;
      }
      ++idx[k];
    }
    if (descended) {
      ++k;
      idx[k] = 0;
      enter(k);
      continue;
    }
    if (idx[k] < dom.size()) return false;  // out of steps
    if (k == 0) return true;                // exhausted
    --k;
    ++idx[k];
  }
  return false;
}

bool ParamSpace::for_each_valid(const SpaceContext& ctx, const std::function<bool(const PointValues&)>& fn,
                                std::uint64_t max_steps) const {
  const Impl& im = *impl_;
  if (im.params.empty()) return true;
  Impl::Bound b = im.bind(ctx);
  if (b.any_missing) return true;  // no valid point: see is_valid
  std::vector<double>& values = b.values;
  if (!im.check_level(-1, values, ctx)) return true;
  return im.walk(
      values, ctx, max_steps, [](size_t) {}, [](size_t, size_t i) { return i; }, fn);
}

std::optional<PointValues> ParamSpace::sample_valid(const SpaceContext& ctx, std::uint64_t seed,
                                                    std::uint64_t max_steps) const {
  const Impl& im = *impl_;
  const size_t n = im.params.size();
  if (n == 0) return std::nullopt;
  Impl::Bound b = im.bind(ctx);
  if (b.any_missing) return std::nullopt;
  std::vector<double>& values = b.values;
  if (!im.check_level(-1, values, ctx)) return std::nullopt;
  std::mt19937_64 rng(seed);
  // order[k]: parameter k's domain positions in this attempt's random order, shuffled
  // each time the walk enters level k.
  std::vector<std::vector<size_t>> order(n);
  for (size_t k = 0; k < n; ++k) {
    order[k].resize(im.params[k].values.size());
    std::iota(order[k].begin(), order[k].end(), size_t{0});
  }
  std::optional<PointValues> found;
  im.walk(
      values, ctx, max_steps, [&](size_t k) { std::shuffle(order[k].begin(), order[k].end(), rng); },
      [&](size_t k, size_t i) { return order[k][i]; },
      [&](const PointValues& point) {
        found = point;
        return false;
      });
  return found;
}

std::vector<PointValues> ParamSpace::enumerate_valid(const SpaceContext& ctx) const {
  std::vector<PointValues> out;
  for_each_valid(ctx, [&](const PointValues& p) {
    out.push_back(p);
    return true;
  });
  return out;
}

}  // namespace tilesmith
