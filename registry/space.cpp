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

#include "base/format.h"
#include "registry/detail/space_impl.h"

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

std::string format_domain(const std::vector<std::int64_t>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(values[i]);
  }
  return s + "]";
}

using space_detail::extend_prefix;
using space_detail::kPrefixSeed;
using space_detail::kSharedName;
using space_detail::kThreadsName;

}  // namespace

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

}  // namespace tilesmith
