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
//   "derived":     [ {"name": "THREADS", "expr": "(BLOCK_M // THREAD_M) * (BLOCK_N // THREAD_N)"} ],
//   "constraints": [ "BLOCK_M % THREAD_M == 0", ... ]
// }
// Constraints and derived expressions may read parameters, derived values defined
// earlier, and context constants (M, N, K, WARP_SIZE, ... given in a SpaceContext).
// Two derived names have a meaning for device limits when present:
//   THREADS       threads per block      <= device max_threads_per_block
//   SHARED_BYTES  shared memory per block <= device shared_per_block_optin
//
// Thread safety: a ParamSpace is immutable after construction; all methods are const.

#include <cstdint>
#include <functional>
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

  // Product of the domain sizes.
  std::uint64_t cartesian_size() const;

  // ok, or invalid_argument naming the problem: an unknown or missing parameter, a value
  // outside its domain ("BLOCK_M=96 is not one of [32, 64, 128]"), the first constraint it
  // breaks ("breaks constraint 'BLOCK_M % THREAD_M == 0'"), a device limit ("THREADS=2048
  // exceeds the device's 1024 threads per block"), or an expression that cannot be
  // evaluated (division by zero).
  Status validate(const Config& config, const SpaceContext& ctx) const;

  // Derived values (and the parameters themselves) for a config that validates.
  Result<std::map<std::string, double>> derive(const Config& config, const SpaceContext& ctx) const;

  // Calls `fn` for every valid point, in odometer order (last parameter fastest).
  // Stops early when fn returns false. Must be fast: >= 100k points per second.
  void for_each_valid(const SpaceContext& ctx, const std::function<bool(const PointValues&)>& fn) const;
  std::vector<PointValues> enumerate_valid(const SpaceContext& ctx) const;
  bool is_valid(const PointValues& point, const SpaceContext& ctx) const;

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
