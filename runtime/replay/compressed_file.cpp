#include "runtime/replay/compressed_file.h"

#include <zlib.h>

#include <memory>
#include <stdexcept>

#include "base/files.h"

namespace tilesmith::replay {

Result<std::string> read_maybe_gzip(const std::filesystem::path& path) {
  // gzread passes non-gzip input through unchanged, so one code path serves both forms.
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return Status::io_error("cannot open " + path.string());
  std::unique_ptr<gzFile_s, int (*)(gzFile)> closer(f, gzclose);
  gzbuffer(f, 1 << 18);
  std::string out;
  constexpr unsigned kChunk = 1 << 20;
  while (true) {
    size_t old = out.size();
    out.resize(old + kChunk);
    int n = gzread(f, out.data() + old, kChunk);
    if (n < 0) {
      int errnum = 0;
      const char* msg = gzerror(f, &errnum);
      return Status::io_error("reading " + path.string() + ": " + (msg ? msg : "zlib error"));
    }
    out.resize(old + static_cast<size_t>(n));
    if (n == 0) break;
  }
  // A truncated gzip stream reads as a short file without an error from gzread.
  int errnum = 0;
  const char* msg = gzerror(f, &errnum);
  if (errnum != Z_OK && errnum != Z_STREAM_END)
    return Status::io_error("reading " + path.string() + ": " + (msg ? msg : "zlib error"));
  return out;
}

std::string gzip_compress(std::string_view text) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("zlib: deflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> end(&z, deflateEnd);
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  // deflateBound leaves room for the whole stream, so one Z_FINISH call completes it.
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("zlib: deflate did not finish");
  out.resize(z.total_out);
  return out;
}

Status write_maybe_gzip(const std::filesystem::path& path, std::string_view text) {
  const std::string name = path.filename().string();
  const bool gz = name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0;
  if (!gz) return write_file_atomic(path, text);
  return write_file_atomic(path, gzip_compress(text));
}

}  // namespace tilesmith::replay
