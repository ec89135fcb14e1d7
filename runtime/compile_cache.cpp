#include "runtime/compile_cache.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/files.h"
#include "base/hash.h"

namespace tilesmith {
namespace fs = std::filesystem;

CompileCache::CompileCache(std::shared_ptr<Compiler> inner, fs::path dir, std::uint64_t max_bytes)
    : inner_(std::move(inner)), dir_(std::move(dir)), max_bytes_(max_bytes) {
  (void)ensure_directory(dir_);  // a missing folder only means no caching; compile() still works
}

std::string compile_input_key(const Compiler& compiler, const CompileRequest& r) {
  Hasher h;
  h.add_field(compiler.version()).add_field(r.arch).add_field(r.entry).add_field(r.source);
  for (const auto& o : compiler.base_options(r.arch)) h.add_field(o);
  for (const auto& o : r.options) h.add_field(o);
  for (const auto& [name, text] : r.headers) h.add_field(name).add_field(text);
  return h.hex();
}

std::string CompileCache::key(const CompileRequest& r) const { return compile_input_key(*inner_, r); }

CompileResult CompileCache::compile(const CompileRequest& request) {
  // The cache keeps binaries only: a request for the PTX, or for the PTX alone, goes to the compiler.
  if (request.output != CompileOutput::kBinary) return inner_->compile(request);
  auto t0 = std::chrono::steady_clock::now();
  const std::string k = key(request);
  const fs::path bin = dir_ / (k + ".bin"), meta = dir_ / (k + ".json");
  auto cached_meta = read_file(meta);
  auto cached_bin = cached_meta.ok() ? read_file(bin) : Result<std::string>(Status::not_found(""));
  if (cached_meta.ok() && cached_bin.ok() && !cached_bin->empty()) {
    auto j = nlohmann::json::parse(*cached_meta, nullptr, false);
    // An entry written before the cache kept the code digest is compiled again (and rewritten):
    // a hit must hand back everything a compile does.
    if (!j.is_discarded() && j.value("size", std::uint64_t(0)) == cached_bin->size() &&
        j.value("code_digest", std::string()).size() > 0) {
      CompileResult r;
      r.ok = true;
      r.binary = std::move(cached_bin).value();
      r.log = j.value("log", std::string());
      r.code_digest = j.value("code_digest", std::string());
      r.resources.registers = j.value("registers", -1);
      r.resources.static_shared_bytes = j.value("static_shared_bytes", std::int64_t(-1));
      r.resources.local_bytes = j.value("local_bytes", std::int64_t(-1));
      r.resources.spill_store_bytes = j.value("spill_store_bytes", std::int64_t(-1));
      r.resources.spill_load_bytes = j.value("spill_load_bytes", std::int64_t(-1));
      r.cache_hit = true;
      r.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::error_code ec;
      fs::last_write_time(meta, fs::file_time_type::clock::now(), ec);  // marks it recently used
      return r;
    }
  }
  CompileResult r = inner_->compile(request);
  if (r.ok && max_bytes_ > 0) {
    nlohmann::json j{{"size", r.binary.size()},
                     {"log", r.log},
                     {"code_digest", r.code_digest},
                     {"registers", r.resources.registers},
                     {"static_shared_bytes", r.resources.static_shared_bytes},
                     {"local_bytes", r.resources.local_bytes},
                     {"spill_store_bytes", r.resources.spill_store_bytes},
                     {"spill_load_bytes", r.resources.spill_load_bytes},
                     {"compiler", inner_->version()},
                     {"arch", request.arch},
                     {"name", request.name}};
    // Binary first, metadata last: an entry counts only once its metadata exists.
    if (write_file_atomic(bin, r.binary).ok() && write_file_atomic(meta, j.dump()).ok()) evict();
  }
  return r;
}

void CompileCache::evict() {
  if (max_bytes_ == 0) return;
  struct Entry {
    fs::path meta;
    fs::file_time_type used;
    std::uint64_t bytes;
  };
  std::vector<Entry> entries;
  std::uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() != ".json") continue;
    fs::path bin = e.path();
    bin.replace_extension(".bin");
    std::uint64_t bytes = fs::file_size(e.path(), ec) + fs::file_size(bin, ec);
    entries.push_back({e.path(), fs::last_write_time(e.path(), ec), bytes});
    total += bytes;
  }
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const auto& e : entries) {
    if (total <= max_bytes_) break;
    fs::path bin = e.meta;
    bin.replace_extension(".bin");
    fs::remove(e.meta, ec);
    fs::remove(bin, ec);
    total -= std::min(total, e.bytes);
  }
}

}  // namespace tilesmith
