#include "llm/detail/param_fallback.h"

#include <algorithm>
#include <cctype>

namespace tilesmith::llm::detail {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains_any(const std::string& haystack, std::initializer_list<const char*> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](const char* n) { return haystack.find(n) != std::string::npos; });
}

}  // namespace

bool rejects_output_format(const ApiError& error) {
  std::string text = lower(error.message + " " + error.param + " " + error.code);
  return contains_any(text, {"response_format", "response format", "json_schema", "json schema",
                             "json_object", "structured output", "guided_json", "guided decoding"});
}

bool rejects_tools(const ApiError& error) {
  std::string text = lower(error.message + " " + error.param + " " + error.code);
  return contains_any(text, {"tool_choice", "tools", "tool use", "tool_use", "input_schema"});
}

std::optional<std::string> rejected_parameter(const ApiError& error, const std::vector<std::string>& sent) {
  std::string message = lower(error.message);
  std::string code = lower(error.code);
  // "max_completion_tokens is too large" also names the parameter (even in `param`), but
  // dropping or renaming it would not help: only "this is not supported" counts.
  if (!contains_any(message, {"unsupported", "not supported", "does not support", "unknown",
                              "unrecognized", "extra", "not permitted", "not allowed"}) &&
      code.find("unsupported") == std::string::npos && code.find("unknown") == std::string::npos)
    return std::nullopt;
  std::string param = lower(error.param);
  for (const auto& name : sent)
    if (!param.empty() && param == name) return name;
  for (const auto& name : sent) {
    // Whole-word match: "max_tokens" must not match inside "max_completion_tokens".
    for (size_t pos = message.find(name); pos != std::string::npos; pos = message.find(name, pos + 1)) {
      auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
      bool left = pos == 0 || !word(message[pos - 1]);
      bool right = pos + name.size() >= message.size() || !word(message[pos + name.size()]);
      if (left && right) return name;
    }
  }
  return std::nullopt;
}

}  // namespace tilesmith::llm::detail
