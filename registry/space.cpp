#include "registry/space.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <unordered_set>

#include <nlohmann/json.hpp>

namespace tilesmith {
namespace {

// Names the expressions could never use as variables.
bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  static const std::set<std::string> kReserved = {"and", "or", "not", "True", "False"};
  return kReserved.count(s) == 0;
}

std::string format_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.2e18)
    return std::to_string(static_cast<long long>(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string format_domain(const std::vector<std::int64_t>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(values[i]);
  }
  return s + "]";
}

constexpr const char* kThreadsName = "THREADS";
constexpr std::uint64_t kPrefixSeed = 0x9e3779b97f4a7c15ULL;

// Hash of a point prefix extended by one value (splitmix64 finaliser over the running
// hash): used only to prune enumeration of restricted spaces; membership itself is exact.
std::uint64_t extend_prefix(std::uint64_t h, std::int64_t v) {
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
constexpr const char* kSharedName = "SHARED_BYTES";

}  // namespace

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
    std::unordered_set<PointValues, PointHash> set;
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
          *why = std::string(kThreadsName) + "=" + format_number(value) + " exceeds the device's " +
                 std::to_string(ctx.device->max_threads_per_block) + " threads per block";
        return false;
      }
    } else if (derived_index == shared_derived) {
      if (value > static_cast<double>(ctx.device->shared_per_block_optin)) {
        if (why)
          *why = std::string(kSharedName) + "=" + format_number(value) + " exceeds the device's " +
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
           format_number(values[static_cast<size_t>(slot)]);
    }
    return s.empty() ? s : " (" + s + ")";
  }

  // The full check behind validate/derive: declared order, so the reason given is the
  // first rule broken as the space file lists them.
  Status check_point(const PointValues& point, const SpaceContext& ctx,
                     std::vector<double>* out) const {
    Bound b = bind(ctx);
    for (const Derived& d : derived) {
      if (const std::string* m = missing_name(d.expr, b))
        return Status::invalid(
            "derived value '" + d.name + "' reads '" + *m +
            "', which is neither a parameter, a derived value nor a context constant");
    }
    for (const Constraint& c : constraints) {
      if (const std::string* m = missing_name(c.expr, b))
        return Status::invalid(
            "constraint '" + c.expr.text() + "' reads '" + *m +
            "', which is neither a parameter, a derived value nor a context constant");
    }
    std::vector<double>& values = b.values;
    for (size_t p = 0; p < params.size(); ++p) values[p] = static_cast<double>(point[p]);
    std::vector<std::string> derived_error(derived.size());
    std::vector<char> derived_failed(vars.size(), 0);
    for (size_t i = 0; i < derived.size(); ++i) {
      const Derived& d = derived[i];
      for (int s : d.expr.used_slots()) {
        if (derived_failed[static_cast<size_t>(s)]) {
          derived_error[i] =
              "it reads '" + vars.names()[static_cast<size_t>(s)] + "', which cannot be evaluated";
          break;
        }
      }
      double v = 0;
      if (derived_error[i].empty() && !d.expr.eval(values, &v, &derived_error[i]) &&
          derived_error[i].empty())
        derived_error[i] = "evaluation failed";
      if (!derived_error[i].empty()) {
        derived_failed[static_cast<size_t>(d.slot)] = 1;
        continue;
      }
      values[static_cast<size_t>(d.slot)] = v;
    }
    for (const Constraint& c : constraints) {
      for (int s : c.expr.used_slots()) {
        if (derived_failed[static_cast<size_t>(s)]) {
          size_t di = static_cast<size_t>(s) - params.size();
          return Status::invalid("cannot evaluate derived value '" + derived[di].name +
                                 "' needed by constraint '" + c.expr.text() +
                                 "': " + derived_error[di]);
        }
      }
      double v = 0;
      std::string err;
      if (!c.expr.eval(values, &v, &err))
        return Status::invalid("cannot evaluate constraint '" + c.expr.text() + "': " + err +
                               values_read(c.expr, values));
      if (v == 0.0)
        return Status::invalid("breaks constraint '" + c.expr.text() + "'" +
                               values_read(c.expr, values));
    }
    for (size_t i = 0; i < derived.size(); ++i) {
      if (!derived_error[i].empty())
        return Status::invalid("cannot evaluate derived value '" + derived[i].name +
                               "': " + derived_error[i]);
      std::string why;
      if (!limit_ok(static_cast<int>(i), values[static_cast<size_t>(derived[i].slot)], ctx, &why))
        return Status::invalid(why);
    }
    if (allowed && !allowed->set.count(point))
      return Status::invalid(
          "not among the " + std::to_string(allowed->points.size()) +
          " configurations this space is restricted to (for a recorded space: not measured)");
    if (out) *out = std::move(values);
    return {};
  }
};

