#pragma once
// An LLM provider: sends one prompt that asks for a JSON object following a schema and
// returns the reply text. Implementations (llm/openai_provider.h, llm/anthropic_provider.h)
// own the HTTP details: authentication, retries, structured-output modes and their
// fallbacks, token caps, refusals and the llm_log.jsonl record. Callers parse the text
// (llm/reply_parser.h): nothing a provider returns is trusted.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "llm/capabilities.h"
#include "llm/http_transport.h"
#include "llm/retry_policy.h"

namespace tilesmith::llm {

// How the reply is constrained to JSON, best first. OpenAI-compatible endpoints try
// json_schema, then json_object, then text; Anthropic tries tool_use, then text. In text
// mode the JSON is pulled out of the reply (fences, leading prose).
enum class OutputMode { kJsonSchema, kJsonObject, kToolUse, kText };
const char* output_mode_name(OutputMode mode);  // "json_schema", "json_object", "tool_use", "text"
std::optional<OutputMode> parse_output_mode(std::string_view name);

struct CompletionRequest {
  std::string system;       // instructions
  std::string user;         // the prompt
  std::string schema_name;  // e.g. "tile_configs" (letters, digits, _ and -)
  std::string schema_json;  // JSON Schema of the reply object; property order is kept
  int max_output_tokens = 16384;  // includes reasoning tokens for reasoning models
  std::optional<double> temperature;  // sent only when set
};

struct TokenUsage {
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  std::int64_t reasoning_tokens = 0;  // part of output_tokens, when the server says
};

struct CompletionResult {
  std::string text;  // the JSON text (tool input or message content), unparsed
  // Set when the model refused (OpenAI message.refusal, Anthropic stop_reason "refusal").
  std::optional<std::string> refusal;
  std::string finish_reason;  // as the server said it ("stop", "length", "tool_use", ...)
  // Still cut off at the token cap after the one retry with a larger cap.
  bool truncated = false;
  OutputMode mode = OutputMode::kText;  // the mode that produced this reply
  TokenUsage usage;                     // summed over every exchange of this call
  int http_attempts = 0;                // HTTP requests made, retries and fallbacks included
  double latency_ms = 0;                // wall time of the whole call
};

class LlmProvider {
 public:
  virtual ~LlmProvider() = default;
  virtual std::string provider_name() const = 0;  // "openai", "anthropic"
  virtual const std::string& model() const = 0;
  virtual const std::string& endpoint() const = 0;  // the URL requests go to

  // Sends the request, retrying and falling back as needed. Errors (after retries):
  //   unavailable          connection refused, timeouts, 429/5xx to the end, reply too large
  //   failed_precondition  401/403: the message names the key's variable, never the key
  //   not_found            404: base URL or model name
  //   invalid_argument     other 4xx (the server's message is included)
  //   parse_error          a 2xx reply that is not the provider's JSON shape
  // Thread-safe: may be called from several threads; blocks for the whole exchange.
  virtual Result<CompletionResult> complete(const CompletionRequest& request) = 0;
};

enum class ProviderKind { kOpenAi, kAnthropic };
const char* provider_kind_name(ProviderKind kind);  // "openai", "anthropic"
// Also accepts "openai-compatible", "vllm", "llamacpp", "llama.cpp", "ollama" (all kOpenAi).
Result<ProviderKind> parse_provider_kind(std::string_view name);

struct ProviderOptions {
  ProviderKind kind = ProviderKind::kOpenAi;
  // OpenAI-compatible: ".../v1" (POST {base}/chat/completions); default
  // https://api.openai.com/v1. Anthropic: https://api.anthropic.com (POST {base}/v1/messages;
  // a base already ending in /v1 is accepted).
  std::string base_url;
  std::string model;  // required
  // Where the key is read from; default OPENAI_API_KEY / ANTHROPIC_API_KEY. Unset is
  // allowed (local servers): no key header is sent.
  std::string api_key_env;
  std::vector<HttpHeader> extra_headers;  // sent with every request, never logged
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds request_timeout{600'000};  // per attempt; reasoning models are slow
  RetryPolicy retry;
  Sleeper sleeper;  // empty: sleep for real
  // Start from this mode instead of the best one (e.g. text for a server that accepts
  // response_format but ignores it). Must be valid for the provider.
  std::optional<OutputMode> forced_mode;
  std::filesystem::path log_path;             // llm_log.jsonl; empty: no log
  std::shared_ptr<CapabilityCache> capabilities;  // empty: CapabilityCache::process_default()
  std::shared_ptr<HttpTransport> transport;   // empty: a CurlTransport
  std::size_t max_response_bytes = std::size_t{16} << 20;
};

// Builds the provider the options name; invalid_argument for a missing model or a
// malformed base URL or mode. Reads the API key from the environment now.
Result<std::unique_ptr<LlmProvider>> make_provider(ProviderOptions options);

}  // namespace tilesmith::llm
