#pragma once
// A tuned package (docs/package.md) read into memory: tuned.json checked against schema
// tilesmith.tuned/1, every path resolved inside the package folder, the templates loaded
// from the package's own sources and headers (never the embedded ones: the package is
// what was tuned). Immutable after reading; const access is thread-safe.

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analysis/vendor_rule.h"
#include "base/status.h"
#include "registry/config.h"
#include "registry/device_facts.h"
#include "registry/kernel_template.h"
#include "registry/problem.h"

namespace tilesmith::gemmlib {

inline constexpr const char* kTunedSchema = "tilesmith.tuned/1";

struct PackageDevice {
  std::string fingerprint, name, arch, backend, driver, runtime_compiler;
  int multiprocessors = 0;
  DeviceFacts facts;  // device.facts, with name/arch/multiprocessors/backend from the fields above
};

struct PackageTemplate {
  std::string name, source_hash;
  std::string source_path, description_path;  // package-relative, as written
  KernelTemplate tmpl;                          // loaded from the package's files
};

struct PackageKernel {
  std::string id, template_name, arch, entry;
  std::vector<std::string> options;
  std::string binary_path;  // package-relative
  std::string binary_hash;  // short_hash of the binary's bytes
  std::string compiler;     // the compiler that built the binary ("nvrtc 13.0"); "" when not said
};

struct PackageProblem {
  std::string name;
  std::int64_t count = 1;
  GemmProblem problem;
  std::string template_name;
  Config config;
  std::string kernel_id;
  std::array<std::uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  std::uint64_t dynamic_shared_bytes = 0, workspace_bytes = 0;
  double median_ms = 0, tflops = 0;
  std::optional<double> p20_ms, p80_ms, cv;  // the spread of median_ms; absent in older packages
  std::string vendor_name;                 // "" where not measured
  std::optional<double> vendor_median_ms;  // null where not measured
  std::optional<double> vendor_p20_ms, vendor_p80_ms, vendor_cv;  // the vendor median's spread

  // The tuned kernel against the vendor library at tuning time (analysis/vendor_rule.h):
  // the one rule the dispatcher applies to this entry.
  analysis::VendorComparison against_vendor() const;
};

struct Package {
  std::filesystem::path root;  // the package folder, absolute
  std::string schema, created, tilesmith_version;
  PackageDevice device;
  std::vector<PackageTemplate> templates;
  std::shared_ptr<const KernelHeaders> headers;  // name (file name) -> text
  std::vector<std::string> header_paths;         // package-relative, as in tuned.json
  std::vector<PackageKernel> kernels;
  std::vector<PackageProblem> problems;
  // Things worth a log line that do not stop the package from working (a template whose
  // files hash differently from templates[].source_hash).
  std::vector<std::string> notes;

  const PackageTemplate* find_template(const std::string& name) const;
  const PackageKernel* find_kernel(const std::string& id) const;
};

// Reads and checks DIR/tuned.json and loads what it names. Errors name the package, the
// field and what to do: parse_error for a malformed file or a wrong schema, not_found for
// a missing tuned.json, template source or description, invalid_argument for a path
// outside the package. Binaries are not read here (read_kernel_binary does, on first use).
Result<Package> read_package(const std::filesystem::path& dir);

// tuned.json's contents for a package in memory: the one writer of the schema (autotune-loop
// export writes through it; read_package reads it back). Templates, kernels and problems in
// their order; the root, the loaded templates and the notes are not part of the file.
nlohmann::json package_to_json(const Package& pkg);

// ROOT/REL for a package-relative path: refuses an empty or absolute path, a ".."
// component, and a path that leaves the package through a symbolic link.
// `what` names the field for the message ("kernels[2].binary").
Result<std::filesystem::path> resolve_package_path(const std::filesystem::path& root, const std::string& rel,
                                                   const std::string& what);

// The kernel's binary, after checking binary_hash: not_found when the file is missing,
// parse_error when its bytes do not hash to binary_hash (corrupt or replaced).
Result<std::string> read_kernel_binary(const Package& pkg, const PackageKernel& kernel);

}  // namespace tilesmith::gemmlib
