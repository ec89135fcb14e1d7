#include "gemmlib/package.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/files.h"
#include "base/hash.h"

namespace tilesmith::gemmlib {
namespace fs = std::filesystem;
using nlohmann::json;

analysis::VendorComparison PackageProblem::against_vendor() const {
  using analysis::relative_spread;
  std::optional<analysis::Measurement> vendor;
  if (vendor_median_ms)
    vendor = analysis::Measurement{*vendor_median_ms,
                                   relative_spread(*vendor_median_ms, vendor_p20_ms, vendor_p80_ms, vendor_cv)};
  const analysis::Measurement tuned{median_ms, relative_spread(median_ms, p20_ms, p80_ms, cv)};
  return analysis::compare_with_vendor(tuned, vendor);
}

const PackageTemplate* Package::find_template(const std::string& name) const {
  for (const auto& t : templates)
    if (t.name == name) return &t;
  return nullptr;
}

const PackageKernel* Package::find_kernel(const std::string& id) const {
  for (const auto& k : kernels)
    if (k.id == id) return &k;
  return nullptr;
}

Result<fs::path> resolve_package_path(const fs::path& root, const std::string& rel, const std::string& what) {
  if (rel.empty()) return Status::invalid(what + " is empty: every file of a package is named by a relative path");
  const fs::path p(rel);
  if (p.is_absolute())
    return Status::invalid(what + " is the absolute path '" + rel +
                           "': a package names its files relative to its folder; re-export it");
  for (const auto& part : p)
    if (part == "..")
      return Status::invalid(what + " '" + rel + "' contains '..' and would leave the package folder; re-export it");
  // A symbolic link inside the package may still point outside it.
  std::error_code ec;
  const fs::path croot = fs::weakly_canonical(root, ec);
  const fs::path full = fs::weakly_canonical(root / p, ec);
  if (ec) return root / p;  // a missing file: the reader names it
  auto [r, f] = std::mismatch(croot.begin(), croot.end(), full.begin(), full.end());
  if (r != croot.end())
    return Status::invalid(what + " '" + rel + "' resolves to " + full.string() + ", outside the package " +
                           croot.string());
  return full;
}

namespace {

// Reads one package file named by a relative path (not_found names the field and file).
Result<std::string> read_package_file(const fs::path& root, const std::string& rel, const std::string& what) {
  TS_ASSIGN_OR_RETURN(fs::path path, resolve_package_path(root, rel, what));
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return Status::not_found(what + ": the package has no file " + rel + " (looked at " + path.string() + ")");
  return read_file(path);
}

// Typed access to one object's fields; the first error wins and names the field.
class Fields {
 public:
  Fields(const json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j_.is_object()) fail("is not an object");
  }
  const Status& status() const { return status_; }
  void fail(const std::string& why) {
    if (status_.ok()) status_ = Status::parse_error(where_ + " " + why);
  }
  const json* at(const char* key, bool required) {
    if (!j_.is_object()) return nullptr;
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) {
      if (required) fail("has no \"" + std::string(key) + "\"");
      return nullptr;
    }
    return &*it;
  }
  std::string str(const char* key, bool required = true) {
    const json* v = at(key, required);
    if (!v) return {};
    if (!v->is_string()) {
      fail("field \"" + std::string(key) + "\" is not a string");
      return {};
    }
    return v->get<std::string>();
  }
  double number(const char* key, double fallback, bool required = false) {
    const json* v = at(key, required);
    if (!v) return fallback;
    if (!v->is_number()) {
      fail("field \"" + std::string(key) + "\" is not a number");
      return fallback;
    }
    return v->get<double>();
  }
  // Absent or null: nullopt; present, it must be a number.
  std::optional<double> optional_number(const char* key) {
    if (!at(key, false)) return std::nullopt;
    return number(key, 0);
  }
  std::int64_t integer(const char* key, std::int64_t fallback, bool required = false) {
    const json* v = at(key, required);
    if (!v) return fallback;
    if (!v->is_number_integer() || v->get<std::int64_t>() < 0) {
      fail("field \"" + std::string(key) + "\" is not a non-negative integer");
      return fallback;
    }
    return v->get<std::int64_t>();
  }
  const json& array(const char* key, bool required = true) {
    static const json empty = json::array();
    const json* v = at(key, required);
    if (!v) return empty;
    if (!v->is_array()) {
      fail("field \"" + std::string(key) + "\" is not an array");
      return empty;
    }
    return *v;
  }
  std::array<std::uint32_t, 3> dim3(const char* key) {
    std::array<std::uint32_t, 3> out{1, 1, 1};
    const json& a = array(key);
    if (!status_.ok()) return out;
    if (a.size() != 3) {
      fail("field \"" + std::string(key) + "\" does not have 3 entries");
      return out;
    }
    for (int i = 0; i < 3; ++i) {
      if (!a[i].is_number_unsigned() || a[i].get<std::uint64_t>() == 0 || a[i].get<std::uint64_t>() > 0xffffffffu) {
        fail("field \"" + std::string(key) + "\" has an entry that is not a positive 32-bit integer");
        return out;
      }
      out[i] = a[i].get<std::uint32_t>();
    }
    return out;
  }

