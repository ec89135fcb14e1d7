#include "tuner/assembly/rank_service.h"

#include <optional>

#include <spdlog/spdlog.h>

#include "base/host_name.h"
#include "registry/template_library.h"
#include "tuner/assembly/run_start.h"

namespace tilesmith {

int serve_rank(const RunSettings& f, ScaleOut& scale_out) {
  const bool replay = f.evaluator.backend == "replay";
  std::optional<TemplateLibrary> library;
  if (!replay) {
    auto lib = load_templates(f.kernels_dir);
    if (!lib.ok()) return scale_out.refuse(local_host_name() + ": " + lib.status().message());
    library = std::move(lib).value();
  }
  auto o = open_evaluator(f.evaluator, evaluator_context(f));
  if (!o.ok()) {
    spdlog::error(o.status().message());
    return scale_out.refuse(local_host_name() + ": " + o.status().message());
  }
  RankTemplateFinder find = [&](const std::string& name,
                                const std::string& hash) -> const KernelTemplate* {
    for (const auto& t : o->recorded_templates)
      if (t.name() == name && t.matches_source_hash(hash)) return &t;
    if (library)
      if (const KernelTemplate* t = library->find(name); t && t->matches_source_hash(hash)) return t;
    return nullptr;
  };
  spdlog::info("serving rank 0 with {}", o->description);
  return scale_out.serve(o->runner(), find, host_compile_slots(f.compile_threads, o->runner()));
}

}  // namespace tilesmith
