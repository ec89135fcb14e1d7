#include "runtime/replay/compressed_file.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "base/files.h"

namespace tilesmith::replay {

namespace {
// A damaged file is bad input (exit code 2), not a failure of the run.
Status damaged(const std::filesystem::path& path, const char* zlib_message) {
  std::string why = zlib_message && *zlib_message ? zlib_message : "zlib error";
  // zlib names the file itself ("PATH: unexpected end of file"); the message does already.
  if (why.rfind(path.string() + ": ", 0) == 0) why = why.substr(path.string().size() + 2);
  return Status::parse_error(path.string() + " is damaged (" + why +
                             ": truncated or not a gzip stream); copy or record it again");
}
}  // namespace

Result<std::string> read_maybe_gzip(const std::filesystem::path& path) {
  // gzread passes non-gzip input through unchanged, so one code path serves both forms.
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::not_found(path.string() + " does not exist");
  if (std::filesystem::is_directory(path, ec)) return Status::invalid(path.string() + " is a folder, not a file");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return Status::invalid("cannot open " + path.string() + " (" + std::strerror(errno) + ")");
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
      return damaged(path, msg);
    }
    out.resize(old + static_cast<size_t>(n));
    if (n == 0) break;
  }
  // A truncated gzip stream reads as a short file without an error from gzread.
  int errnum = 0;
  const char* msg = gzerror(f, &errnum);
  if (errnum != Z_OK && errnum != Z_STREAM_END) return damaged(path, msg);
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
