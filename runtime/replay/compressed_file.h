#pragma once
// Reads a whole file that may be gzip-compressed (detected from its first bytes, not
// its name), so Kernel Tuner caches can be used as shipped (.json.gz) or unpacked; and
// writes one, compressed when its name ends in .gz.

#include <filesystem>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tilesmith::replay {

// The file's contents, decompressed when it is gzip; io_error naming the path otherwise.
Result<std::string> read_maybe_gzip(const std::filesystem::path& path);

// `text` as one gzip member (what gzip(1) and Python's gzip module read).
std::string gzip_compress(std::string_view text);

// Writes `text` to `path` atomically (base/files.h), gzip-compressed when the name ends
// in ".gz"; io_error naming the path otherwise.
Status write_maybe_gzip(const std::filesystem::path& path, std::string_view text);

}  // namespace tilesmith::replay
