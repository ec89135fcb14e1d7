#include "llm/openai_provider.h"

#include <spdlog/spdlog.h>

#include "llm/detail/http_errors.h"
#include "llm/detail/param_fallback.h"
#include "llm/detail/request_loop.h"
#include "llm/json_extract.h"

namespace tilesmith::llm {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kDefaultBase = "https://api.openai.com/v1";
constexpr const char* kDefaultKeyEnv = "OPENAI_API_KEY";
// Mode fallbacks (2), a renamed token field, a dropped temperature and the length retry
// need at most 5 exchanges; the bound only guards against a server that keeps moving.
constexpr int kMaxExchanges = 8;

OutputMode next_mode(OutputMode mode) {
  return mode == OutputMode::kJsonSchema ? OutputMode::kJsonObject : OutputMode::kText;
}

std::string system_text(const CompletionRequest& req, OutputMode mode) {
  if (mode == OutputMode::kJsonSchema) return req.system;
  // Without a schema-constrained decoder the model only has the words to go by.
  return req.system + "\n\nReply with one JSON object (no other text) that follows this JSON Schema:\n" +
         req.schema_json;
}

// The message text: a string, or an array of {type: text, text} parts (some servers).
std::string content_text(const nlohmann::json& message) {
  auto it = message.find("content");
  if (it == message.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  std::string out;
  if (it->is_array())
    for (const auto& part : *it)
      out += detail::string_field(part, "text");
  return out;
}

class OpenAiDialect final : public detail::ProviderDialect {
 public:
  int max_exchanges() const override { return kMaxExchanges; }

  OutputMode first_mode(const ProviderOptions& options, const EndpointCapabilities& caps) const override {
    if (options.forced_mode) return *options.forced_mode;
    if (auto learned = parse_output_mode(caps.output_mode); learned && *learned != OutputMode::kToolUse)
      return *learned;
    return OutputMode::kJsonSchema;
  }

  std::vector<HttpHeader> headers(const ApiKey& key) const override {
    std::vector<HttpHeader> headers;
    if (key.present()) headers.push_back({"Authorization", "Bearer " + key.value()});
    return headers;
  }

  detail::ExchangeBody body(const CompletionRequest& req, const Json& schema, const std::string& model,
                            OutputMode mode, int cap, const EndpointCapabilities& caps) const override {
    const std::string tokens_field = caps.max_tokens_field.empty() ? "max_completion_tokens" : caps.max_tokens_field;
    const bool send_temperature = req.temperature && !caps.dropped_parameters.count("temperature");
    detail::ExchangeBody out;
    Json& body = out.body;
    body = {{"model", model},
            {"messages", Json::array({Json{{"role", "system"}, {"content", system_text(req, mode)}},
                                      Json{{"role", "user"}, {"content", req.user}}})}};
    body[tokens_field] = cap;
    out.rejectable.push_back(tokens_field);
    if (send_temperature) {
      body["temperature"] = *req.temperature;
      out.rejectable.push_back("temperature");
    }
    if (mode == OutputMode::kJsonSchema) {
      body["response_format"] = {
          {"type", "json_schema"},
          {"json_schema", {{"name", req.schema_name}, {"strict", true}, {"schema", schema}}}};
    } else if (mode == OutputMode::kJsonObject) {
      body["response_format"] = {{"type", "json_object"}};
    }
    return out;
  }

  detail::BadRequest on_bad_request(const detail::ApiError& err, const detail::ExchangeBody& sent, bool forced_mode,
                                    OutputMode& mode, EndpointCapabilities& caps,
                                    const detail::EndpointClient& client) const override {
    if (mode != OutputMode::kText && !forced_mode && detail::rejects_output_format(err)) {
      OutputMode next = next_mode(mode);
      spdlog::warn("{} ({}) rejects response_format {}: {}; falling back to {}", client.url(), client.model(),
                   output_mode_name(mode), client.key().redact(err.message), output_mode_name(next));
      mode = next;
      caps.output_mode = output_mode_name(mode);
      return detail::BadRequest::kAdapted;
    }
    auto param = detail::rejected_parameter(err, sent.rejectable);
    if (!param) return detail::BadRequest::kNotMine;
    spdlog::warn("{} ({}) rejects parameter '{}': {}", client.url(), client.model(), *param,
                 client.key().redact(err.message));
    if (*param == "temperature") {
      caps.dropped_parameters.insert("temperature");
    } else if (*param == "max_completion_tokens") {
      caps.max_tokens_field = "max_tokens";
    } else {
      // max_tokens rejected after falling back to it: the server wants neither name we
      // know. Forget the rename (so a fixed server is not stuck with it) and report.
      caps.max_tokens_field.clear();
      return detail::BadRequest::kGiveUp;
    }
    return detail::BadRequest::kAdapted;
  }

  Result<detail::ReplyReading> read_reply(const nlohmann::json& reply, const std::string& raw, int status,
                                          const CompletionRequest&,
                                          const detail::EndpointClient& client) const override {
    if (!reply.is_object())
      return Status::parse_error(client.key().redact("POST " + client.url() + " answered " + std::to_string(status) +
                                                     " with a body that is not a JSON object: " +
                                                     detail::excerpt(raw, 300)));
    auto choices = reply.find("choices");
    if (choices == reply.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object() ||
        !(*choices)[0].contains("message") || !(*choices)[0]["message"].is_object()) {
      std::string why = detail::parse_api_error(raw).message;
      return Status::parse_error(
          client.key().redact("POST " + client.url() + " answered without choices[0].message: " + why));
    }
    const nlohmann::json& choice = (*choices)[0];
    const nlohmann::json& message = choice["message"];
    detail::ReplyReading out;
    out.finish_reason = detail::string_field(choice, "finish_reason");
    out.cut_off = out.finish_reason == "length";
    out.text = content_text(message);
    if (auto ref = message.find("refusal"); ref != message.end() && !ref->is_null())
      out.refusal = ref->is_string() ? ref->get<std::string>()
                                     : ref->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return out;
  }
};

}  // namespace

Result<std::unique_ptr<OpenAiProvider>> OpenAiProvider::create(ProviderOptions options) {
  if (options.model.empty()) return Status::invalid("an LLM model name is required");
  if (options.forced_mode == OutputMode::kToolUse)
    return Status::invalid("output mode tool_use is for the anthropic provider");
  TS_ASSIGN_OR_RETURN(std::string base,
                      detail::normalize_base_url(options.base_url.empty() ? kDefaultBase : options.base_url));
  if (options.api_key_env.empty()) options.api_key_env = kDefaultKeyEnv;
  ApiKey key = ApiKey::from_env(options.api_key_env);
  auto client = std::make_unique<detail::EndpointClient>(options, "openai", base + "/chat/completions",
                                                         std::move(key));
  return std::unique_ptr<OpenAiProvider>(new OpenAiProvider(std::move(client)));
}

Result<CompletionResult> OpenAiProvider::complete(const CompletionRequest& req) {
  static const OpenAiDialect dialect;
  return detail::run_request_loop(*client_, dialect, req);
}

}  // namespace tilesmith::llm
