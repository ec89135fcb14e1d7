#pragma once
// OpenAI-compatible chat completions: OpenAI itself, vLLM, SGLang, llama.cpp's server,
// Ollama, LM Studio and proxies such as LiteLLM. POST {base}/chat/completions with
// "Authorization: Bearer $KEY" (when the key's variable is set).
//
// Structured output, best first: response_format json_schema (strict), then json_object,
// then plain text with the JSON pulled out of the reply. A 400/422 that blames
// response_format moves to the next mode; the mode that worked is remembered per
// (endpoint, model) in the CapabilityCache. The token cap is sent as
// max_completion_tokens (reasoning models reject max_tokens); a server that rejects it
// gets max_tokens instead. temperature is sent only when set and dropped (and
// remembered) when the model rejects it. finish_reason "length" gets one retry with a
// larger cap; message.refusal is reported as a refusal.
//
// Thread-safe.

#include <memory>
#include <string>

#include "llm/detail/endpoint_client.h"
#include "llm/provider.h"

namespace tilesmith::llm {

class OpenAiProvider final : public LlmProvider {
 public:
  static Result<std::unique_ptr<OpenAiProvider>> create(ProviderOptions options);

  std::string provider_name() const override { return "openai"; }
  const std::string& model() const override { return client_->model(); }
  const std::string& endpoint() const override { return client_->url(); }
  Result<CompletionResult> complete(const CompletionRequest& request) override;

 private:
  explicit OpenAiProvider(std::unique_ptr<detail::EndpointClient> client)
      : client_(std::move(client)) {}
  std::unique_ptr<detail::EndpointClient> client_;
};

}  // namespace tilesmith::llm
