#pragma once
// One libtilesmith_gemm handle: a package, the device it runs on and the decisions made
// so far (one per problem key, logged once when made). Thread-safe.

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "base/status.h"
#include "gemmlib/device.h"
#include "gemmlib/dispatch.h"
#include "gemmlib/package.h"

namespace tilesmith::gemmlib {

struct HandleOptions {
  bool allow_foreign_device = false;
  std::filesystem::path cache_dir;  // empty: default_cache_dir()
  LogSink log;                      // may be null
};

// Which C status a failure maps to (docs/gemm-library.md, "Errors").
enum class ErrorKind { kInvalidArgument, kPackage, kNotSupported, kDevice, kInternal };
ErrorKind error_kind(const Status& s);

class GemmHandle {
 public:
  // Reads the package (errors: ErrorKind::kPackage), then opens the device.
  // `stage` (optional) is set to kPackage or kDevice for a failure of either step.
  static Result<std::unique_ptr<GemmHandle>> create(const std::filesystem::path& package, int ordinal,
                                                    HandleOptions options, ErrorKind* stage = nullptr);

  // The decision for the problem (cached; logged when first made).
  Result<std::shared_ptr<const Decision>> decision(const GemmProblem& problem);
  Status run(const GemmProblem& problem, const GemmArgs& args);

  const Package& package() const { return *package_; }

 private:
  GemmHandle(std::shared_ptr<const Package> pkg, std::unique_ptr<GemmDevice> device, HandleOptions options)
      : package_(std::move(pkg)), device_(std::move(device)), options_(std::move(options)) {}

  std::shared_ptr<const Package> package_;
  std::unique_ptr<GemmDevice> device_;
  HandleOptions options_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const Decision>> decisions_;
  std::set<std::string> vendor_fallbacks_;  // problem keys whose vendor path failed (logged once)
};

}  // namespace tilesmith::gemmlib
