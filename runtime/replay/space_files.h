#pragma once
// Space files for recorded kernels: ParamSpace JSON (registry/space.h) plus
//   "kernel_tuner": {"kernel_names": ["Xgemm", ...]}
// naming the Kernel Tuner kernels whose recordings it describes. They hold what a
// cache file lacks: the constraints (restrictions), derived values and parameter
// descriptions. Shipped in data/spaces/.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"

namespace tilesmith::replay {

// $TILESMITH_SPACES_DIR when set, else the source tree's data/spaces (compiled in).
std::filesystem::path default_spaces_dir();

struct SpaceFile {
  std::filesystem::path path;
  std::shared_ptr<const nlohmann::json> json;  // the whole file
};

// Reads and parses one space file (JSON syntax only; the space itself is checked when
// it is built against a recording).
Result<SpaceFile> read_space_file(const std::filesystem::path& path);

// The first *.json in `dir` (by file name) that lists `kernel_name` in
// kernel_tuner.kernel_names and declares exactly `param_names` (any order). nullopt when
// none does (or the folder does not exist); an error when a file claiming the kernel
// cannot be read or parsed, so a broken space file is never skipped silently.
Result<std::optional<SpaceFile>> find_space_file(const std::filesystem::path& dir,
                                                 const std::string& kernel_name,
                                                 const std::vector<std::string>& param_names);

}  // namespace tilesmith::replay
