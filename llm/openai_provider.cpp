#include "llm/openai_provider.h"

#include <spdlog/spdlog.h>

#include "llm/detail/http_errors.h"
#include "llm/detail/param_fallback.h"
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
  auto start = std::chrono::steady_clock::now();
  detail::EndpointClient& client = *client_;
  const ProviderOptions& options = client.options();
  EndpointCapabilities caps = client.capabilities().get(client.capability_key());

  OutputMode mode = OutputMode::kJsonSchema;
  if (options.forced_mode) {
    mode = *options.forced_mode;
  } else if (auto learned = parse_output_mode(caps.output_mode); learned && *learned != OutputMode::kToolUse) {
    mode = *learned;
  }

  std::vector<HttpHeader> headers;
  if (client.key().present()) headers.push_back({"Authorization", "Bearer " + client.key().value()});

  Json schema = Json::parse(req.schema_json, nullptr, /*allow_exceptions=*/false);
  if (!schema.is_object()) return Status::invalid("the reply schema is not a JSON object");

  const int call = client.next_call_id();
  int cap = req.max_output_tokens;
  bool length_retried = false;
  CompletionResult out;
  std::optional<CompletionResult> cut_off;  // the reply that hit the cap, kept for a failed retry
  bool done = false;
  auto finish = [&](CompletionResult result) -> Result<CompletionResult> {
    result.http_attempts = out.http_attempts;
    result.usage = out.usage;
    result.latency_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return result;
  };
  auto remember = [&] {
    Status st = client.capabilities().put(client.capability_key(), caps);
    if (!st.ok()) spdlog::warn("{}", st.message());
  };

  for (int exchange = 1; exchange <= kMaxExchanges; ++exchange) {
    const std::string tokens_field = caps.max_tokens_field.empty() ? "max_completion_tokens" : caps.max_tokens_field;
    const bool send_temperature = req.temperature && !caps.dropped_parameters.count("temperature");
    Json body = {{"model", client.model()},
                 {"messages", Json::array({Json{{"role", "system"}, {"content", system_text(req, mode)}},
                                           Json{{"role", "user"}, {"content", req.user}}})}};
    body[tokens_field] = cap;
    if (send_temperature) body["temperature"] = *req.temperature;
    if (mode == OutputMode::kJsonSchema) {
      body["response_format"] = {
          {"type", "json_schema"},
          {"json_schema", {{"name", req.schema_name}, {"strict", true}, {"schema", schema}}}};
    } else if (mode == OutputMode::kJsonObject) {
      body["response_format"] = {{"type", "json_object"}};
    }

    int attempts = 0;
    HttpResult r = client.post(body, headers, mode, call, exchange, &attempts);
    out.http_attempts += attempts;
    const int status = r.ok() ? r.response.status : 0;

    if (r.ok() && (status == 400 || status == 422)) {
      detail::ApiError err = detail::parse_api_error(r.response.body);
      if (mode != OutputMode::kText && !options.forced_mode && detail::rejects_output_format(err)) {
        OutputMode next = next_mode(mode);
        spdlog::warn("{} ({}) rejects response_format {}: {}; falling back to {}", client.url(),
                     client.model(), output_mode_name(mode), client.key().redact(err.message),
                     output_mode_name(next));
        mode = next;
        caps.output_mode = output_mode_name(mode);
        remember();
        continue;
      }
      std::vector<std::string> sent = {tokens_field};
      if (send_temperature) sent.push_back("temperature");
      if (auto param = detail::rejected_parameter(err, sent)) {
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
          remember();
          return detail::exchange_failure(r, attempts, client.url(), client.model(), client.key());
        }
        remember();
        continue;
      }
    }
    if (!r.ok() || status < 200 || status >= 300) {
      // The larger cap of a length retry can be more than the model allows: then the cut-off
      // reply we already have is better than an error.
      if (cut_off && r.ok() && status >= 400 && status < 500 && status != 429) return finish(std::move(*cut_off));
      return detail::exchange_failure(r, attempts, client.url(), client.model(), client.key());
    }

    if (json_nesting_depth(r.response.body) > kMaxReplyDepth)
      return Status::parse_error("POST " + client.url() + " answered with JSON nested more than " +
                                 std::to_string(kMaxReplyDepth) + " levels deep");
    nlohmann::json reply = nlohmann::json::parse(r.response.body, nullptr, /*allow_exceptions=*/false);
    if (!reply.is_object())
      return Status::parse_error(client.key().redact(
          "POST " + client.url() + " answered " + std::to_string(status) +
          " with a body that is not a JSON object: " + detail::excerpt(r.response.body, 300)));
    if (auto u = reply.find("usage"); u != reply.end()) detail::add_usage(*u, out.usage);
    auto choices = reply.find("choices");
    if (choices == reply.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object() ||
        !(*choices)[0].contains("message") || !(*choices)[0]["message"].is_object()) {
      std::string why = detail::parse_api_error(r.response.body).message;
      return Status::parse_error(client.key().redact("POST " + client.url() +
                                                     " answered without choices[0].message: " + why));
    }
    const nlohmann::json& choice = (*choices)[0];
    const nlohmann::json& message = choice["message"];
    out.finish_reason = detail::string_field(choice, "finish_reason");
    out.mode = mode;
    if (auto ref = message.find("refusal"); ref != message.end() && !ref->is_null()) {
      out.refusal = ref->is_string() ? ref->get<std::string>()
                                    : ref->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      out.text = content_text(message);
      done = true;
      break;
    }
    if (out.finish_reason == "length" && !length_retried) {
      int larger = detail::larger_token_cap(cap);
      if (larger > cap) {
        cut_off = out;
        cut_off->truncated = true;
        cut_off->text = content_text(message);
        spdlog::warn("{} ({}): reply cut off at {} tokens; retrying once with {}", client.url(),
                     client.model(), cap, larger);
        length_retried = true;
        cap = larger;
        continue;
      }
    }
    out.truncated = out.finish_reason == "length";
    out.text = content_text(message);
    done = true;
    break;
  }
  if (!done)
    return Status::unavailable("POST " + client.url() + ": no usable reply after " +
                               std::to_string(kMaxExchanges) + " exchanges adapting to the server");
  return finish(out);
}

}  // namespace tilesmith::llm