 private:
  const json& j_;
  std::string where_;
  Status status_;
};

Status read_device(const json& j, PackageDevice& d) {
  Fields f(j, "device");
  d.fingerprint = f.str("fingerprint", false);
  d.name = f.str("name");
  d.arch = f.str("arch");
  d.multiprocessors = static_cast<int>(f.integer("multiprocessors", 0, true));
  d.backend = f.str("backend");
  d.driver = f.str("driver", false);
  d.runtime_compiler = f.str("runtime_compiler", false);
  TS_RETURN_IF_ERROR(f.status());
  if (const json* facts = f.at("facts", false)) {
    json with_backend = *facts;
    if (with_backend.is_object() && !with_backend.contains("backend")) with_backend["backend"] = d.backend;
    auto r = device_facts_from_json(with_backend);
    if (!r.ok()) return r.status().with_context("device.facts");
    d.facts = std::move(r).value();
  }
  // The identity fields are the ones the library compares; the facts follow them.
  d.facts.backend = d.backend;
  d.facts.name = d.name;
  d.facts.arch = d.arch;
  d.facts.multiprocessors = d.multiprocessors;
  if (d.facts.warp_size == 0) d.facts.warp_size = nominal_facts_for_arch(d.arch).warp_size;
  return {};
}

Status read_headers(const json& j, const fs::path& root, Package& pkg) {
  auto headers = std::make_shared<KernelHeaders>();
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string what = "headers[" + std::to_string(i) + "]";
    if (!j[i].is_string()) return Status::parse_error(what + " is not a string");
    const std::string rel = j[i].get<std::string>();
    TS_ASSIGN_OR_RETURN(std::string text, read_package_file(root, rel, what));
    // Templates include headers by file name: the compiler gets them under that name.
    headers->emplace_back(fs::path(rel).filename().string(), std::move(text));
    pkg.header_paths.push_back(rel);
  }
  pkg.headers = std::move(headers);
  return {};
}

Status read_templates(const json& j, const fs::path& root, Package& pkg) {
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string where = "templates[" + std::to_string(i) + "]";
    Fields f(j[i], where);
    PackageTemplate t;
    t.name = f.str("name");
    t.source_hash = f.str("source_hash", false);
    t.source_path = f.str("source");
    t.description_path = f.str("description");
    TS_RETURN_IF_ERROR(f.status());
    TS_ASSIGN_OR_RETURN(std::string source, read_package_file(root, t.source_path, where + ".source"));
    TS_ASSIGN_OR_RETURN(std::string description, read_package_file(root, t.description_path, where + ".description"));
    if (source.empty())
      return Status::parse_error(where + ".source " + t.source_path + " is empty: the package must ship the template's source");
    auto loaded = KernelTemplate::from_text(description, source, (root / t.description_path).string(), pkg.headers);
    if (!loaded.ok()) return loaded.status().with_context("loading template " + t.name + " from the package");
    t.tmpl = std::move(loaded).value();
    if (t.tmpl.name() != t.name)
      return Status::parse_error(where + " is named '" + t.name + "' but " + t.description_path + " describes '" +
                                 t.tmpl.name() + "'");
    if (!t.source_hash.empty() && !t.tmpl.matches_source_hash(t.source_hash))
      pkg.notes.push_back("template " + t.name + ": the shipped files hash to " + t.tmpl.source_hash() +
                          ", tuned.json says " + t.source_hash + " (the package's files were changed after export)");
    pkg.templates.push_back(std::move(t));
  }
  return {};
}

