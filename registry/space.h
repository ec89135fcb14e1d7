#pragma once
// A tuning parameter space as data: parameters with integer domains, constraints in
// Kernel Tuner restriction syntax, derived values usable in constraints, and checks
// against device limits. No per-kernel C++: templates and recorded spaces use the
// same code.
//
// JSON form (beside each kernel template, and built from Kernel Tuner cache files):
// {
//   "parameters": [ {"name": "BLOCK_M", "values": [32, 64, 128],
//                    "description": "rows of C per thread block"}, ... ],
//   "derived":     [ {"name": "THREADS", "expr": "(BLOCK_M // THREAD_M) * (BLOCK_N // THREAD_N)"}
//   ], "constraints": [ "BLOCK_M % THREAD_M == 0", ... ], "allowed_points": [ [32, 32, ...], ... ]
//   (optional; see restrict_to)
// }
// Other top-level keys are ignored, so a space can sit inside a larger description.
// Constraints and derived expressions may read parameters, derived values defined
// earlier, and context constants (M, N, K, WARP_SIZE, ... given in a SpaceContext).
// Two derived names have a meaning for device limits when present:
//   THREADS       threads per block      <= device max_threads_per_block
//   SHARED_BYTES  shared memory per block <= device shared_per_block_optin
//
// Thread safety: a ParamSpace is immutable after construction; all methods are const.

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "registry/config.h"
#include "registry/device_facts.h"
#include "registry/expr.h"

namespace tilesmith {

struct Parameter {
  std::string name;
  std::vector<std::int64_t> values;  // the domain, in declared order, no duplicates
  std::string description;
};

// Constants the expressions may read (problem sizes, WARP_SIZE, ...), plus the device
// whose limits apply (optional: without it no limit checks are made).
struct SpaceContext {
  std::map<std::string, double> constants;
  std::optional<DeviceFacts> device;
};

// A config as one value per parameter, in parameters() order. The fast form for
// enumeration and search; convert with ParamSpace::to_config / from_config.
using PointValues = std::vector<std::int64_t>;

class ParamSpace {
 public:
  static Result<ParamSpace> from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;

  const std::vector<Parameter>& parameters() const;
  const std::vector<std::string>& constraint_texts() const;
  // (name, expression text) of derived values, in order.
  std::vector<std::pair<std::string, std::string>> derived_texts() const;
  const Parameter* find(const std::string& name) const;

  // Product of the domain sizes (saturates at UINT64_MAX; 0 without parameters).
  std::uint64_t cartesian_size() const;

  // Names the expressions read that are neither parameters nor derived values: what a
  // SpaceContext must define (M, N, K, WARP_SIZE, ...), in first-use order.
  std::vector<std::string> context_names() const;
  // ok, or invalid_argument listing the context_names() that ctx.constants lacks. With
  // any missing, no point is valid (validate names the expression that reads it).
  Status check_context(const SpaceContext& ctx) const;

  // ok, or invalid_argument naming the problem: an unknown or missing parameter, a value
  // outside its domain ("BLOCK_M=96 is not one of [32, 64, 128]"), the first constraint it
  // breaks ("breaks constraint 'BLOCK_M % THREAD_M == 0'"), a device limit ("THREADS=2048
  // exceeds the device's 1024 threads per block"), or an expression that cannot be
  // evaluated (division by zero).
  Status validate(const Config& config, const SpaceContext& ctx) const;

  // Derived values (and the parameters themselves) for a config that validates.
  Result<std::map<std::string, double>> derive(const Config& config, const SpaceContext& ctx) const;

  // Calls `fn` for every valid point, in odometer order (last parameter fastest).
  // Stops early when fn returns false, or after `max_steps` value trials: the walk prunes
  // by level (a constraint is checked as soon as its parameters are fixed), so what it
  // costs is its steps, often a small part of the Cartesian product. True when the space
  // was walked to its end (every valid point given to fn). Must be fast: >= 100k points
  // per second.
  bool for_each_valid(const SpaceContext& ctx, const std::function<bool(const PointValues&)>& fn,
                      std::uint64_t max_steps = std::numeric_limits<std::uint64_t>::max()) const;
  std::vector<PointValues> enumerate_valid(const SpaceContext& ctx) const;
  // One valid point from a randomised depth-first search (each parameter's values tried
  // in a random order, pruned like for_each_valid): any valid point can come out, though
  // not uniformly; for spaces too large to enumerate. Deterministic for a seed. nullopt
  // when no valid point was reached within `max_steps` value trials.
  std::optional<PointValues> sample_valid(const SpaceContext& ctx, std::uint64_t seed,
                                          std::uint64_t max_steps = 1000000) const;
  bool is_valid(const PointValues& point, const SpaceContext& ctx) const;

  // A copy whose valid points are additionally restricted to `points` (for recorded
  // spaces whose validity is "was measured"). Points must match the parameters and
  // domains (invalid_argument otherwise); duplicates are ignored; points that break a
  // constraint stay invalid. Serialised as "allowed_points" (arrays in parameter order).
  Result<ParamSpace> restrict_to(const std::vector<PointValues>& points) const;
  bool is_restricted() const;

  Config to_config(const PointValues& point) const;
  // invalid_argument when a parameter is missing, unknown, or off its domain.
  Result<PointValues> from_config(const Config& config) const;

  ParamSpace();
  ~ParamSpace();
  ParamSpace(const ParamSpace&);
  ParamSpace& operator=(const ParamSpace&);
  ParamSpace(ParamSpace&&) noexcept;
  ParamSpace& operator=(ParamSpace&&) noexcept;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace tilesmith