ParamSpace::ParamSpace() : impl_(std::make_shared<Impl>()) {}
ParamSpace::~ParamSpace() = default;
ParamSpace::ParamSpace(const ParamSpace&) = default;
ParamSpace& ParamSpace::operator=(const ParamSpace&) = default;
ParamSpace::ParamSpace(ParamSpace&&) noexcept = default;
ParamSpace& ParamSpace::operator=(ParamSpace&&) noexcept = default;

Result<ParamSpace> ParamSpace::from_json(const nlohmann::json& j) {
  using nlohmann::json;
  if (!j.is_object()) return Status::invalid("a parameter space must be a JSON object");
  auto impl = std::make_shared<Impl>();
  std::set<std::string> names;

  auto params_it = j.find("parameters");
  if (params_it == j.end() || !params_it->is_array())
    return Status::invalid("a parameter space needs a \"parameters\" array");
  for (size_t i = 0; i < params_it->size(); ++i) {
    const json& pj = (*params_it)[i];
    std::string where = "parameters[" + std::to_string(i) + "]";
    if (!pj.is_object()) return Status::invalid(where + " must be an object");
    auto name_it = pj.find("name");
    if (name_it == pj.end() || !name_it->is_string())
      return Status::invalid(where + " needs a string \"name\"");
    Parameter p;
    p.name = name_it->get<std::string>();
    where = "parameter '" + p.name + "'";
    if (!is_identifier(p.name)) return Status::invalid(where + ": the name is not an identifier");
    if (!names.insert(p.name).second) return Status::invalid(where + " is declared twice");
    auto values_it = pj.find("values");
    if (values_it == pj.end() || !values_it->is_array() || values_it->empty())
      return Status::invalid(where + " needs a non-empty \"values\" array");
    std::set<std::int64_t> seen;
    for (const json& v : *values_it) {
      if (!v.is_number_integer())
        return Status::invalid(where + ": values must be integers, got " + v.dump());
      std::int64_t x = v.get<std::int64_t>();
      if (!seen.insert(x).second)
        return Status::invalid(where + ": value " + std::to_string(x) + " is listed twice");
      p.values.push_back(x);
    }
    if (auto d = pj.find("description"); d != pj.end()) {
      if (!d->is_string()) return Status::invalid(where + ": \"description\" must be a string");
      p.description = d->get<std::string>();
    }
    impl->vars.add(p.name);
    impl->params.push_back(std::move(p));
  }

  std::vector<std::pair<std::string, std::string>> derived_src;
  if (auto dit = j.find("derived"); dit != j.end()) {
    if (!dit->is_array()) return Status::invalid("\"derived\" must be an array");
    for (size_t i = 0; i < dit->size(); ++i) {
      const json& dj = (*dit)[i];
      std::string where = "derived[" + std::to_string(i) + "]";
      if (!dj.is_object() || !dj.contains("name") || !dj["name"].is_string() ||
          !dj.contains("expr") || !dj["expr"].is_string())
        return Status::invalid(where + " must be an object with string \"name\" and \"expr\"");
      std::string name = dj["name"].get<std::string>();
      if (!is_identifier(name))
        return Status::invalid(where + ": '" + name + "' is not an identifier");
      if (!names.insert(name).second)
        return Status::invalid("derived value '" + name +
                               "' reuses the name of a parameter or derived value");
      derived_src.emplace_back(name, dj["expr"].get<std::string>());
    }
  }
  // Reserve derived slots before parsing, so reading a later derived value is caught
  // as such instead of being mistaken for a context constant.
  const int num_params = static_cast<int>(impl->params.size());
  for (const auto& [name, text] : derived_src) impl->vars.add(name);
  const int first_context = static_cast<int>(impl->vars.size());

  auto slot_level = [&](int slot) -> int {
    if (slot < num_params) return slot;
    if (slot < first_context) return impl->derived[static_cast<size_t>(slot - num_params)].level;
    return -1;
  };
  auto expr_level = [&](const Expr& e) {
    int level = -1;
    for (int s : e.used_slots()) level = std::max(level, slot_level(s));
    return level;
  };

  for (size_t i = 0; i < derived_src.size(); ++i) {
    const auto& [name, text] = derived_src[i];
    auto parsed = Expr::parse(text, impl->vars);
    if (!parsed.ok()) return parsed.status().with_context("derived value '" + name + "'");
    for (int s : parsed->used_slots()) {
      if (s >= num_params + static_cast<int>(i) && s < first_context)
        return Status::invalid("derived value '" + name + "' reads '" +
                               impl->vars.names()[static_cast<size_t>(s)] +
                               "', which is not defined before it");
    }
    Impl::Derived d;
    d.name = name;
    d.expr = std::move(parsed).value();
    d.slot = num_params + static_cast<int>(i);
    impl->derived.push_back(
        std::move(d));  // level is read by expr_level below only for earlier ones
    impl->derived.back().level = expr_level(impl->derived.back().expr);
    if (name == kThreadsName) impl->threads_derived = static_cast<int>(i);
    if (name == kSharedName) impl->shared_derived = static_cast<int>(i);
  }

  if (auto cit = j.find("constraints"); cit != j.end()) {
    if (!cit->is_array()) return Status::invalid("\"constraints\" must be an array of strings");
    for (const json& cj : *cit) {
      if (!cj.is_string()) return Status::invalid("constraints must be strings, got " + cj.dump());
      std::string text = cj.get<std::string>();
      auto parsed = Expr::parse(text, impl->vars);
      if (!parsed.ok()) return parsed.status().with_context("constraint");
      Impl::Constraint c;
      c.expr = std::move(parsed).value();
      c.level = expr_level(c.expr);
      impl->constraint_texts.push_back(text);
      impl->constraints.push_back(std::move(c));
    }
  }
  impl->first_context_slot = first_context;
  impl->derived_by_level.assign(static_cast<size_t>(num_params + 1), {});
  impl->constraints_by_level.assign(static_cast<size_t>(num_params + 1), {});
  for (size_t i = 0; i < impl->derived.size(); ++i)
    impl->derived_by_level[static_cast<size_t>(impl->derived[i].level + 1)].push_back(
        static_cast<int>(i));
  for (size_t i = 0; i < impl->constraints.size(); ++i)
    impl->constraints_by_level[static_cast<size_t>(impl->constraints[i].level + 1)].push_back(
        static_cast<int>(i));

  ParamSpace space;
  space.impl_ = std::move(impl);
  if (auto ait = j.find("allowed_points"); ait != j.end()) {
    if (!ait->is_array())
      return Status::invalid("\"allowed_points\" must be an array of arrays of integers");
    std::vector<PointValues> points;
    points.reserve(ait->size());
    for (const json& pj : *ait) {
      PointValues p;
      if (!pj.is_array()) return Status::invalid("allowed point " + pj.dump() + " is not an array");
      for (const json& v : pj) {
        if (!v.is_number_integer())
          return Status::invalid("allowed point " + pj.dump() + " holds a non-integer");
        p.push_back(v.get<std::int64_t>());
      }
      points.push_back(std::move(p));
    }
    return space.restrict_to(points);
  }
  return space;
}

