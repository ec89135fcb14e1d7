#pragma once
// An on-disk cache of compiled kernels in front of a Compiler. The key is a hash of the
// source, every option (the compiler's base options included), the target and the
// compiler's version, so a changed template, flag or toolkit never reuses a stale
// binary. Bounded: past max_bytes the least recently used entries are deleted.
// Only successful compiles are stored; a compile error is recompiled (and cheap).
// Thread-safe: entries are written atomically and read whole.

#include <filesystem>
#include <memory>

#include "runtime/compiler.h"

namespace tilesmith {

// Everything a compile depends on, hashed: the compiler's version and base options, the target,
// the entry, the source, its headers and the options. Equal keys compile to equal code (the
// compilers are deterministic): the cache's key, and what lets a check of the generated code
// skip compiles whose inputs have not changed (candidate_input_hash).
std::string compile_input_key(const Compiler& compiler, const CompileRequest& request);

class CompileCache final : public Compiler {
 public:
  // dir is created when missing. max_bytes 0 disables storing (reads still work).
  CompileCache(std::shared_ptr<Compiler> inner, std::filesystem::path dir, std::uint64_t max_bytes);

  std::string version() const override { return inner_->version(); }
  Status check_target(const std::string& arch) const override { return inner_->check_target(arch); }
  std::vector<std::string> base_options(const std::string& arch) const override {
    return inner_->base_options(arch);
  }
  // On a hit: the stored binary, log and resources, cache_hit = true, compile_ms = the
  // time of the lookup.
  CompileResult compile(const CompileRequest& request) override;

  std::string key(const CompileRequest& request) const;
  const std::filesystem::path& dir() const { return dir_; }
  // Deletes least recently used entries until the folder holds at most max_bytes.
  void evict();

  static constexpr std::uint64_t kDefaultMaxBytes = 512ull << 20;

 private:
  std::shared_ptr<Compiler> inner_;
  std::filesystem::path dir_;
  std::uint64_t max_bytes_;
};

}  // namespace tilesmith
