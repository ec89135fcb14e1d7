#pragma once
// Anthropic Messages API: POST {base}/v1/messages with x-api-key and
// anthropic-version: 2023-06-01. Structured output through forced tool use: one tool
// whose input_schema is the reply schema and tool_choice {type: tool, name}; the reply
// is the tool_use block's input. A server that rejects tools (a 400 about tools or
// tool_choice) falls back to text with the schema in the system prompt, remembered per
// (endpoint, model). stop_reason "max_tokens" gets one retry with a larger cap;
// stop_reason "refusal" is reported as a refusal. Same retries as OpenAI (529
// "overloaded" is a 5xx and is retried).
//
// Thread-safe.

#include <memory>
#include <string>

#include "llm/detail/endpoint_client.h"
#include "llm/provider.h"

namespace tilesmith::llm {

inline constexpr const char* kAnthropicVersion = "2023-06-01";

class AnthropicProvider final : public LlmProvider {
 public:
  static Result<std::unique_ptr<AnthropicProvider>> create(ProviderOptions options);

  std::string provider_name() const override { return "anthropic"; }
  const std::string& model() const override { return client_->model(); }
  const std::string& endpoint() const override { return client_->url(); }
  Result<CompletionResult> complete(const CompletionRequest& request) override;

 private:
  explicit AnthropicProvider(std::unique_ptr<detail::EndpointClient> client)
      : client_(std::move(client)) {}
  std::unique_ptr<detail::EndpointClient> client_;
};

}  // namespace tilesmith::llm
