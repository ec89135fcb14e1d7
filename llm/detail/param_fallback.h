#pragma once
// Recognising the 400/422 replies that mean "this server or model does not accept that
// part of the request", so the provider can fall back instead of failing. Private to
// the llm module.

#include <optional>
#include <string>
#include <vector>

#include "llm/detail/http_errors.h"

namespace tilesmith::llm::detail {

// The error is about structured output (response_format, json_schema, json_object,
// guided decoding): the server cannot do the mode we asked for.
bool rejects_output_format(const ApiError& error);

// The error is about tools or tool_choice (Anthropic-compatible servers without tool use).
bool rejects_tools(const ApiError& error);

// Which of the `sent` request fields the error says is unsupported or unknown, if any.
// The error must say so ("unsupported", "not supported", "unknown", "extra", ... in the
// message, or an unsupported_* / unknown_* code); the field is the error's `param` when
// it names one of `sent`, else the first of `sent` the message mentions as a whole word.
std::optional<std::string> rejected_parameter(const ApiError& error, const std::vector<std::string>& sent);

}  // namespace tilesmith::llm::detail
