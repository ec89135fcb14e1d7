#include "gemmlib/kernel_binary.h"

#include "runtime/candidate_compiler.h"

namespace tilesmith::gemmlib {

Result<std::string> compile_launch(const Package& pkg, const Launch& launch, Compiler& compiler) {
  if (!launch.tmpl) return Status::internal("compile_launch without a template");
  CompileRequest req;
  req.name = launch.tmpl->name + ".hip";  // as the tuner names it (runtime/candidate_compiler.cpp)
  req.source = launch.tmpl->tmpl.source();
  req.options = launch.options;
  req.arch = launch.arch;
  req.entry = launch.entry;
  if (pkg.headers) req.headers = *pkg.headers;
  TS_RETURN_IF_ERROR(compiler.check_target(req.arch));
  CompileResult r = compiler.compile(req);
  if (!r.ok)
    return Status::failed_precondition("compiling " + launch.tmpl->source_path + " for " + launch.arch + " with " +
                                       compiler.version() + " failed: " + compile_log_excerpt(r.log));
  return std::move(r.binary);
}

Result<std::string> load_launch_kernel(const Package& pkg, const Launch& launch, const CompilerSource& compiler,
                                       const ModuleLoader& load, std::vector<std::string>& notes) {
  const std::size_t first_note = notes.size();
  if (const PackageKernel* k = launch.package_kernel) {
    auto bytes = read_kernel_binary(pkg, *k);
    if (!bytes.ok()) {
      notes.push_back(bytes.status().message());
    } else {
      Status loaded = load(*bytes);
      if (loaded.ok()) return "package " + k->binary_path;
      notes.push_back("loading " + k->binary_path + " (" + k->arch + ") failed: " + loaded.message());
    }
  }
  auto c = compiler();
  if (!c.ok()) {
    notes.push_back("no compiler for the shipped source: " + c.status().message());
  } else {
    auto bytes = compile_launch(pkg, launch, **c);
    if (!bytes.ok()) {
      notes.push_back(bytes.status().message());
    } else {
      Status loaded = load(*bytes);
      if (loaded.ok()) return "compiled from " + launch.tmpl->source_path + " for " + launch.arch + " by " + (*c)->version();
      notes.push_back("loading the compiled " + launch.tmpl->source_path + " failed: " + loaded.message());
    }
  }
  std::string why;
  for (std::size_t i = first_note; i < notes.size(); ++i) why += (why.empty() ? "" : "; ") + notes[i];
  return Status::failed_precondition("kernel " + launch.kernel_key + " (" + launch.tmpl->name +
                                     ") cannot be loaded: " + why +
                                     ". Re-export the package on this device, or install NVRTC so the library "
                                     "can compile the shipped source");
}

}  // namespace tilesmith::gemmlib