Status read_kernels(const json& j, const fs::path& root, Package& pkg) {
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string where = "kernels[" + std::to_string(i) + "]";
    Fields f(j[i], where);
    PackageKernel k;
    k.id = f.str("id");
    k.template_name = f.str("template");
    k.arch = f.str("arch");
    k.entry = f.str("entry");
    k.binary_path = f.str("binary");
    k.binary_hash = f.str("binary_hash");
    k.compiler = f.str("compiler", false);
    for (const auto& o : f.array("options")) {
      if (!o.is_string()) f.fail("has an option that is not a string");
      else k.options.push_back(o.get<std::string>());
    }
    TS_RETURN_IF_ERROR(f.status());
    // Checked here so a package that points outside itself is refused before any use.
    TS_RETURN_IF_ERROR(resolve_package_path(root, k.binary_path, where + ".binary").status());
    if (!pkg.find_template(k.template_name))
      return Status::parse_error(where + " names template '" + k.template_name + "', which templates[] does not list");
    if (pkg.find_kernel(k.id)) return Status::parse_error(where + " repeats the id " + k.id);
    pkg.kernels.push_back(std::move(k));
  }
  return {};
}

Status read_problems(const json& j, Package& pkg) {
  for (std::size_t i = 0; i < j.size(); ++i) {
    const std::string where = "problems[" + std::to_string(i) + "]";
    Fields f(j[i], where);
    PackageProblem p;
    p.name = f.str("name");
    p.count = f.integer("count", 1);
    p.template_name = f.str("template");
    p.kernel_id = f.str("kernel");
    p.grid = f.dim3("grid");
    p.block = f.dim3("block");
    p.dynamic_shared_bytes = static_cast<std::uint64_t>(f.integer("dynamic_shared_bytes", 0));
    p.workspace_bytes = static_cast<std::uint64_t>(f.integer("workspace_bytes", 0));
    p.median_ms = f.number("median_ms", 0);
    p.tflops = f.number("tflops", 0);
    p.p20_ms = f.optional_number("p20_ms");
    p.p80_ms = f.optional_number("p80_ms");
    p.cv = f.optional_number("cv");
    const json* problem = f.at("problem", true);
    const json* config = f.at("config", true);
    if (const json* vendor = f.at("vendor", false)) {
      Fields v(*vendor, where + ".vendor");
      p.vendor_name = v.str("name", false);
      p.vendor_median_ms = v.optional_number("median_ms");
      p.vendor_p20_ms = v.optional_number("p20_ms");
      p.vendor_p80_ms = v.optional_number("p80_ms");
      p.vendor_cv = v.optional_number("cv");
      TS_RETURN_IF_ERROR(v.status());
    }
    TS_RETURN_IF_ERROR(f.status());
    auto prob = problem_from_json(*problem);
    if (!prob.ok()) return prob.status().with_context(where + ".problem");
    p.problem = std::move(prob).value();
    auto cfg = config_from_json(*config);
    if (!cfg.ok()) return cfg.status().with_context(where + ".config");
    p.config = std::move(cfg).value();
    const PackageKernel* k = pkg.find_kernel(p.kernel_id);
    if (!k) return Status::parse_error(where + " (" + p.name + ") names kernel " + p.kernel_id + ", which kernels[] does not list");
    if (k->template_name != p.template_name)
      return Status::parse_error(where + " (" + p.name + ") runs template " + p.template_name + " but its kernel " +
                                 p.kernel_id + " was built from " + k->template_name);
    pkg.problems.push_back(std::move(p));
  }
  return {};
}

}  // namespace

