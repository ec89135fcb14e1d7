#include "gemmlib/dispatch.h"

#include <cmath>
#include <sstream>

#include "base/hash.h"

namespace tilesmith::gemmlib {

const char* path_name(Path p) {
  switch (p) {
    case Path::kExact: return "exact";
    case Path::kNearest: return "nearest";
    case Path::kVendor: return "vendor";
    case Path::kForeignDevice: return "foreign-device";
  }
  return "?";
}

std::string device_mismatch(const PackageDevice& package, const DeviceFacts& running) {
  std::string out;
  auto differ = [&](const std::string& what, const std::string& pkg, const std::string& here) {
    if (pkg == here) return;
    if (!out.empty()) out += ", ";
    out += what + " " + pkg + " vs " + here;
  };
  differ("backend", package.backend, running.backend);
  differ("name", package.name, running.name);
  differ("arch", package.arch, running.arch);
  differ("multiprocessors", std::to_string(package.multiprocessors), std::to_string(running.multiprocessors));
  return out;
}

double shape_distance(const GemmProblem& a, const GemmProblem& b) {
  auto d = [](std::int64_t x, std::int64_t y) { return std::fabs(std::log(double(x) / double(y))); };
  return d(a.m, b.m) + d(a.n, b.n) + d(a.k, b.k);
}

bool same_kind(const GemmProblem& a, const GemmProblem& b) {
  return a.a_type == b.a_type && a.b_type == b.b_type && a.c_type == b.c_type && a.accumulate == b.accumulate &&
         a.a_layout == b.a_layout && a.b_layout == b.b_layout && a.c_layout == b.c_layout &&
         a.epilogue == b.epilogue && (a.beta != 0) == (b.beta != 0);
}

namespace {

std::string shape(const GemmProblem& p) {
  return std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k);
}

std::string compiled_key(const KernelTemplate& t, const std::vector<std::string>& options, const std::string& arch) {
  Hasher h;
  h.add_field(t.source_hash()).add_field(arch);
  for (const auto& o : options) h.add_field(o);
  return "compiled-" + h.hex().substr(0, 16);
}

std::string geometry(const Launch& l) {
  std::ostringstream s;
  s << "grid " << l.grid[0] << "x" << l.grid[1] << "x" << l.grid[2] << ", block " << l.block[0] << "x" << l.block[1]
    << "x" << l.block[2];
  if (l.workspace_bytes) s << ", workspace " << l.workspace_bytes << " B";
  return s.str();
}

// A Launch from a render; the package kernel is used where its options are the rendered ones.
Launch from_render(const PackageTemplate& t, const RenderedKernel& r, const PackageKernel* package_kernel) {
  Launch l;
  l.tmpl = &t;
  l.options = r.options;
  l.entry = r.entry;
  l.arch = r.arch;
  l.grid = r.grid;
  l.block = r.block;
  l.dynamic_shared_bytes = r.dynamic_shared_bytes;
  l.workspace_bytes = r.workspace_bytes;
  l.tensor_maps = r.tensor_maps;
  if (package_kernel && package_kernel->options == r.options) {
    l.package_kernel = package_kernel;
    l.kernel_key = package_kernel->id;
  } else {
    l.kernel_key = compiled_key(t.tmpl, r.options, r.arch);
  }
  return l;
}

// Where the tuned kernel did not beat the vendor library at tuning, the decision becomes
// the vendor path (keeping the kernel for a vendor library that cannot run the problem).
// `what` says which entry: "tuned problem 'a' (...)". True when it did.
bool send_to_vendor(Decision& d, const std::string& what, const std::string& foreign_note) {
  d.vs_vendor = d.tuned->against_vendor();
  if (d.vs_vendor.runs_tuned()) return false;
  d.path = Path::kVendor;
  d.foreign_device = false;
  d.reason = "vendor: " + what + ": " + d.vs_vendor.describe() + foreign_note;
  return true;
}

}  // namespace

