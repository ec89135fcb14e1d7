#include "llm/provider.h"

#include "llm/anthropic_provider.h"
#include "llm/openai_provider.h"

namespace tilesmith::llm {

const char* output_mode_name(OutputMode mode) {
  switch (mode) {
    case OutputMode::kJsonSchema: return "json_schema";
    case OutputMode::kJsonObject: return "json_object";
    case OutputMode::kToolUse: return "tool_use";
    case OutputMode::kText: return "text";
  }
  return "?";
}

std::optional<OutputMode> parse_output_mode(std::string_view name) {
  for (OutputMode m : {OutputMode::kJsonSchema, OutputMode::kJsonObject, OutputMode::kToolUse,
                       OutputMode::kText})
    if (name == output_mode_name(m)) return m;
  return std::nullopt;
}

const char* provider_kind_name(ProviderKind kind) {
  return kind == ProviderKind::kAnthropic ? "anthropic" : "openai";
}

Result<ProviderKind> parse_provider_kind(std::string_view name) {
  if (name == "anthropic") return ProviderKind::kAnthropic;
  for (std::string_view alias : {"openai", "openai-compatible", "vllm", "llamacpp", "llama.cpp", "ollama"})
    if (name == alias) return ProviderKind::kOpenAi;
  return Status::invalid("unknown LLM provider '" + std::string(name) +
                         "' (expected openai, anthropic, or an OpenAI-compatible server: vllm, "
                         "llama.cpp, ollama)");
}

Result<std::unique_ptr<LlmProvider>> make_provider(ProviderOptions options) {
  if (options.kind == ProviderKind::kAnthropic) {
    TS_ASSIGN_OR_RETURN(auto p, AnthropicProvider::create(std::move(options)));
    return std::unique_ptr<LlmProvider>(std::move(p));
  }
  TS_ASSIGN_OR_RETURN(auto p, OpenAiProvider::create(std::move(options)));
  return std::unique_ptr<LlmProvider>(std::move(p));
}

}  // namespace tilesmith::llm
