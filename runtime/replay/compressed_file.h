#pragma once
// Reads a whole file that may be gzip-compressed (detected from its first bytes, not
// its name), so Kernel Tuner caches can be used as shipped (.json.gz) or unpacked.

#include <filesystem>
#include <string>

#include "base/status.h"

namespace tilesmith::replay {

// The file's contents, decompressed when it is gzip; io_error naming the path otherwise.
Result<std::string> read_maybe_gzip(const std::filesystem::path& path);

}  // namespace tilesmith::replay