Result<Decision> decide(const Package& pkg, const DeviceFacts& running, const GemmProblem& problem,
                        const DispatchOptions& options) {
  TS_RETURN_IF_ERROR(problem.validate());
  Decision d;
  const std::string mismatch = device_mismatch(pkg.device, running);
  if (!mismatch.empty() && !options.allow_foreign_device) {
    d.path = Path::kForeignDevice;
    d.reason = "foreign-device: the package was tuned on " + pkg.device.name + " (" + pkg.device.arch + ", " +
               std::to_string(pkg.device.multiprocessors) + " SMs), this is " + running.name + " (" + running.arch +
               ", " + std::to_string(running.multiprocessors) + " SMs; " + mismatch +
               "): the vendor library runs it (allow_foreign_device uses the package's kernels anyway)";
    return d;
  }
  d.foreign_device = !mismatch.empty();
  // On the tuned device the package's own facts are what the configs were checked
  // against; on another device (by opt-in) that device's limits are the ones that hold.
  const DeviceFacts& facts = d.foreign_device ? running : pkg.device.facts;
  const std::string foreign_note = d.foreign_device ? " (on another device by opt-in: " + mismatch + ")" : "";

  // (b) exact
  const std::string key = problem.key();
  for (const auto& tuned : pkg.problems) {
    if (tuned.problem.key() != key) continue;
    const PackageTemplate* t = pkg.find_template(tuned.template_name);
    const PackageKernel* k = pkg.find_kernel(tuned.kernel_id);
    if (!t || !k) continue;  // read_package guarantees both; kept for safety
    if (d.foreign_device) {
      auto r = t->tmpl.render(problem, tuned.config, facts);
      if (!r.ok()) continue;  // not valid on this device: nearest or vendor below
      d.launch = from_render(*t, *r, nullptr);
    } else {
      // Exactly what was tuned and measured: the stored geometry and binary.
      d.launch.tmpl = t;
      d.launch.package_kernel = k;
      d.launch.options = k->options;
      d.launch.entry = k->entry;
      // The compile target of a fallback compile: this device's arch with the template's suffix.
      d.launch.arch = facts.arch + (facts.backend == "cuda" ? t->tmpl.nvidia_arch_suffix() : std::string());
      d.launch.grid = tuned.grid;
      d.launch.block = tuned.block;
      d.launch.dynamic_shared_bytes = tuned.dynamic_shared_bytes;
      d.launch.workspace_bytes = tuned.workspace_bytes;
      d.launch.kernel_key = k->id;
      if (!t->tmpl.tensor_maps().empty()) {
        // The maps describe the problem's operands: rendered again from the shipped template.
        auto r = t->tmpl.render(problem, tuned.config, facts);
        if (!r.ok()) return r.status().with_context("tuned problem '" + tuned.name + "'");
        d.launch.tensor_maps = r->tensor_maps;
      }
    }
    d.path = Path::kExact;
    d.tuned = &tuned;
    const std::string what = "tuned problem '" + tuned.name + "' (" + tuned.problem.describe() + ")";
    if (send_to_vendor(d, what, foreign_note)) return d;
    d.reason = "exact: " + what + " -> " + t->name + " kernel " + d.launch.kernel_key + ", " + geometry(d.launch) +
               "; " + d.vs_vendor.describe() + foreign_note;
    return d;
  }

  // (c) nearest among the tuned problems of the same kind whose config is valid here
  int same = 0;
  std::vector<std::string> skipped;
  for (const auto& tuned : pkg.problems) {
    if (!same_kind(tuned.problem, problem)) continue;
    ++same;
    const PackageTemplate* t = pkg.find_template(tuned.template_name);
    if (!t) continue;
    auto r = t->tmpl.render(problem, tuned.config, facts);
    if (!r.ok()) {
      skipped.push_back(tuned.name + ": " + r.status().message());
      continue;
    }
    const double dist = shape_distance(problem, tuned.problem);
    const bool better = !d.tuned || dist < d.distance - 1e-12 ||
                        (std::fabs(dist - d.distance) <= 1e-12 && tuned.median_ms < d.tuned->median_ms);
    if (!better) continue;
    d.tuned = &tuned;
    d.distance = dist;
    d.launch = from_render(*t, *r, d.foreign_device ? nullptr : pkg.find_kernel(tuned.kernel_id));
  }
  if (d.tuned) {
    d.path = Path::kNearest;
    std::ostringstream s;
    s << "tuned problem '" << d.tuned->name << "' (" << shape(d.tuned->problem) << ") at distance " << d.distance
      << " of " << same << " of this kind";
    if (!skipped.empty()) s << " (" << skipped.size() << " invalid for this shape)";
    // The nearest entry's own comparison with the vendor is the evidence for this shape.
    if (send_to_vendor(d, "the nearest " + s.str() + ", at its own shape", foreign_note)) return d;
    s << " -> " << d.launch.tmpl->name << " kernel " << d.launch.kernel_key
      << (d.launch.package_kernel ? "" : " (compiled from the shipped source)") << ", " << geometry(d.launch)
      << "; at its own shape: " << d.vs_vendor.describe() << foreign_note;
    d.reason = "nearest: " + s.str();
    return d;
  }

  // (d) vendor
  d.path = Path::kVendor;
  d.foreign_device = false;
  if (same == 0) {
    d.reason = "vendor: the package has no tuned problem with these types, layouts, epilogue and beta (" +
               problem.describe() + ")";
  } else {
    d.reason = "vendor: none of the " + std::to_string(same) + " tuned problems of this kind is valid for " +
               shape(problem) + " (" + skipped.front() + (skipped.size() > 1 ? "; ..." : "") + ")";
  }
  return d;
}

}  // namespace tilesmith::gemmlib
