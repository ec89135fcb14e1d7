#pragma once
// Where tests find files of the repository: $TILESMITH_SOURCE_DIR when set (tests
// copied to another machine run from the repository root there), else the source folder
// the tests were built from.

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tilesmith::testing {

inline std::filesystem::path source_dir() {
  if (const char* s = std::getenv("TILESMITH_SOURCE_DIR"); s && *s) return s;
  if (std::filesystem::exists(TILESMITH_SOURCE_DIR)) return TILESMITH_SOURCE_DIR;
  return std::filesystem::current_path();
}

inline std::filesystem::path test_kernels_dir() { return source_dir() / "tests" / "kernels"; }

}  // namespace tilesmith::testing
