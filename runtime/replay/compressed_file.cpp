#include "runtime/replay/compressed_file.h"

#include <zlib.h>

#include <memory>

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

}  // namespace tilesmith::replay
