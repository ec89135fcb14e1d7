#include "llm/anthropic_provider.h"

#include <spdlog/spdlog.h>

#include "llm/detail/http_errors.h"
#include "llm/detail/param_fallback.h"
#include "llm/detail/request_loop.h"
#include "llm/json_extract.h"

namespace tilesmith::llm {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kDefaultBase = "https://api.anthropic.com";
constexpr const char* kDefaultKeyEnv = "ANTHROPIC_API_KEY";
constexpr int kMaxExchanges = 6;

std::string text_blocks(const nlohmann::json& content) {
  std::string out;
  for (const auto& block : content)
    if (detail::string_field(block, "type") == "text") out += detail::string_field(block, "text");
  return out;
}

// The tool's input is the structured reply; a model that answered in prose instead (text
// mode, or a server that ignored tool_choice) leaves its text to be parsed.
std::string reply_text(const nlohmann::json& content, const std::string& tool_name) {
  const nlohmann::json* tool_input = nullptr;
  for (const auto& block : content)
    if (detail::string_field(block, "type") == "tool_use" && block.contains("input")) {
      tool_input = &block["input"];
      if (detail::string_field(block, "name") == tool_name) break;
    }
  return tool_input ? tool_input->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                    : text_blocks(content);
}

class AnthropicDialect final : public detail::ProviderDialect {
 public:
  int max_exchanges() const override { return kMaxExchanges; }

  OutputMode first_mode(const ProviderOptions& options, const EndpointCapabilities& caps) const override {
    if (options.forced_mode) return *options.forced_mode;
    if (caps.output_mode == output_mode_name(OutputMode::kText)) return OutputMode::kText;
    return OutputMode::kToolUse;
  }

  std::vector<HttpHeader> headers(const ApiKey& key) const override {
    std::vector<HttpHeader> headers = {{"anthropic-version", kAnthropicVersion}};
    if (key.present()) headers.push_back({"x-api-key", key.value()});
    return headers;
  }

  detail::ExchangeBody body(const CompletionRequest& req, const Json& schema, const std::string& model,
                            OutputMode mode, int cap, const EndpointCapabilities& caps) const override {
    const bool send_temperature = req.temperature && !caps.dropped_parameters.count("temperature");
    std::string system = req.system;
    if (mode == OutputMode::kText)
      system += "\n\nReply with one JSON object (no other text) that follows this JSON Schema:\n" + req.schema_json;
    detail::ExchangeBody out;
    Json& body = out.body;
    body = {{"model", model},
            {"max_tokens", cap},
            {"system", system},
            {"messages", Json::array({Json{{"role", "user"}, {"content", req.user}}})}};
    if (send_temperature) {
      body["temperature"] = *req.temperature;
      out.rejectable.push_back("temperature");
    }
    if (mode == OutputMode::kToolUse) {
      body["tools"] = Json::array({Json{{"name", req.schema_name},
                                        {"description", "Submit the proposed configurations."},
                                        {"input_schema", schema}}});
      body["tool_choice"] = {{"type", "tool"}, {"name", req.schema_name}};
    }
    return out;
  }

  detail::BadRequest on_bad_request(const detail::ApiError& err, const detail::ExchangeBody& sent, bool forced_mode,
                                    OutputMode& mode, EndpointCapabilities& caps,
                                    const detail::EndpointClient& client) const override {
    if (auto param = detail::rejected_parameter(err, sent.rejectable)) {
      spdlog::warn("{} ({}) rejects parameter '{}': {}", client.url(), client.model(), *param,
                   client.key().redact(err.message));
      caps.dropped_parameters.insert(*param);
      return detail::BadRequest::kAdapted;
    }
    if (mode == OutputMode::kToolUse && !forced_mode && detail::rejects_tools(err)) {
      spdlog::warn("{} ({}) rejects tool use: {}; falling back to text", client.url(), client.model(),
                   client.key().redact(err.message));
      mode = OutputMode::kText;
      caps.output_mode = output_mode_name(mode);
      return detail::BadRequest::kAdapted;
    }
    return detail::BadRequest::kNotMine;
  }

  Result<detail::ReplyReading> read_reply(const nlohmann::json& reply, const std::string& raw, int status,
                                          const CompletionRequest& req,
                                          const detail::EndpointClient& client) const override {
    if (!reply.is_object() || !reply.contains("content") || !reply["content"].is_array())
      return Status::parse_error(client.key().redact("POST " + client.url() + " answered " + std::to_string(status) +
                                                     " without a content array: " + detail::excerpt(raw, 300)));
    const nlohmann::json& content = reply["content"];
    detail::ReplyReading out;
    out.finish_reason = detail::string_field(reply, "stop_reason");
    if (out.finish_reason == "refusal") {
      std::string said = text_blocks(content);
      out.refusal = said.empty() ? "stop_reason: refusal" : said;
      return out;
    }
    out.cut_off = out.finish_reason == "max_tokens";
    out.text = reply_text(content, req.schema_name);
    return out;
  }
};

}  // namespace

Result<std::unique_ptr<AnthropicProvider>> AnthropicProvider::create(ProviderOptions options) {
  if (options.model.empty()) return Status::invalid("an LLM model name is required");
  if (options.forced_mode && *options.forced_mode != OutputMode::kToolUse &&
      *options.forced_mode != OutputMode::kText)
    return Status::invalid(std::string("output mode ") + output_mode_name(*options.forced_mode) +
                           " is not available with the anthropic provider (tool_use or text)");
  TS_ASSIGN_OR_RETURN(std::string base,
                      detail::normalize_base_url(options.base_url.empty() ? kDefaultBase : options.base_url));
  // Accept both "https://api.anthropic.com" and ".../v1".
  std::string url = base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0 ? base + "/messages"
                                                                                     : base + "/v1/messages";
  if (options.api_key_env.empty()) options.api_key_env = kDefaultKeyEnv;
  ApiKey key = ApiKey::from_env(options.api_key_env);
  auto client = std::make_unique<detail::EndpointClient>(options, "anthropic", url, std::move(key));
  return std::unique_ptr<AnthropicProvider>(new AnthropicProvider(std::move(client)));
}

Result<CompletionResult> AnthropicProvider::complete(const CompletionRequest& req) {
  static const AnthropicDialect dialect;
  return detail::run_request_loop(*client_, dialect, req);
}

}  // namespace tilesmith::llm
