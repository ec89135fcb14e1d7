#include "base/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

namespace tilesmith {
namespace fs = std::filesystem;

namespace {
std::string errno_text() { return std::strerror(errno); }

Status write_all(int fd, std::string_view data, const fs::path& path) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::io_error("writing " + path.string() + ": " + errno_text());
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return {};
}

Status fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return Status::io_error("opening folder " + dir.string() + ": " + errno_text());
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Status::io_error("fsync of folder " + dir.string() + ": " + errno_text());
  return {};
}
}  // namespace

Result<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found("cannot open " + path.string() + ": " + errno_text());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::io_error("reading " + path.string() + " failed");
  return ss.str();
}

Status write_file_atomic(const fs::path& path, std::string_view contents) {
  fs::path dir = path.parent_path();
  std::random_device rd;
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::io_error("creating " + tmp.string() + ": " + errno_text());
  Status st = write_all(fd, contents, tmp);
  if (st.ok() && ::fsync(fd) != 0) st = Status::io_error("fsync of " + tmp.string() + ": " + errno_text());
  ::close(fd);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    st = Status::io_error("renaming " + tmp.string() + " to " + path.string() + ": " + errno_text());
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return fsync_dir(dir);
}

Status append_line_durable(const fs::path& path, std::string_view line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::io_error("opening " + path.string() + " to append: " + errno_text());
  Status st = write_all(fd, line, path);
  if (st.ok() && ::fsync(fd) != 0) st = Status::io_error("fsync of " + path.string() + ": " + errno_text());
  ::close(fd);
  return st;
}

fs::path default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "tilesmith";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "tilesmith";
  return fs::path("/tmp/tilesmith-cache");
}

Status check_writable_directory(const fs::path& dir, const std::string& what) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(dir, ec);
  fs::path probe = ec ? dir : absolute;
  // The nearest part of the path that exists decides: it is the folder itself, or the
  // one the missing folders would be created in.
  while (!probe.empty() && !fs::exists(probe, ec) && probe.has_parent_path() && probe.parent_path() != probe)
    probe = probe.parent_path();
  const bool is_self = probe == absolute || probe == dir;
  if (!fs::is_directory(probe, ec)) {
    if (is_self)
      return Status::invalid(what + " " + dir.string() + " is a file, not a folder: give a folder (it is created "
                             "when missing)");
    return Status::invalid(what + " " + dir.string() + ": " + probe.string() +
                           " is a file, so no folder can be created below it; give another path");
  }
  if (::access(probe.c_str(), W_OK | X_OK) != 0)
    return Status::invalid(what + " " + dir.string() + ": " +
                           (is_self ? std::string("this folder") : "the folder " + probe.string()) +
                           " is not writable by this user (" + errno_text() + "); give a folder you can write");
  return {};
}

Status ensure_directory(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::io_error("creating folder " + dir.string() + ": " + ec.message());
  return {};
}

}  // namespace tilesmith
