#include "runtime/detail/dynamic_library.h"

#include <dlfcn.h>

namespace tilesmith::detail {

DynamicLibrary::~DynamicLibrary() {
  // Vendor runtimes register atexit handlers and threads; unloading them while the
  // process runs is a known source of crashes at exit, so handles are never closed.
  handle_ = nullptr;
}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& o) noexcept {
  handle_ = o.handle_;
  path_ = std::move(o.path_);
  o.handle_ = nullptr;
  return *this;
}

Result<DynamicLibrary> DynamicLibrary::open_first(const std::vector<std::string>& candidates) {
  std::string errors;
  for (const auto& name : candidates) {
    void* h = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) {
      DynamicLibrary lib;
      lib.handle_ = h;
      lib.path_ = name;
      return lib;
    }
    const char* e = ::dlerror();
    errors += std::string(errors.empty() ? "" : "; ") + (e ? e : name + ": not found");
  }
  return Status::unavailable(errors);
}

void* DynamicLibrary::symbol(const char* name) const { return handle_ ? ::dlsym(handle_, name) : nullptr; }

Status SymbolLoader::status() const {
  if (missing_.empty()) return {};
  return Status::unavailable(lib_.path() + " lacks symbol " + missing_ + " (library too old?)");
}

}  // namespace tilesmith::detail
