#include "registry/kernel_template.h"

#include <cmath>
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

#include "base/hash.h"

namespace tilesmith {
namespace {

using nlohmann::json;

Result<std::vector<std::string>> string_list(const json& j, const char* key,
                                             std::vector<std::string> fallback) {
  if (!j.contains(key)) return fallback;
  const json& v = j.at(key);
  if (!v.is_array()) return Status::parse_error(std::string("'") + key + "' must be a list of strings");
  std::vector<std::string> out;
  for (const json& s : v) {
    if (!s.is_string()) return Status::parse_error(std::string("'") + key + "' must be a list of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x == s) return true;
  return false;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Evaluates one launch expression over the derived values of a config.
Result<double> eval_launch_expr(const std::string& text, const std::map<std::string, double>& values) {
  VariableTable vars;
  TS_ASSIGN_OR_RETURN(Expr e, Expr::parse(text, vars));
  std::vector<double> slots(vars.size(), 0.0);
  for (size_t i = 0; i < vars.size(); ++i) {
    auto it = values.find(vars.names()[i]);
    if (it == values.end()) return Status::invalid("launch expression '" + text + "' reads unknown name '" + vars.names()[i] + "'");
    slots[i] = it->second;
  }
  return e.eval(slots);
}

Result<std::uint32_t> launch_dim(const std::string& text, const std::map<std::string, double>& values,
                                 const char* what) {
  TS_ASSIGN_OR_RETURN(double v, eval_launch_expr(text, values));
  if (!std::isfinite(v) || v < 1 || v > 2147483647.0 || v != std::floor(v))
    return Status::invalid(std::string(what) + " '" + text + "' evaluates to " + std::to_string(v) +
                           ", not a positive integer");
  return static_cast<std::uint32_t>(v);
}

}  // namespace

Result<KernelTemplate> KernelTemplate::from_text(const std::string& json_text, const std::string& source,
                                                 const std::string& origin,
                                                 std::shared_ptr<const KernelHeaders> headers) {
  json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Status::parse_error(origin + ": not a JSON object");
  KernelTemplate t;
  try {
    t.name_ = j.at("name").get<std::string>();
    t.entry_ = j.value("entry", t.name_);
    t.description_ = j.value("description", std::string());
    t.nvidia_arch_suffix_ = j.value("nvidia_arch_suffix", std::string());
    t.math_ = j.value("math", std::string());
    if (!t.math_.empty() && t.math_ != "fma")
      return Status::parse_error(origin + ": math '" + t.math_ +
                                 "' is not known (\"fma\": the FP32 FMA pipe; leave it out for matrix units)");
    const json& sup = j.value("supports", json::object());
    TS_ASSIGN_OR_RETURN(t.dtypes_, string_list(sup, "dtypes", {"fp32"}));
    // Without c_dtypes, C has the input type.
    TS_ASSIGN_OR_RETURN(t.c_dtypes_, string_list(sup, "c_dtypes", {}));
    for (const auto& list : {t.dtypes_, t.c_dtypes_})
      for (const std::string& d : list)
        if (!parse_dtype(d).ok()) return Status::parse_error(origin + ": " + parse_dtype(d).status().message());
    for (const std::string& d : t.c_dtypes_)
      if (!dtype_can_be_output(*parse_dtype(d)))
        return Status::parse_error(origin + ": supports.c_dtypes lists " + d + ", an input type only (C must be " +
                                   output_dtype_list() + ")");
    if (t.c_dtypes_.empty())
      for (const std::string& d : t.dtypes_)
        if (!dtype_can_be_output(*parse_dtype(d)))
          return Status::parse_error(origin + ": supports.dtypes lists " + d +
                                     ", which cannot be C: list the C types in supports.c_dtypes");
    // FP8 scaling modes; without the list a template takes unscaled problems only.
    TS_ASSIGN_OR_RETURN(t.scalings_, string_list(sup, "scalings", {"none"}));
    for (const std::string& s : t.scalings_)
      if (!parse_scaling(s).ok()) return Status::parse_error(origin + ": " + parse_scaling(s).status().message());
    TS_ASSIGN_OR_RETURN(t.layouts_, string_list(sup, "layouts", {"NN", "NT", "TN", "TT"}));
    TS_ASSIGN_OR_RETURN(t.c_layouts_, string_list(sup, "c_layouts", {"row"}));
    TS_ASSIGN_OR_RETURN(t.epilogues_, string_list(sup, "epilogues", {"none"}));
    t.supports_beta_ = sup.value("beta", true);
    // A and B of different FP8 types (e4m3 with e5m2): the kernel reads TS_B_DTYPE for B.
    t.mixed_fp8_ = sup.value("mixed_fp8", false);

    // Parameter defaults live beside the domains in the file; the space itself only
    // needs domains, so they are taken out here.
    json space = j.at("space");
    if (space.contains("parameters") && space["parameters"].is_array()) {
      for (json& p : space["parameters"]) {
        if (p.contains("default")) {
          if (!p["default"].is_number_integer())
            return Status::parse_error(origin + ": default of " + p.value("name", "?") + " must be an integer");
          t.defaults_[p.at("name").get<std::string>()] = p["default"].get<std::int64_t>();
          p.erase("default");
        }
      }
    }
    TS_ASSIGN_OR_RETURN(t.space_, ParamSpace::from_json(space));

    const json& launch = j.at("launch");
    for (int i = 0; i < 3; ++i) {
      t.grid_exprs_[i] = launch.at("grid").at(i).get<std::string>();
      t.block_exprs_[i] = launch.at("block").at(i).get<std::string>();
    }
    t.shared_expr_ = launch.value("dynamic_shared_bytes", std::string("0"));
    t.workspace_expr_ = launch.value("workspace_bytes", std::string("0"));
    if (launch.contains("tensor_maps")) {
      auto maps = parse_tensor_map_decls(launch.at("tensor_maps"));
      if (!maps.ok()) return Status::parse_error(origin + ": " + maps.status().message());
      t.tensor_maps_ = std::move(*maps);
    }
  } catch (const json::exception& e) {
    return Status::parse_error(origin + ": " + e.what());
  }
  if (source.empty()) return Status::parse_error(origin + ": the template has no source");
  for (const auto& p : t.space_.parameters())
    if (!t.defaults_.count(p.name))
      return Status::parse_error(origin + ": parameter " + p.name + " has no default");
  if (j.contains("seeds")) {
    if (!j["seeds"].is_array()) return Status::parse_error(origin + ": 'seeds' must be a list of objects");
    for (size_t i = 0; i < j["seeds"].size(); ++i) {
      const json& seed = j["seeds"][i];
      const std::string which = origin + ": seed " + std::to_string(i + 1);
      if (!seed.is_object()) return Status::parse_error(which + " must be an object of parameter values");
      Config c = t.defaults_;
      for (const auto& [name, value] : seed.items()) {
        if (!value.is_number_integer()) return Status::parse_error(which + ": " + name + " must be an integer");
        if (!t.defaults_.count(name)) return Status::parse_error(which + ": " + name + " is not a parameter");
        c[name] = value.get<std::int64_t>();
      }
      if (auto point = t.space_.from_config(c); !point.ok())
        return Status::parse_error(which + ": " + point.status().message());
      t.seeds_.push_back(std::move(c));
    }
  }
  t.source_ = source;
  t.json_text_ = json_text;
  t.headers_ = std::move(headers);
  Hasher h, legacy;
  h.add_field(source).add_field(json_text);
  legacy.add_field(source).add_field(json_text);
  if (t.headers_) {
    for (const auto& [name, text] : *t.headers_) legacy.add_field(name).add_field(text);
    for (const std::string& name : t.included_headers())
      for (const auto& [n, text] : *t.headers_)
        if (n == name) {
          h.add_field(n).add_field(text);
          break;
        }
    t.legacy_hash_ = legacy.hex().substr(0, 16);
  }
  t.source_hash_ = h.hex().substr(0, 16);
  return t;
}

namespace {
// The names in a text's `#include "NAME"` lines (angle-bracket includes are the compiler's).
std::vector<std::string> quoted_includes(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while ((at = text.find("#include", at)) != std::string::npos) {
    const std::size_t line_end = text.find('\n', at);
    const std::string line = text.substr(at, line_end == std::string::npos ? std::string::npos : line_end - at);
    at += 8;
    const std::size_t open = line.find('"');
    if (open == std::string::npos) continue;
    const std::size_t close = line.find('"', open + 1);
    if (close == std::string::npos) continue;
    std::string name = line.substr(open + 1, close - open - 1);
    if (const std::size_t slash = name.find_last_of('/'); slash != std::string::npos) name = name.substr(slash + 1);
    out.push_back(name);
  }
  return out;
}
}  // namespace

std::vector<std::string> KernelTemplate::included_headers() const {
  std::set<std::string> seen;
  if (!headers_) return {};
  std::vector<std::string> todo = quoted_includes(source_);
  while (!todo.empty()) {
    const std::string name = todo.back();
    todo.pop_back();
    for (const auto& [n, text] : *headers_)
      if (n == name && seen.insert(n).second) {
        for (std::string inner : quoted_includes(text)) todo.push_back(std::move(inner));
        break;
      }
  }
  return {seen.begin(), seen.end()};
}

KernelTemplate KernelTemplate::recorded(const std::string& name, ParamSpace space,
                                        const std::string& description, const std::string& math) {
  KernelTemplate t;
  t.name_ = name;
  t.math_ = math;
  t.entry_ = name;
  t.description_ = description;
  t.space_ = std::move(space);
  t.source_hash_ = short_hash(t.space_.to_json().dump());
  return t;
}

double KernelTemplate::fastest_possible_ms(const GemmProblem& problem, const DeviceFacts& device) const {
  if (math_ != "fma") return 0;
  // A bound must hold for any code the compiler may emit: AMD parts can issue two FP32 FMAs
  // per lane (CDNA2/3's packed FP32, RDNA3's dual issue), which fp32_peak_flops leaves out.
  const bool amd = device.arch.rfind("gfx", 0) == 0;
  const double peak =
      device.fp32_peak_flops() * (dtype_info(problem.a_type).matrix_rate > 0 ? 2.0 : 1.0) * (amd ? 2.0 : 1.0);
  if (!(peak > 0)) return 0;
  return problem.flops() / peak * 1e3;
}

Status KernelTemplate::supports(const GemmProblem& p) const {
  TS_RETURN_IF_ERROR(p.validate());
  if (is_recorded()) return {};  // a recording answers for its own problem
  if (!contains(dtypes_, dtype_name(p.a_type)))
    return Status::invalid(name_ + " does not support data type " + dtype_name(p.a_type) +
                           " (supports " + join(dtypes_) + ")");
  if (p.b_type != p.a_type && !(mixed_fp8_ && dtype_is_fp8(p.a_type) && dtype_is_fp8(p.b_type)))
    return Status::invalid(name_ + " needs A and B of one type (A is " + dtype_name(p.a_type) + ", B " +
                           dtype_name(p.b_type) + ")");
  if (p.accumulate != DType::kF32) return Status::invalid(name_ + " accumulates in fp32 only");
  if (c_dtypes_.empty() ? p.c_type != p.a_type : !contains(c_dtypes_, dtype_name(p.c_type)))
    return Status::invalid(name_ + " does not support C of type " + dtype_name(p.c_type) + " (supports " +
                           (c_dtypes_.empty() ? std::string("C in the input type") : join(c_dtypes_)) + ")");
  if (!contains(layouts_, p.layout_code()))
    return Status::invalid(name_ + " does not support layout " + p.layout_code() + " (supports " +
                           join(layouts_) + ")");
  std::string cl = p.c_layout == Layout::kRowMajor ? "row" : "col";
  if (!contains(c_layouts_, cl))
    return Status::invalid(name_ + " does not support a " + cl + "-major C");
  if (!contains(epilogues_, epilogue_name(p.epilogue)))
    return Status::invalid(name_ + " does not support epilogue " + epilogue_name(p.epilogue) +
                           " (supports " + join(epilogues_) + ")");
  if (p.beta != 0.0 && !supports_beta_) return Status::invalid(name_ + " does not support beta != 0");
  if (!contains(scalings_, scaling_name(p.scaling)))
    return Status::invalid(name_ + " does not support " + scaling_name(p.scaling) + " scaling (supports " +
                           join(scalings_) + ")");
  return {};
}

SpaceContext KernelTemplate::context(const GemmProblem& p, const DeviceFacts* device) const {
  SpaceContext ctx;
  ctx.constants = {{"M", double(p.m)},
                   {"N", double(p.n)},
                   {"K", double(p.k)},
                   {"DTYPE_BYTES", double(dtype_bytes(p.a_type))},
                   {"C_DTYPE_BYTES", double(dtype_bytes(p.c_type))},
                   {"HAS_BETA", p.beta != 0.0 ? 1.0 : 0.0},
                   {"HAS_EPILOGUE", p.epilogue != Epilogue::kNone ? 1.0 : 0.0},
                   {"BLOCK_SCALED", p.scaling == Scaling::kBlock ? 1.0 : 0.0},
                   {"WARP_SIZE", double(device ? device->warp_size : 32)},
                   {"LDA", double(p.lda())},
                   {"LDB", double(p.ldb())},
                   {"LDC", double(p.ldc())},
                   {"A_ROW_MAJOR", p.a_layout == Layout::kRowMajor ? 1.0 : 0.0},
                   {"B_ROW_MAJOR", p.b_layout == Layout::kRowMajor ? 1.0 : 0.0},
                   {"C_ROW_MAJOR", p.c_layout == Layout::kRowMajor ? 1.0 : 0.0}};
  // What matrix units a template may use: the NVIDIA compute capability as 80, 90, ...
  // (0 elsewhere), and 1 on AMD CDNA parts with fp32 MFMA (gfx908, gfx90a, gfx94x, gfx95x).
  ctx.constants["NVIDIA_SM"] = 0;
  ctx.constants["AMD_CDNA"] = 0;
  if (device) {
    ctx.constants["NUM_SMS"] = device->multiprocessors;
    const std::string& arch = device->arch;
    if (device->backend == "cuda" && arch.rfind("sm_", 0) == 0)
      ctx.constants["NVIDIA_SM"] = std::atoi(arch.c_str() + 3);
    if (device->backend == "hip")
      for (const char* cdna : {"gfx908", "gfx90a", "gfx94", "gfx95"})
        if (arch.rfind(cdna, 0) == 0) ctx.constants["AMD_CDNA"] = 1;
    ctx.device = *device;
  }
  return ctx;
}

Status KernelTemplate::can_serve(const GemmProblem& problem, const DeviceFacts& device) const {
  TS_RETURN_IF_ERROR(supports(problem));
  SpaceContext ctx = context(problem, &device);
  bool any = false;
  space_.for_each_valid(ctx, [&](const PointValues&) {
    any = true;
    return false;  // one is enough
  });
  if (any) return {};
  Status defaults = space_.validate(defaults_, ctx);
  return Status::invalid(name_ + " has no valid configuration for " + problem.describe() + " on " + device.arch +
                         (defaults.ok() ? "" : " (its defaults: " + defaults.message() + ")"));
}

Result<RenderedKernel> KernelTemplate::render(const GemmProblem& problem, const Config& config,
                                              const DeviceFacts& device) const {
  if (is_recorded()) return Status::failed_precondition(name_ + " is a recorded space with no source");
  TS_RETURN_IF_ERROR(supports(problem));
  SpaceContext ctx = context(problem, &device);
  TS_RETURN_IF_ERROR(space_.validate(config, ctx));
  TS_ASSIGN_OR_RETURN(auto values, space_.derive(config, ctx));
  for (const auto& [k, v] : ctx.constants) values.emplace(k, v);

  RenderedKernel r;
  r.template_name = name_;
  r.source = source_;
  r.headers = headers_;
  r.entry = entry_;
  r.arch = device.arch;
  if (device.backend == "cuda" && !nvidia_arch_suffix_.empty()) r.arch += nvidia_arch_suffix_;
  for (int i = 0; i < 3; ++i) {
    TS_ASSIGN_OR_RETURN(r.grid[i], launch_dim(grid_exprs_[i], values, "grid dimension"));
    TS_ASSIGN_OR_RETURN(r.block[i], launch_dim(block_exprs_[i], values, "block dimension"));
  }
  TS_ASSIGN_OR_RETURN(double smem, eval_launch_expr(shared_expr_, values));
  TS_ASSIGN_OR_RETURN(double ws, eval_launch_expr(workspace_expr_, values));
  if (smem < 0 || ws < 0) return Status::invalid("negative shared memory or workspace size");
  r.dynamic_shared_bytes = static_cast<std::uint64_t>(smem);
  r.workspace_bytes = static_cast<std::uint64_t>(ws);
  if (r.threads() > device.max_threads_per_block)
    return Status::invalid("block of " + std::to_string(r.threads()) + " threads exceeds the device's " +
                           std::to_string(device.max_threads_per_block));
  if (r.grid[1] > 65535 || r.grid[2] > 65535)
    return Status::invalid("grid y/z dimension exceeds 65535; the problem is too large for this config");
  for (const TensorMapDecl& d : tensor_maps_) {
    if (values["NVIDIA_SM"] < 90)
      return Status::invalid(name_ + " reads its operands through tensor maps, which need an NVIDIA sm_90 GPU or newer");
    if (!d.when.empty()) {
      TS_ASSIGN_OR_RETURN(double when, eval_launch_expr(d.when, values));
      if (when == 0) {
        TensorMapSpec unused;
        unused.operand = d.operand;
        unused.unused = true;
        r.tensor_maps.push_back(unused);
        continue;
      }
    }
    std::array<double, 2> box{};
    for (int k = 0; k < 2; ++k) {
      TS_ASSIGN_OR_RETURN(box[k], eval_launch_expr(d.box[k], values));
    }
    TS_ASSIGN_OR_RETURN(TensorMapSpec spec, resolve_tensor_map(d, problem, box));
    r.tensor_maps.push_back(spec);
  }

  // Parameters first (sorted by name, as Config is), then the problem macros: a stable
  // order, so the same candidate always hashes to the same cache key.
  for (const auto& [k, v] : config) r.options.push_back("-D" + k + "=" + std::to_string(v));
  auto flag = [&](const char* name, long long v) { r.options.push_back(std::string("-D") + name + "=" + std::to_string(v)); };
  flag("TS_A_ROW_MAJOR", problem.a_layout == Layout::kRowMajor);
  flag("TS_B_ROW_MAJOR", problem.b_layout == Layout::kRowMajor);
  flag("TS_C_ROW_MAJOR", problem.c_layout == Layout::kRowMajor);
  flag("TS_HAS_BETA", problem.beta != 0.0);
  flag("TS_EPILOGUE", static_cast<int>(problem.epilogue));
  flag("TS_AB_DTYPE", dtype_info(problem.a_type).kernel_code);
  // Only where B differs (mixed FP8), so every other kernel's options, and cache keys, stay as they were.
  if (problem.b_type != problem.a_type) flag("TS_B_DTYPE", dtype_info(problem.b_type).kernel_code);
  flag("TS_C_DTYPE", dtype_info(problem.c_type).kernel_code);
  // Only for block scales, whose grids the kernel takes as two more parameters: every other
  // kernel's options (and cache keys, and code) stay as they were.
  if (problem.scaling == Scaling::kBlock) flag("TS_BLOCK_SCALES", 1);
  flag("TS_WARP_SIZE", device.warp_size);
  flag(device.backend == "hip" ? "TS_VENDOR_AMD" : "TS_VENDOR_NVIDIA", 1);
  return r;
}

std::vector<std::string> ConfigUpdate::notes() const {
  std::vector<std::string> out;
  for (const auto& [name, value] : filled)
    out.push_back(name + "=" + std::to_string(value) +
                  " filled in: the entry predates the parameter (the template's default)");
  for (const auto& [name, value] : dropped)
    out.push_back(name + "=" + std::to_string(value) + " left out: the template no longer has it");
  return out;
}

ConfigUpdate KernelTemplate::update_config(const Config& recorded) const {
  ConfigUpdate u;
  for (const auto& [name, value] : recorded) {
    if (space_.find(name))
      u.config[name] = value;
    else
      u.dropped[name] = value;
  }
  for (const Parameter& p : space_.parameters()) {
    if (u.config.count(p.name)) continue;
    if (auto d = defaults_.find(p.name); d != defaults_.end()) {
      u.config[p.name] = d->second;
      u.filled[p.name] = d->second;
    }
  }
  return u;
}

}  // namespace tilesmith
