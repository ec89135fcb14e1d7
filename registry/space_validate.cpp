// The validator of registry/space.h: a config checked against the space's domains,
// derived values, constraints, device limits and recorded points, with the first rule
// broken as the reason.

#include <map>
#include <string>
#include <vector>

#include "registry/detail/space_impl.h"
#include "registry/space.h"

namespace tilesmith {

Status ParamSpace::Impl::check_point(const PointValues& point, const SpaceContext& ctx,
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

}  // namespace tilesmith
