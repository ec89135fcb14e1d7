#pragma once
// Finding the JSON in what a model wrote. Structured-output modes give bare JSON, but in
// text mode (and from servers that ignore response_format) models wrap it: leading prose,
// ```json fences, <think>...</think> reasoning, trailing remarks.

#include <cstddef>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"

namespace tilesmith::llm {

struct ExtractLimits {
  int max_depth = 32;               // deeper nesting is rejected before parsing
  std::size_t max_bytes = 4 << 20;  // longer text is rejected
  int max_start_positions = 64;     // '{' / '[' positions tried after prose
};

// The reply's JSON value, tried in this order: the whole text (after dropping
// <think>...</think>), each fenced code block, then balanced {...} / [...] spans from
// successive opening brackets. Among the values found, the first object with a
// "candidates" member wins; else, for a reply cut off inside the candidates array (a
// token cap), the complete candidate objects before the cut; else the first array, else
// the first object.
// parse_error saying why when there is none, the text is too long or nested too deeply.
// Never throws.
Result<nlohmann::json> extract_json(std::string_view text, const ExtractLimits& limits = {});

// The deepest {} / [] nesting outside JSON strings. nlohmann parses iteratively but
// copies, compares and dumps recursively, so untrusted text nested thousands deep is
// refused before it becomes a json value.
int json_nesting_depth(std::string_view text);

// Replies from servers are refused beyond this depth (real ones nest less than 10 deep).
inline constexpr int kMaxReplyDepth = 64;

}  // namespace tilesmith::llm
