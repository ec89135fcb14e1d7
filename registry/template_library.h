#pragma once
// The set of kernel templates a run can use: those embedded in the binary at build
// time (kernels/*.hip + *.json), or those in a folder the user names.

#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "registry/kernel_template.h"

namespace tilesmith {

class TemplateLibrary {
 public:
  // Every template compiled into the binary.
  static Result<TemplateLibrary> embedded();
  // Every NAME.json in `dir` with a NAME.hip beside it; every *.h there is a header the
  // templates may include. A JSON without source, or one that does not parse, is an
  // error naming the file.
  static Result<TemplateLibrary> from_directory(const std::filesystem::path& dir);

  const std::vector<KernelTemplate>& templates() const { return templates_; }
  const KernelTemplate* find(const std::string& name) const;
  std::vector<std::string> names() const;
  // Templates whose supports() accepts the problem; `reasons` (optional) gets one
  // line per template that does not.
  std::vector<const KernelTemplate*> supporting(const GemmProblem& problem,
                                                std::vector<std::string>* reasons = nullptr) const;

 private:
  std::vector<KernelTemplate> templates_;
};

// The templates a command uses: those in `dir` (--kernels-dir), or the embedded ones when
// `dir` is empty.
Result<TemplateLibrary> load_templates(const std::string& dir);

// The template of that name compiled into the binary (TemplateLibrary::embedded, built once for
// the process); nullptr where there is none.
const KernelTemplate* embedded_template(const std::string& name);

// The template whose launch geometry (grid, shared memory and threads of a config on a
// problem) is `tmpl`'s: `tmpl` itself where it has source; for a recorded space (replay), the
// embedded template of the same name, the kernel a recording of one of tilesmith's templates
// measured (a problem set's recordings are named after their kernel); else `tmpl`, which then
// renders nothing.
const KernelTemplate& launch_geometry_of(const KernelTemplate& tmpl);

}  // namespace tilesmith
