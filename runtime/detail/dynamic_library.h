#pragma once
// A dlopen'd shared library (RAII, move-only). Vendor libraries are loaded this way so
// that no binary needs a GPU driver or toolkit just to start.

#include <mutex>
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
  // A symbol only newer libraries have: left null where missing, without failing the load.
  template <typename Fn>
  void load_optional(Fn*& out, const char* name) {
    out = reinterpret_cast<Fn*>(lib_.symbol(name));
  }
  // ok, or unavailable naming the first symbol that was missing.
  Status status() const;

 private:
  const DynamicLibrary& lib_;
  std::string missing_;
};

// Loads the first library of `candidates` once per process and fills an Api table from
// it with `fill(api, loader)`; later calls return the same table (or the same error).
// One instantiation per call site (each `fill` lambda has its own type), so each
// table has its own once-flag. Thread-safe.
template <typename Api, typename Fill>
Result<const Api*> load_api_once(const std::vector<std::string>& candidates, Fill fill) {
  static std::once_flag once;
  static Api api;
  static Status status;
  static DynamicLibrary lib;
  std::call_once(once, [&] {
    auto opened = DynamicLibrary::open_first(candidates);
    if (!opened.ok()) {
      status = opened.status();
      return;
    }
    lib = std::move(opened).value();
    SymbolLoader loader(lib);
    fill(api, loader);
    api.library_path = lib.path();
    status = loader.status();
  });
  if (!status.ok()) return status;
  return &api;
}

}  // namespace tilesmith::detail
