#pragma once
// Files that must survive a crash: atomic replace (temp, fsync, rename, fsync dir) and
// whole-line appends with fsync. Plus small helpers for reading files and cache folders.

#include <filesystem>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tilesmith {

Result<std::string> read_file(const std::filesystem::path& path);

// Writes `contents` to a temp file beside `path`, fsyncs it, renames it over `path`
// and fsyncs the folder, so a reader sees the old file or the new one, never a mix.
Status write_file_atomic(const std::filesystem::path& path, std::string_view contents);

// Appends `line` (which should end in '\n') with one write() and fsyncs the file.
Status append_line_durable(const std::filesystem::path& path, std::string_view line);

// $XDG_CACHE_HOME/tilesmith, else $HOME/.cache/tilesmith, else /tmp/tilesmith-cache.
std::filesystem::path default_cache_dir();

Status ensure_directory(const std::filesystem::path& dir);

// Whether `dir` can be the folder a command writes into, without creating anything:
// an existing folder this user can write, or a missing one whose nearest existing
// ancestor is such a folder. invalid_argument, naming the path and what is wrong (a
// file stands there or above it, no write permission), otherwise. `what` names the
// path in the message ("--results").
Status check_writable_directory(const std::filesystem::path& dir, const std::string& what);

}  // namespace tilesmith
