#include "llm/anthropic_provider.h"

#include <spdlog/spdlog.h>

#include "llm/detail/http_errors.h"
#include "llm/detail/param_fallback.h"
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
  auto start = std::chrono::steady_clock::now();
  detail::EndpointClient& client = *client_;
  const ProviderOptions& options = client.options();
  EndpointCapabilities caps = client.capabilities().get(client.capability_key());

  OutputMode mode = OutputMode::kToolUse;
  if (options.forced_mode) {
    mode = *options.forced_mode;
  } else if (caps.output_mode == output_mode_name(OutputMode::kText)) {
    mode = OutputMode::kText;
  }

  std::vector<HttpHeader> headers = {{"anthropic-version", kAnthropicVersion}};
  if (client.key().present()) headers.push_back({"x-api-key", client.key().value()});

  Json schema = Json::parse(req.schema_json, nullptr, /*allow_exceptions=*/false);
  if (!schema.is_object()) return Status::invalid("the reply schema is not a JSON object");

  const int call = client.next_call_id();
  int cap = req.max_output_tokens;
  bool length_retried = false;
  bool done = false;
  CompletionResult out;
  std::optional<CompletionResult> cut_off;  // the reply that hit the cap, kept for a failed retry
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
    const bool send_temperature = req.temperature && !caps.dropped_parameters.count("temperature");
    std::string system = req.system;
    if (mode == OutputMode::kText)
      system += "\n\nReply with one JSON object (no other text) that follows this JSON Schema:\n" + req.schema_json;
    Json body = {{"model", client.model()},
                 {"max_tokens", cap},
                 {"system", system},
                 {"messages", Json::array({Json{{"role", "user"}, {"content", req.user}}})}};
    if (send_temperature) body["temperature"] = *req.temperature;
    if (mode == OutputMode::kToolUse) {
      body["tools"] = Json::array({Json{{"name", req.schema_name},
                                        {"description", "Submit the proposed configurations."},
                                        {"input_schema", schema}}});
      body["tool_choice"] = {{"type", "tool"}, {"name", req.schema_name}};
    }

    int attempts = 0;
    HttpResult r = client.post(body, headers, mode, call, exchange, &attempts);
    out.http_attempts += attempts;
    const int status = r.ok() ? r.response.status : 0;

    if (r.ok() && (status == 400 || status == 422)) {
      detail::ApiError err = detail::parse_api_error(r.response.body);
      std::vector<std::string> sent;
      if (send_temperature) sent.push_back("temperature");
      if (auto param = detail::rejected_parameter(err, sent)) {
        spdlog::warn("{} ({}) rejects parameter '{}': {}", client.url(), client.model(), *param,
                     client.key().redact(err.message));
        caps.dropped_parameters.insert(*param);
        remember();
        continue;
      }
      if (mode == OutputMode::kToolUse && !options.forced_mode && detail::rejects_tools(err)) {
        spdlog::warn("{} ({}) rejects tool use: {}; falling back to text", client.url(), client.model(),
                     client.key().redact(err.message));
        mode = OutputMode::kText;
        caps.output_mode = output_mode_name(mode);
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
    if (!reply.is_object() || !reply.contains("content") || !reply["content"].is_array()) {
      return Status::parse_error(client.key().redact(
          "POST " + client.url() + " answered " + std::to_string(status) +
          " without a content array: " + detail::excerpt(r.response.body, 300)));
    }
    if (auto u = reply.find("usage"); u != reply.end()) detail::add_usage(*u, out.usage);
    const nlohmann::json& content = reply["content"];
    out.finish_reason = detail::string_field(reply, "stop_reason");
    out.mode = mode;
    if (out.finish_reason == "refusal") {
      std::string said = text_blocks(content);
      out.refusal = said.empty() ? "stop_reason: refusal" : said;
      done = true;
      break;
    }
    if (out.finish_reason == "max_tokens" && !length_retried) {
      int larger = detail::larger_token_cap(cap);
      if (larger > cap) {
        cut_off = out;
        cut_off->truncated = true;
        cut_off->text = reply_text(content, req.schema_name);
        spdlog::warn("{} ({}): reply cut off at {} tokens; retrying once with {}", client.url(),
                     client.model(), cap, larger);
        length_retried = true;
        cap = larger;
        continue;
      }
    }
    out.truncated = out.finish_reason == "max_tokens";
    out.text = reply_text(content, req.schema_name);
    done = true;
    break;
  }
  if (!done)
    return Status::unavailable("POST " + client.url() + ": no usable reply after " +
                               std::to_string(kMaxExchanges) + " exchanges adapting to the server");
  return finish(out);
}

}  // namespace tilesmith::llm