Result<ParamSpace> ParamSpace::restrict_to(const std::vector<PointValues>& points) const {
  auto allowed = std::make_shared<Impl::Allowed>();
  const size_t n = impl_->params.size();
  allowed->prefixes.resize(n);
  for (const PointValues& p : points) {
    if (p.size() != n)
      return Status::invalid("an allowed point has " + std::to_string(p.size()) +
                             " values; the space has " + std::to_string(n) + " parameters");
    for (size_t k = 0; k < n; ++k) {
      if (impl_->domain_index(k, p[k]) < 0)
        return Status::invalid("allowed point: " + impl_->params[k].name + "=" +
                               std::to_string(p[k]) + " is not one of " +
                               format_domain(impl_->params[k].values));
    }
    if (!allowed->set.insert(p).second) continue;  // duplicates add nothing
    allowed->points.push_back(p);
    std::uint64_t h = kPrefixSeed;
    for (size_t k = 0; k < n; ++k) {
      h = extend_prefix(h, p[k]);
      allowed->prefixes[k].insert(h);
    }
  }
  auto impl = std::make_shared<Impl>(*impl_);
  impl->allowed = std::move(allowed);
  ParamSpace out;
  out.impl_ = std::move(impl);
  return out;
}

bool ParamSpace::is_restricted() const { return impl_->allowed != nullptr; }

