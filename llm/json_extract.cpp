#include "llm/json_extract.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tilesmith::llm {

using nlohmann::json;

int json_nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') deepest = std::max(deepest, ++depth);
    else if ((c == '}' || c == ']') && depth > 0) --depth;
  }
  return deepest;
}

namespace {

std::optional<json> try_parse(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// The end (one past) of the balanced value that starts at `start`, or npos.
size_t balanced_end(std::string_view text, size_t start) {
  std::vector<char> stack;
  bool in_string = false, escaped = false;
  for (size_t i = start; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      stack.push_back(c == '{' ? '}' : ']');
    } else if (c == '}' || c == ']') {
      if (stack.empty() || stack.back() != c) return std::string_view::npos;
      stack.pop_back();
      if (stack.empty()) return i + 1;
    }
  }
  return std::string_view::npos;
}

std::string strip_think(std::string_view text) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find("<think>", pos);
    if (open == std::string_view::npos) break;
    size_t close = text.find("</think>", open);
    out.append(text.substr(pos, open - pos));
    if (close == std::string_view::npos) {  // unterminated: the rest is reasoning
      pos = text.size();
      break;
    }
    pos = close + 8;
  }
  out.append(text.substr(std::min(pos, text.size())));
  return out;
}

// A reply cut off inside the candidates array (a token cap): the complete candidate
// objects before the cut, as {"candidates": [...]}, or nullopt when there are none.
std::optional<json> salvage_candidates(std::string_view text) {
  size_t key = text.find("\"candidates\"");
  if (key == std::string_view::npos) return std::nullopt;
  size_t pos = key + 12;
  while (pos < text.size() && (std::isspace(static_cast<unsigned char>(text[pos])) || text[pos] == ':')) ++pos;
  if (pos >= text.size() || text[pos] != '[') return std::nullopt;
  ++pos;
  json items = json::array();
  while (true) {
    while (pos < text.size() && (std::isspace(static_cast<unsigned char>(text[pos])) || text[pos] == ',')) ++pos;
    if (pos >= text.size() || text[pos] != '{') break;
    size_t end = balanced_end(text, pos);
    if (end == std::string_view::npos) break;
    auto item = try_parse(text.substr(pos, end - pos));
    if (!item) break;
    items.push_back(std::move(*item));
    pos = end;
  }
  if (items.empty()) return std::nullopt;
  return json{{"candidates", std::move(items)}};
}

bool preferred(const json& j) { return j.is_object() && j.contains("candidates"); }

}  // namespace

Result<json> extract_json(std::string_view raw, const ExtractLimits& limits) {
  try {
    if (raw.size() > limits.max_bytes)
      return Status::parse_error("reply is " + std::to_string(raw.size()) + " bytes, more than the " +
                                 std::to_string(limits.max_bytes) + " accepted");
    std::string text = strip_think(raw);
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
      return Status::parse_error("reply is empty");
    if (int depth = json_nesting_depth(text); depth > limits.max_depth)
      return Status::parse_error("reply nests " + std::to_string(depth) + " levels deep (at most " +
                                 std::to_string(limits.max_depth) + " accepted)");

    if (auto whole = try_parse(text)) return *whole;

    std::vector<json> found;
    // Fenced blocks: ```json ... ``` or ``` ... ```.
    for (size_t pos = text.find("```"); pos != std::string::npos;) {
      size_t body = text.find('\n', pos + 3);
      if (body == std::string::npos) break;
      size_t close = text.find("```", body + 1);
      if (close == std::string::npos) break;
      if (auto j = try_parse(std::string_view(text).substr(body + 1, close - body - 1))) {
        if (preferred(*j)) return *j;
        found.push_back(std::move(*j));
      }
      pos = text.find("```", close + 3);
    }
    // Balanced spans after prose.
    int tries = 0;
    for (size_t pos = text.find_first_of("{["); pos != std::string::npos && tries < limits.max_start_positions;
         pos = text.find_first_of("{[", pos + 1), ++tries) {
      size_t end = balanced_end(text, pos);
      if (end == std::string_view::npos) continue;
      if (auto j = try_parse(std::string_view(text).substr(pos, end - pos))) {
        if (preferred(*j)) return *j;
        found.push_back(std::move(*j));
        pos = end - 1;  // a value's insides are not candidates of their own
      }
    }
    if (auto salvaged = salvage_candidates(text)) return *salvaged;
    for (const auto& j : found)
      if (j.is_array()) return j;
    for (const auto& j : found)
      if (j.is_object()) return j;
    return Status::parse_error("no JSON object or array found in the reply");
  } catch (const std::exception& e) {
    // nlohmann's non-throwing parse covers syntax; this is for allocation failures.
    return Status::parse_error(std::string("reply could not be read: ") + e.what());
  }
}

}  // namespace tilesmith::llm
