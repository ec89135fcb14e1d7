#pragma once
// The dispatch rule (docs/gemm-library.md): which kernel runs a problem, decided from the
// package, the facts of the device the program runs on and the problem alone, so it is
// tested without a GPU. Thread-safe (pure functions over const data).
//
//   (a) the package's device identity (name, arch, multiprocessors) differs from the
//       running device: the vendor library (kForeignDevice), unless the caller opted in;
//   (b) a tuned problem with the same GemmProblem::key: its kernel (kExact);
//   (c) otherwise, among the tuned problems of the same kind (input and C types,
//       accumulator, layouts, C layout, epilogue, beta zero or not), those whose config
//       renders valid for the new shape: the nearest by shape (kNearest), distance
//       |ln(m/m')| + |ln(n/n')| + |ln(k/k')|; ties go to the faster tuned median, then to
//       the earlier entry in tuned.json;
//   (d) none: the vendor library (kVendor).
// Never slower than the vendor: the entry (b) or (c) picks runs its kernel only when, at
// tuning, it beat the vendor library by more than the noise of the two measurements
// (PackageProblem::against_vendor, analysis/vendor_rule.h); otherwise the vendor library
// runs (kVendor, `tuned` naming the entry that lost). For (c) that is the entry's own
// shape: the nearest evidence there is. An entry without a vendor time runs its kernel.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "gemmlib/package.h"
#include "registry/device_facts.h"
#include "registry/problem.h"

namespace tilesmith::gemmlib {

enum class Path { kExact, kNearest, kVendor, kForeignDevice };
const char* path_name(Path p);  // "exact", "nearest", "vendor", "foreign-device"

// What to launch for a decision that runs a package kernel.
struct Launch {
  const PackageTemplate* tmpl = nullptr;
  // The package's compiled kernel when its options are the ones to use; nullptr when the
  // kernel must be compiled from the shipped source (on another device, by opt-in, or
  // when the render's options differ from the package kernel's).
  const PackageKernel* package_kernel = nullptr;
  std::vector<std::string> options;  // -D definitions as rendered
  std::string entry, arch;           // arch: the compile target ("sm_90a")
  std::array<std::uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  std::uint64_t dynamic_shared_bytes = 0, workspace_bytes = 0;
  // Maps the kernel takes after the ABI's parameters (registry/tensor_map.h), encoded at
  // each launch for the caller's pointers.
  std::vector<TensorMapSpec> tensor_maps;
  // The identity of the binary: the package kernel's id, or a hash of source, options
  // and target for a compiled one.
  std::string kernel_key;
};

struct Decision {
  Path path = Path::kVendor;
  // exact, nearest: the tuned entry whose kernel runs. vendor: the entry the rule sent to
  // the vendor library (its kernel did not beat the vendor), nullptr when none applied.
  const PackageProblem* tuned = nullptr;
  // exact, nearest: what runs. vendor with `tuned`: the kernel the vendor replaces, run
  // instead where the vendor library cannot do the problem (vendor_by_rule()).
  Launch launch;
  analysis::VendorComparison vs_vendor;   // `tuned` against the vendor at tuning (when `tuned`)
  double distance = 0;                    // nearest: the shape distance to `tuned`
  bool foreign_device = false;            // running a package kernel on another device (opt-in)
  std::string reason;                     // one line: which path and why
  bool runs_package_kernel() const { return path == Path::kExact || path == Path::kNearest; }
  // The vendor library runs because a tuned kernel did not beat it; `launch` is that kernel.
  bool vendor_by_rule() const { return path == Path::kVendor && tuned && launch.tmpl; }
};

struct DispatchOptions {
  bool allow_foreign_device = false;
};

// "" when the package's device identity matches the running device; otherwise what differs.
std::string device_mismatch(const PackageDevice& package, const DeviceFacts& running);

// |ln(m/m')| + |ln(n/n')| + |ln(k/k')|.
double shape_distance(const GemmProblem& a, const GemmProblem& b);

// Same types, layouts, epilogue and beta-ness: one compiled kernel can serve both.
bool same_kind(const GemmProblem& a, const GemmProblem& b);

// invalid_argument only for a problem that is itself invalid (GemmProblem::validate).
Result<Decision> decide(const Package& pkg, const DeviceFacts& running, const GemmProblem& problem,
                        const DispatchOptions& options);

}  // namespace tilesmith::gemmlib
