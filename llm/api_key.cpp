#include "llm/api_key.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

namespace tilesmith::llm {

ApiKey ApiKey::from_env(const std::string& env_var) {
  ApiKey key;
  key.env_var_ = env_var;
  if (const char* v = std::getenv(env_var.c_str()); v) key.value_ = v;
  // Trailing newlines from `export KEY=$(cat file)` would break the header.
  while (!key.value_.empty() && (key.value_.back() == '\n' || key.value_.back() == '\r' ||
                                 key.value_.back() == ' '))
    key.value_.pop_back();
  return key;
}

std::string ApiKey::describe() const {
  return "$" + env_var_ + (present() ? "" : " (not set)");
}

namespace {
void replace_all(std::string& text, const std::string& needle, const std::string& mark) {
  if (needle.empty()) return;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos)) {
    text.replace(pos, needle.size(), mark);
    pos += mark.size();
  }
}
}  // namespace

std::string ApiKey::redact(std::string text) const {
  if (value_.empty()) return text;
  static const std::string kMark = "[redacted]";
  replace_all(text, value_, kMark);
  // Inside JSON text a key with quotes, backslashes or control characters appears escaped.
  std::string escaped = nlohmann::json(value_).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  escaped = escaped.substr(1, escaped.size() - 2);
  if (escaped != value_) replace_all(text, escaped, kMark);
  return text;
}

}  // namespace tilesmith::llm