nlohmann::json ParamSpace::to_json() const {
  using nlohmann::json;
  json params = json::array();
  for (const Parameter& p : impl_->params) {
    json pj = {{"name", p.name}, {"values", p.values}};
    if (!p.description.empty()) pj["description"] = p.description;
    params.push_back(std::move(pj));
  }
  json derived = json::array();
  for (const auto& d : impl_->derived)
    derived.push_back({{"name", d.name}, {"expr", d.expr.text()}});
  json out{{"parameters", std::move(params)},
           {"derived", std::move(derived)},
           {"constraints", impl_->constraint_texts}};
  if (impl_->allowed) out["allowed_points"] = impl_->allowed->points;
  return out;
}

const std::vector<Parameter>& ParamSpace::parameters() const { return impl_->params; }
const std::vector<std::string>& ParamSpace::constraint_texts() const {
  return impl_->constraint_texts;
}

std::vector<std::pair<std::string, std::string>> ParamSpace::derived_texts() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& d : impl_->derived) out.emplace_back(d.name, d.expr.text());
  return out;
}

const Parameter* ParamSpace::find(const std::string& name) const {
  for (const Parameter& p : impl_->params)
    if (p.name == name) return &p;
  return nullptr;
}

std::uint64_t ParamSpace::cartesian_size() const {
  if (impl_->params.empty()) return 0;
  std::uint64_t n = 1;
  for (const Parameter& p : impl_->params) {
    std::uint64_t k = p.values.size();
    if (n > std::numeric_limits<std::uint64_t>::max() / k)
      return std::numeric_limits<std::uint64_t>::max();
    n *= k;
  }
  return n;
}

std::vector<std::string> ParamSpace::context_names() const {
  const auto& names = impl_->vars.names();
  return {names.begin() + impl_->first_context_slot, names.end()};
}

Status ParamSpace::check_context(const SpaceContext& ctx) const {
  std::vector<std::string> missing;
  for (const std::string& n : context_names())
    if (!ctx.constants.count(n)) missing.push_back("'" + n + "'");
  if (missing.empty()) return {};
  std::string list;
  for (size_t i = 0; i < missing.size(); ++i) list += (i ? ", " : "") + missing[i];
  return Status::invalid(
      "the space's expressions read " + list +
      ", which the context does not define (neither parameters nor derived values)");
}

Result<PointValues> ParamSpace::from_config(const Config& config) const {
  std::vector<std::string> problems;
  PointValues point(impl_->params.size());
  for (size_t p = 0; p < impl_->params.size(); ++p) {
    const Parameter& param = impl_->params[p];
    auto it = config.find(param.name);
    if (it == config.end()) {
      problems.push_back("missing parameter '" + param.name + "'");
      continue;
    }
    if (impl_->domain_index(p, it->second) < 0)
      problems.push_back(param.name + "=" + std::to_string(it->second) + " is not one of " +
                         format_domain(param.values));
    point[p] = it->second;
  }
  for (const auto& [name, value] : config) {
    if (!find(name)) problems.push_back("unknown parameter '" + name + "'");
  }
  if (!problems.empty()) {
    std::string msg;
    for (size_t i = 0; i < problems.size(); ++i) msg += (i ? "; " : "") + problems[i];
    return Status::invalid(msg);
  }
  return point;
}

Config ParamSpace::to_config(const PointValues& point) const {
  Config c;
  for (size_t p = 0; p < impl_->params.size() && p < point.size(); ++p)
    c[impl_->params[p].name] = point[p];
  return c;
}

Status ParamSpace::validate(const Config& config, const SpaceContext& ctx) const {
  TS_ASSIGN_OR_RETURN(PointValues point, from_config(config));
  return impl_->check_point(point, ctx, nullptr);
}

Result<std::map<std::string, double>> ParamSpace::derive(const Config& config,
                                                         const SpaceContext& ctx) const {
  TS_ASSIGN_OR_RETURN(PointValues point, from_config(config));
  std::vector<double> values;
  TS_RETURN_IF_ERROR(impl_->check_point(point, ctx, &values));
  std::map<std::string, double> out;
  for (size_t p = 0; p < impl_->params.size(); ++p) out[impl_->params[p].name] = values[p];
  for (const auto& d : impl_->derived) out[d.name] = values[static_cast<size_t>(d.slot)];
  return out;
}

