#pragma once
// bench-best --record-code-hashes: without a GPU, compiles each entry's config for the
// device it was recorded on and compares the kernel with the one the entry measured
// (runtime/code_identity.h). An entry whose template is still the one it was tuned with and
// that has no code hash yet gets it written into its best_config.json, so that a later
// change to the template's source that leaves this kernel as it was keeps the entry
// current. One line per entry; exit 0 when every entry is known current, 4 when one's
// kernel changed or cannot be told, 1 when a compile or a write failed.

#include <filesystem>
#include <optional>
#include <vector>

#include "cli/bench_best.h"
#include "registry/template_library.h"
#include "tuner/records/best_config.h"

namespace tilesmith::cli {

// The entries the problem flags, --template and --fastest-only keep (fastest per problem and
// device), as a measurement would select them.
int record_code_hashes(const BenchBestOptions& o, const std::vector<BestEntry>& entries,
                       const std::vector<std::filesystem::path>& entry_files,
                       const std::optional<GemmProblem>& problem_filter, const TemplateLibrary& lib);

}  // namespace tilesmith::cli
