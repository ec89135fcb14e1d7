#pragma once
// Reading error replies of LLM servers and turning a failed exchange into a Status whose
// message says what to fix. Private to the llm module.

#include <string>
#include <string_view>

#include "base/status.h"
#include "llm/api_key.h"
#include "llm/http_transport.h"

namespace tilesmith::llm::detail {

// The fields of an error body, from whichever shape the server uses: OpenAI / vLLM /
// llama.cpp / Ollama {"error": {"message", "type", "param", "code"}}, Anthropic
// {"type": "error", "error": {"type", "message"}}, {"error": "text"}, FastAPI
// {"detail": ...}, {"message": ...}. When none fits, message is an excerpt of the body.
struct ApiError {
  std::string message;
  std::string type;
  std::string param;
  std::string code;
};
ApiError parse_api_error(std::string_view body);

// At most `max_chars` bytes of `text` (cut at a UTF-8 boundary), "..." added when cut.
std::string excerpt(std::string_view text, std::size_t max_chars);

// The Status for an exchange that did not produce a 2xx answer: a transport error or the
// final non-2xx status after `attempts` tries. The message names the URL and, for 401/403,
// the key's variable; it is redacted with `key`.
Status exchange_failure(const HttpResult& result, int attempts, const std::string& url,
                        const std::string& model, const ApiKey& key);

}  // namespace tilesmith::llm::detail
