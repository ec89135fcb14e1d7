#include "llm/llm_log.h"

#include <chrono>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "base/files.h"

namespace tilesmith::llm {

LlmLog::LlmLog(std::filesystem::path path) : path_(std::move(path)) {}

std::string utc_timestamp() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];  // sized for any int values, which the compiler cannot rule out
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

Status LlmLog::append(const nlohmann::ordered_json& record, const ApiKey& key) {
  if (!enabled()) return {};
  std::string line;
  if (record.is_object() && !record.contains("time")) {
    nlohmann::ordered_json stamped = record;
    stamped["time"] = utc_timestamp();
    line = stamped.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  line = key.redact(std::move(line));
  line += '\n';
  std::lock_guard lock(mutex_);
  return append_line_durable(path_, line).with_context("writing the LLM log");
}

}  // namespace tilesmith::llm
