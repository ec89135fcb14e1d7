#pragma once
// ParamSpace's insides, shared by its three files: registry/space.cpp (reading a space,
// its parameters, configs to points), registry/space_validate.cpp (the validator, with
// reasons) and registry/space_walk.cpp (enumerating and sampling valid points). Private
// to the registry module.

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/format.h"
#include "registry/expr.h"
#include "registry/space.h"

namespace tilesmith {
namespace space_detail {

inline constexpr const char* kThreadsName = "THREADS";
inline constexpr std::uint64_t kPrefixSeed = 0x9e3779b97f4a7c15ULL;

// Hash of a point prefix extended by one value (splitmix64 finaliser over the running
// hash): used only to prune enumeration of restricted spaces; membership itself is exact.
inline std::uint64_t extend_prefix(std::uint64_t h, std::int64_t v) {
  std::uint64_t x =
      h ^ (static_cast<std::uint64_t>(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct PointHash {
  size_t operator()(const PointValues& p) const {
    std::uint64_t h = kPrefixSeed;
    for (std::int64_t v : p) h = extend_prefix(h, v);
    return static_cast<size_t>(h);
  }
};
inline constexpr const char* kSharedName = "SHARED_BYTES";


}  // namespace space_detail

// Slots in the variable table: parameters first (slot == parameter index), then derived
// values, then names that must come from the context (problem sizes, WARP_SIZE, ...).
// Every expression gets a "level": the highest parameter index it depends on, directly
// or through derived values (-1 for context-only). Enumeration checks an expression as
// soon as the odometer has fixed its level, which prunes most of a constrained space.
struct ParamSpace::Impl {
  struct Derived {
    std::string name;
    Expr expr;
    int slot = 0;
    int level = -1;
  };
  struct Constraint {
    Expr expr;
    int level = -1;
  };

  std::vector<Parameter> params;
  std::vector<std::string> constraint_texts;
  std::vector<Derived> derived;
  std::vector<Constraint> constraints;
  VariableTable vars;
  int first_context_slot = 0;
  int threads_derived = -1;  // index into derived, or -1
  int shared_derived = -1;
  // Schedules by level + 1 (index 0 holds level -1).
  std::vector<std::vector<int>> derived_by_level, constraints_by_level;

  // Optional explicit set of allowed points (recorded spaces): validity additionally
  // requires membership. prefixes[k] holds the hashes of every allowed prefix of
  // length k + 1, so enumeration abandons a prefix no allowed point starts with.
  struct Allowed {
    std::vector<PointValues> points;  // in the order given
    std::unordered_set<PointValues, space_detail::PointHash> set;
    std::vector<std::unordered_set<std::uint64_t>> prefixes;
  };
  std::shared_ptr<const Allowed> allowed;

  // Values bound from a context; missing[slot] marks names the context lacks.
  struct Bound {
    std::vector<double> values;
    std::vector<char> missing;
    bool any_missing = false;
  };

  Bound bind(const SpaceContext& ctx) const {
    Bound b;
    b.values.assign(vars.size(), 0.0);
    b.missing.assign(vars.size(), 0);
    for (size_t s = static_cast<size_t>(first_context_slot); s < vars.size(); ++s) {
      auto it = ctx.constants.find(vars.names()[s]);
      if (it == ctx.constants.end()) {
        b.missing[s] = 1;
        b.any_missing = true;
      } else {
        b.values[s] = it->second;
      }
    }
    return b;
  }

  // The first context name `e` needs that `b` lacks, directly or through derived values.
  const std::string* missing_name(const Expr& e, const Bound& b) const {
    if (!b.any_missing) return nullptr;
    for (int s : e.used_slots()) {
      if (b.missing[static_cast<size_t>(s)]) return &vars.names()[static_cast<size_t>(s)];
      int d = s - static_cast<int>(params.size());
      if (d >= 0 && d < static_cast<int>(derived.size())) {
        if (const std::string* m = missing_name(derived[static_cast<size_t>(d)].expr, b)) return m;
      }
    }
    return nullptr;
  }

  // Device limit on a derived value: ok, or a message naming the limit.
  bool limit_ok(int derived_index, double value, const SpaceContext& ctx, std::string* why) const {
    if (!ctx.device) return true;
    if (derived_index == threads_derived) {
      if (value > ctx.device->max_threads_per_block) {
        if (why)
          *why = std::string(space_detail::kThreadsName) + "=" + format_number_brief(value) + " exceeds the device's " +
                 std::to_string(ctx.device->max_threads_per_block) + " threads per block";
        return false;
      }
    } else if (derived_index == shared_derived) {
      if (value > static_cast<double>(ctx.device->shared_per_block_optin)) {
        if (why)
          *why = std::string(space_detail::kSharedName) + "=" + format_number_brief(value) + " exceeds the device's " +
                 std::to_string(ctx.device->shared_per_block_optin) +
                 " bytes of shared memory per block (opt-in limit)";
        return false;
      }
    }
    return true;
  }

  // Evaluates everything scheduled at `level` into values; false when the point cannot
  // be valid whatever the later parameters are.
  bool check_level(int level, std::vector<double>& values, const SpaceContext& ctx) const {
    const size_t li = static_cast<size_t>(level + 1);
    for (int di : derived_by_level[li]) {
      const Derived& d = derived[static_cast<size_t>(di)];
      double v;
      if (!d.expr.eval(values, &v, nullptr)) return false;
      values[static_cast<size_t>(d.slot)] = v;
      if (!limit_ok(di, v, ctx, nullptr)) return false;
    }
    for (int ci : constraints_by_level[li]) {
      double v;
      if (!constraints[static_cast<size_t>(ci)].expr.eval(values, &v, nullptr) || v == 0.0)
        return false;
    }
    return true;
  }

  int domain_index(size_t p, std::int64_t v) const {
    const auto& dom = params[p].values;
    for (size_t i = 0; i < dom.size(); ++i)
      if (dom[i] == v) return static_cast<int>(i);
    return -1;
  }

  // "(KWG=32, KWI=3)": the values an expression read, to make a rejection actionable.
  std::string values_read(const Expr& e, const std::vector<double>& values) const {
    std::string s;
    for (int slot : e.used_slots()) {
      if (!s.empty()) s += ", ";
      s += vars.names()[static_cast<size_t>(slot)] + "=" +
           format_number_brief(values[static_cast<size_t>(slot)]);
    }
    return s.empty() ? s : " (" + s + ")";
  }

  // The full check behind validate/derive: declared order, so the reason given is the
  // first rule broken as the space file lists them (registry/space_validate.cpp).
  Status check_point(const PointValues& point, const SpaceContext& ctx, std::vector<double>* out) const;

  // The one odometer behind for_each_valid and sample_valid (registry/space_walk.cpp).
  template <class Enter, class Pick, class Leaf>
  bool walk(std::vector<double>& values, const SpaceContext& ctx, std::uint64_t max_steps, Enter&& enter,
            Pick&& pick, Leaf&& leaf) const;
};

}  // namespace tilesmith
