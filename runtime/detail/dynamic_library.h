#pragma once
// A dlopen'd shared library (RAII, move-only). Vendor libraries are loaded this way so
// that no binary needs a GPU driver or toolkit just to start.

#include <string>
#include <vector>

#include "base/status.h"

namespace tilesmith::detail {

class DynamicLibrary {
 public:
  DynamicLibrary() = default;
  ~DynamicLibrary();
  DynamicLibrary(DynamicLibrary&& o) noexcept : handle_(o.handle_), path_(std::move(o.path_)) { o.handle_ = nullptr; }
  DynamicLibrary& operator=(DynamicLibrary&& o) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  // Tries each candidate (a soname, found through the loader's search path, or a full
  // path) in order. unavailable with every dlerror() when none loads.
  static Result<DynamicLibrary> open_first(const std::vector<std::string>& candidates);

  // The symbol's address, or nullptr.
  void* symbol(const char* name) const;
  const std::string& path() const { return path_; }
  explicit operator bool() const { return handle_ != nullptr; }

 private:
  void* handle_ = nullptr;
  std::string path_;
};

// Resolves a symbol into a typed function pointer; records the first missing name.
class SymbolLoader {
 public:
  explicit SymbolLoader(const DynamicLibrary& lib) : lib_(lib) {}
  template <typename Fn>
  void load(Fn*& out, const char* name) {
    out = reinterpret_cast<Fn*>(lib_.symbol(name));
    if (!out && missing_.empty()) missing_ = name;
  }
  // ok, or unavailable naming the first symbol that was missing.
  Status status() const;

 private:
  const DynamicLibrary& lib_;
  std::string missing_;
};

}  // namespace tilesmith::detail