bool ParamSpace::is_valid(const PointValues& point, const SpaceContext& ctx) const {
  const Impl& im = *impl_;
  if (point.size() != im.params.size()) return false;
  for (size_t p = 0; p < point.size(); ++p)
    if (im.domain_index(p, point[p]) < 0) return false;
  Impl::Bound b = im.bind(ctx);
  // Context slots are exactly the names some expression reads, so a missing one makes
  // every point invalid (validate names it).
  if (b.any_missing) return false;
  for (size_t p = 0; p < point.size(); ++p) b.values[p] = static_cast<double>(point[p]);
  if (im.allowed && !im.allowed->set.count(point)) return false;
  for (int level = -1; level < static_cast<int>(im.params.size()); ++level)
    if (!im.check_level(level, b.values, ctx)) return false;
  return true;
}

void ParamSpace::for_each_valid(const SpaceContext& ctx,
                                const std::function<bool(const PointValues&)>& fn) const {
  const Impl& im = *impl_;
  const size_t n = im.params.size();
  if (n == 0) return;
  Impl::Bound b = im.bind(ctx);
  if (b.any_missing) return;  // see is_valid
  std::vector<double>& values = b.values;
  if (!im.check_level(-1, values, ctx)) return;

  // Iterative odometer: idx[k] is the domain position of parameter k; the last
  // parameter turns fastest. A parameter is advanced past values whose level checks fail.
  PointValues point(n);
  std::vector<size_t> idx(n, 0);
  std::vector<std::uint64_t> prefix(n + 1, kPrefixSeed);  // prefix[k]: hash of point[0..k)
  const Impl::Allowed* allowed = im.allowed.get();
  size_t k = 0;
  while (true) {
    const auto& dom = im.params[k].values;
    bool descended = false;
    while (idx[k] < dom.size()) {
      point[k] = dom[idx[k]];
      values[k] = static_cast<double>(point[k]);
      if (allowed) {
        prefix[k + 1] = extend_prefix(prefix[k], point[k]);
        if (!allowed->prefixes[k].count(prefix[k + 1]) ||
            (k + 1 == n && !allowed->set.count(point))) {
          ++idx[k];
          continue;
        }
      }
      if (im.check_level(static_cast<int>(k), values, ctx)) {
        if (k + 1 == n) {
          if (!fn(point)) return;
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
      continue;
    }
    // Domain of k exhausted: back up.
    if (k == 0) return;
    --k;
    ++idx[k];
  }
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
  const Impl::Allowed* allowed = im.allowed.get();
  std::mt19937_64 rng(seed);
  // order[k]: parameter k's domain positions in this attempt's random order.
  std::vector<std::vector<size_t>> order(n);
  for (size_t k = 0; k < n; ++k) {
    order[k].resize(im.params[k].values.size());
    std::iota(order[k].begin(), order[k].end(), size_t{0});
  }
  PointValues point(n);
  std::vector<size_t> idx(n, 0);
  std::vector<std::uint64_t> prefix(n + 1, kPrefixSeed);
  std::uint64_t steps = 0;
  size_t k = 0;
  std::shuffle(order[0].begin(), order[0].end(), rng);
  while (steps < max_steps) {
    const auto& dom = im.params[k].values;
    bool descended = false;
    while (idx[k] < dom.size() && steps < max_steps) {
      ++steps;
      point[k] = dom[order[k][idx[k]]];
      values[k] = static_cast<double>(point[k]);
      bool ok = true;
      if (allowed) {
        prefix[k + 1] = extend_prefix(prefix[k], point[k]);
        ok = allowed->prefixes[k].count(prefix[k + 1]) && (k + 1 < n || allowed->set.count(point));
      }
      if (ok && im.check_level(static_cast<int>(k), values, ctx)) {
        if (k + 1 == n) return point;
        descended = true;
        break;
      }
      ++idx[k];
    }
    if (descended) {
      ++k;
      idx[k] = 0;
      std::shuffle(order[k].begin(), order[k].end(), rng);
      continue;
    }
    if (idx[k] < dom.size()) break;   // out of steps
    if (k == 0) return std::nullopt;  // exhausted: the space has no valid point
    --k;
    ++idx[k];
  }
  return std::nullopt;
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
