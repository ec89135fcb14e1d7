#include "tuner/records/journal.h"

#include <fstream>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/files.h"

namespace tilesmith {
namespace fs = std::filesystem;
using nlohmann::json;

Result<RunJournal> RunJournal::open(const fs::path& path) {
  RunJournal j;
  j.path_ = path;
  std::error_code ec;
  if (!fs::exists(path, ec)) return j;
  TS_ASSIGN_OR_RETURN(std::string text, read_file(path));
  std::size_t pos = 0, keep = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    const bool last = nl == std::string::npos || nl + 1 == text.size();
    std::string_view line(text.data() + pos, (nl == std::string::npos ? text.size() : nl) - pos);
    json event = json::parse(line, nullptr, false);
    const bool good = nl != std::string::npos && !event.is_discarded() && event.is_object();
    if (!good && last) break;  // a torn last line: dropped below
    if (good) j.events_.push_back(std::move(event));
    else if (!line.empty()) ++j.skipped_lines_;
    pos = nl + 1;
    keep = pos;
  }
  if (keep < text.size()) {
    j.repaired_bytes_ = text.size() - keep;
    if (::truncate(path.c_str(), static_cast<off_t>(keep)) != 0)
      return Status::io_error("repairing " + path.string() + ": " + std::strerror(errno));
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
      if (fd >= 0) ::close(fd);
      return Status::io_error("fsync of " + path.string() + ": " + std::strerror(errno));
    }
    ::close(fd);
  }
  return j;
}

Status RunJournal::append(const json& event, bool durable) {
  // Invalid UTF-8 (a compiler log, an LLM reply) must not make dump() throw.
  std::string line = event.dump(-1, ' ', false, json::error_handler_t::replace);
  line.push_back('\n');
  std::lock_guard lock(*mutex_);
  if (durable) return append_line_durable(path_, line).with_context("journal");
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::io_error("opening " + path_.string() + ": " + std::strerror(errno));
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      return Status::io_error("writing " + path_.string() + ": " + why);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  ::close(fd);
  return {};
}

std::optional<DeviceFacts> read_first_device(const std::filesystem::path& journal) {
  std::ifstream in(journal);
  for (std::string line; in && std::getline(in, line);) {
    const auto e = nlohmann::json::parse(line, nullptr, false);
    if (e.is_discarded() || !e.is_object() || e.value("event", std::string()) != "session" || !e.contains("device"))
      continue;
    if (auto facts = device_facts_from_json(e["device"]); facts.ok()) return std::move(facts).value();
  }
  return std::nullopt;
}

std::optional<ConvergenceRecord> read_last_convergence(const std::filesystem::path& journal) {
  std::ifstream in(journal);
  if (!in) return std::nullopt;
  std::optional<ConvergenceRecord> last;
  std::string line;
  while (std::getline(in, line)) {
    const auto e = nlohmann::json::parse(line, nullptr, false);
    if (e.is_discarded() || !e.is_object() || !e.contains("converged") || !e["converged"].is_number()) continue;
    const std::string event = e.value("event", "");
    if (event != "plan" && event != "end") continue;
    ConvergenceRecord r;
    r.probability = e["converged"].get<double>();
    r.margin = e.value("convergence_margin", 0.05);
    // A plan's "evaluated" is the run's count before it; an end's is the session's, so
    // the end says when its estimate was made in "converged_at".
    r.evaluated = e.value(event == "plan" ? "evaluated" : "converged_at", std::int64_t{0});
    last = r;
  }
  return last;
}

}  // namespace tilesmith