Result<Package> read_package(const fs::path& dir) {
  std::error_code ec;
  Package pkg;
  pkg.root = fs::absolute(dir, ec);
  if (!fs::is_directory(pkg.root, ec))
    return Status::not_found("package folder " + dir.string() + " does not exist (make one with autotune-loop export)");
  const fs::path tuned = pkg.root / "tuned.json";
  if (!fs::is_regular_file(tuned, ec))
    return Status::not_found(dir.string() + " has no tuned.json: it is not a tuned package (autotune-loop export "
                             "--results DIR --out PKG writes one)");
  TS_ASSIGN_OR_RETURN(std::string text, read_file(tuned));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::parse_error(tuned.string() + " is not valid JSON");
  auto ctx = [&](const Status& s) { return s.with_context("package " + pkg.root.string()); };
  Fields top(j, "tuned.json");
  pkg.schema = top.str("schema");
  if (!top.status().ok()) return ctx(top.status());
  if (pkg.schema != kTunedSchema)
    return ctx(Status::parse_error("tuned.json has schema '" + pkg.schema + "', this library reads '" + kTunedSchema +
                                   "' (re-export the package with a matching tilesmith, or use a matching library)"));
  pkg.created = top.str("created", false);
  pkg.tilesmith_version = top.str("tilesmith_version", false);
  const json* device = top.at("device", true);
  const json& templates = top.array("templates");
  const json& headers = top.array("headers", false);
  const json& kernels = top.array("kernels");
  const json& problems = top.array("problems");
  if (!top.status().ok()) return ctx(top.status());
  Status s = read_device(*device, pkg.device);
  if (s.ok()) s = read_headers(headers, pkg.root, pkg);
  if (s.ok()) s = read_templates(templates, pkg.root, pkg);
  if (s.ok()) s = read_kernels(kernels, pkg.root, pkg);
  if (s.ok()) s = read_problems(problems, pkg);
  if (!s.ok()) return ctx(s);
  return pkg;
}

json package_to_json(const Package& pkg) {
  json facts;
  to_json(facts, pkg.device.facts);
  json templates = json::array(), kernels = json::array(), problems = json::array();
  for (const auto& t : pkg.templates)
    templates.push_back({{"name", t.name},
                         {"source_hash", t.source_hash},
                         {"source", t.source_path},
                         {"description", t.description_path}});
  for (const auto& k : pkg.kernels)
    kernels.push_back({{"id", k.id},
                       {"template", k.template_name},
                       {"arch", k.arch},
                       {"entry", k.entry},
                       {"options", k.options},
                       {"compiler", k.compiler},
                       {"binary", k.binary_path},
                       {"binary_hash", k.binary_hash}});
  auto number_or_null = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  for (const auto& p : pkg.problems) {
    json problem;
    to_json(problem, p.problem);
    problems.push_back({{"name", p.name},
                        {"count", p.count},
                        {"problem", problem},
                        {"template", p.template_name},
                        {"config", config_to_json(p.config)},
                        {"kernel", p.kernel_id},
                        {"grid", p.grid},
                        {"block", p.block},
                        {"dynamic_shared_bytes", p.dynamic_shared_bytes},
                        {"workspace_bytes", p.workspace_bytes},
                        {"median_ms", p.median_ms},
                        {"p20_ms", number_or_null(p.p20_ms)},
                        {"p80_ms", number_or_null(p.p80_ms)},
                        {"cv", number_or_null(p.cv)},
                        {"tflops", p.tflops},
                        {"vendor",
                         {{"name", p.vendor_name},
                          {"median_ms", number_or_null(p.vendor_median_ms)},
                          {"p20_ms", number_or_null(p.vendor_p20_ms)},
                          {"p80_ms", number_or_null(p.vendor_p80_ms)},
                          {"cv", number_or_null(p.vendor_cv)}}}});
  }
  return {{"schema", kTunedSchema},
          {"created", pkg.created},
          {"tilesmith_version", pkg.tilesmith_version},
          {"device",
           {{"fingerprint", pkg.device.fingerprint},
            {"name", pkg.device.name},
            {"arch", pkg.device.arch},
            {"multiprocessors", pkg.device.multiprocessors},
            {"backend", pkg.device.backend},
            {"driver", pkg.device.driver},
            {"runtime_compiler", pkg.device.runtime_compiler},
            {"facts", facts}}},
          {"templates", templates},
          {"headers", pkg.header_paths},
          {"kernels", kernels},
          {"problems", problems}};
}

Result<std::string> read_kernel_binary(const Package& pkg, const PackageKernel& kernel) {
  auto bytes = read_package_file(pkg.root, kernel.binary_path, "kernel " + kernel.id + " binary");
  if (!bytes.ok()) return bytes.status();
  const std::string actual = short_hash(*bytes);
  if (actual != kernel.binary_hash)
    return Status::parse_error("kernel " + kernel.id + " binary " + kernel.binary_path + " hashes to " + actual +
                               ", tuned.json says " + kernel.binary_hash + " (the file is corrupt or was replaced)");
  return bytes;
}

}  // namespace tilesmith::gemmlib
