#include "gemmlib/handle.h"

#include "base/files.h"

namespace tilesmith::gemmlib {

ErrorKind error_kind(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument: return ErrorKind::kInvalidArgument;
    case StatusCode::kNotFound:
    case StatusCode::kIoError:
    case StatusCode::kParseError:
    case StatusCode::kFailedPrecondition: return ErrorKind::kPackage;
    case StatusCode::kUnimplemented: return ErrorKind::kNotSupported;
    case StatusCode::kUnavailable: return ErrorKind::kDevice;
    case StatusCode::kInternal: return ErrorKind::kDevice;  // a driver call that failed
    case StatusCode::kOk: break;
  }
  return ErrorKind::kInternal;
}

Result<std::unique_ptr<GemmHandle>> GemmHandle::create(const std::filesystem::path& package, int ordinal,
                                                       HandleOptions options, ErrorKind* stage) {
  if (!options.log) options.log = [](int, const std::string&) {};
  // Lines come from decisions and kernel loads on any thread: the sink sees one at a time.
  options.log = [sink = std::move(options.log), mu = std::make_shared<std::mutex>()](int level, const std::string& line) {
    std::lock_guard lock(*mu);
    sink(level, line);
  };
  if (options.cache_dir.empty()) options.cache_dir = default_cache_dir();
  auto pkg = read_package(package);
  if (!pkg.ok()) {
    // A path outside the package is invalid_argument in the reader; it is still the package's fault.
    if (stage) *stage = ErrorKind::kPackage;
    return pkg.status();
  }
  for (const auto& note : pkg->notes) options.log(1, "package " + pkg->root.string() + ": " + note);
  auto shared = std::make_shared<const Package>(std::move(pkg).value());
  auto device = open_gemm_device(shared->device.backend, ordinal, DeviceOptions{options.cache_dir, options.log});
  if (!device.ok()) {
    if (stage) *stage = error_kind(device.status());
    return device.status();
  }
  const std::string mismatch = device_mismatch(shared->device, (*device)->facts());
  options.log(0, "package " + shared->root.string() + ": " + std::to_string(shared->problems.size()) +
              " tuned problems from " + shared->device.name + " (" + shared->device.arch + "), running on " +
              (*device)->facts().name + " (" + (*device)->facts().arch + ")" +
              (mismatch.empty() ? "" : options.allow_foreign_device ? "; another device, package kernels by opt-in"
                                                                    : "; another device: the vendor library runs everything"));
  return std::unique_ptr<GemmHandle>(new GemmHandle(std::move(shared), std::move(device).value(), std::move(options)));
}

Result<std::shared_ptr<const Decision>> GemmHandle::decision(const GemmProblem& problem) {
  const std::string key = problem.key();
  {
    std::lock_guard lock(mu_);
    auto it = decisions_.find(key);
    if (it != decisions_.end()) return it->second;
  }
  // Decided outside the lock (renders can take a while); the first to store wins.
  auto d = decide(*package_, device_->facts(), problem, DispatchOptions{options_.allow_foreign_device});
  if (!d.ok()) return d.status();
  auto shared = std::make_shared<const Decision>(std::move(d).value());
  std::lock_guard lock(mu_);
  auto [it, inserted] = decisions_.emplace(key, shared);
  if (inserted) options_.log(0, problem.describe() + ": " + shared->reason);
  return it->second;
}

Status GemmHandle::run(const GemmProblem& problem, const GemmArgs& args) {
  if (!args.a || !args.b || !args.c) return Status::invalid("A, B and C must be device pointers, not NULL");
  const bool bias = epilogue_has_bias(problem.epilogue);
  if (bias && !args.bias)
    return Status::invalid(std::string("the ") + epilogue_name(problem.epilogue) + " epilogue needs a bias pointer");
  TS_ASSIGN_OR_RETURN(auto d, decision(problem));
  if (d->runs_package_kernel()) return device_->launch(*package_, d->launch, problem, args);
  Status st = device_->vendor(problem, args);
  // The rule picked the vendor over a tuned kernel, but this library's vendor path cannot
  // do the problem (the tuner's baseline may have been another vendor routine): the tuned
  // kernel, which ran it correctly at tuning, is the next best.
  if (st.code() == StatusCode::kUnimplemented && d->vendor_by_rule()) {
    bool first = false;
    {
      std::lock_guard lock(mu_);
      first = vendor_fallbacks_.insert(problem.key()).second;
    }
    if (first)
      options_.log(1, problem.describe() + ": " + st.message() + "; the tuned kernel of '" + d->tuned->name +
                          "' runs instead");
    return device_->launch(*package_, d->launch, problem, args);
  }
  return st;
}

}  // namespace tilesmith::gemmlib
