#pragma once
// llm_log.jsonl: one JSON object per line for every HTTP attempt made to an LLM endpoint:
// time, provider, endpoint, model, call and attempt numbers, output mode, the request body,
// the HTTP status or transport error, latency, token usage and the reply. Header values
// (where the key travels) are never recorded, and every line goes through
// ApiKey::redact before it is written. Lines are appended with one write() and fsync'd
// (base/files.h), so a crash loses at most the line being written.
//
// Thread-safe: appends from several threads (or several LlmLog objects on one path) do
// not interleave within a line.

#include <filesystem>
#include <mutex>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "llm/api_key.h"

namespace tilesmith::llm {

class LlmLog {
 public:
  // An empty path disables the log (append() then does nothing and returns ok).
  explicit LlmLog(std::filesystem::path path = {});

  bool enabled() const { return !path_.empty(); }
  const std::filesystem::path& path() const { return path_; }

  // Adds "time" (UTC, ISO 8601 with milliseconds) when the record lacks it, serialises it
  // on one line (invalid UTF-8 from a server is replaced, not thrown on), redacts `key`.
  Status append(const nlohmann::ordered_json& record, const ApiKey& key);

 private:
  std::filesystem::path path_;
  std::mutex mutex_;
};

// "2025-01-31T12:34:56.789Z"
std::string utc_timestamp();

}  // namespace tilesmith::llm
