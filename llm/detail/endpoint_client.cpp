#include "llm/detail/endpoint_client.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "llm/detail/http_errors.h"
#include "llm/json_extract.h"

namespace tilesmith::llm::detail {
namespace {
constexpr std::size_t kMaxLoggedReply = 256 * 1024;
constexpr std::size_t kMaxParsedReply = 1024 * 1024;
}  // namespace

Result<std::string> normalize_base_url(const std::string& base_url) {
  std::string url = base_url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
    return Status::invalid("LLM base URL '" + base_url + "' must start with http:// or https://");
  if (url.find_first_of(" \t\r\n") != std::string::npos)
    return Status::invalid("LLM base URL '" + base_url + "' contains whitespace");
  return url;
}

EndpointClient::EndpointClient(const ProviderOptions& options, std::string provider_name,
                               std::string url, ApiKey key)
    : options_(options),
      provider_name_(std::move(provider_name)),
      url_(std::move(url)),
      model_(options.model),
      capability_key_(CapabilityCache::key(url_, options.model)),
      key_(std::move(key)),
      capabilities_(options.capabilities ? options.capabilities : CapabilityCache::process_default()),
      sender_(options.transport ? options.transport : std::make_shared<CurlTransport>(), options.retry,
              options.sleeper),
      log_(options.log_path) {}

HttpResult EndpointClient::post(const nlohmann::ordered_json& body, const std::vector<HttpHeader>& headers,
                                OutputMode mode, int call_id, int exchange, int* attempts) {
  HttpRequest request;
  request.url = url_;
  request.headers = headers;
  request.headers.push_back({"Content-Type", "application/json"});
  for (const auto& h : options_.extra_headers) request.headers.push_back(h);
  request.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  request.connect_timeout = options_.connect_timeout;
  request.timeout = options_.request_timeout;
  request.max_response_bytes = options_.max_response_bytes;

  auto observe = [&](const AttemptReport& report) {
    const HttpResult& r = *report.result;
    nlohmann::ordered_json reply;
    nlohmann::ordered_json usage;
    if (r.ok()) {
      // Parsing only to log a pathological reply is not worth seconds: past 1 MiB (a real
      // proposal reply is a few KiB) the excerpt is all the log gets, usage included.
      if (r.response.body.size() <= kMaxParsedReply && json_nesting_depth(r.response.body) <= kMaxReplyDepth)
        reply = nlohmann::ordered_json::parse(r.response.body, nullptr, /*allow_exceptions=*/false);
      else
        reply = nlohmann::ordered_json(nlohmann::ordered_json::value_t::discarded);
      if (!reply.is_discarded() && reply.is_object())
        if (auto u = reply.find("usage"); u != reply.end()) usage = *u;
      // Log lines stay bounded: a huge or non-JSON reply is kept as a text excerpt.
      if (reply.is_discarded() || r.response.body.size() > kMaxLoggedReply)
        reply = excerpt(r.response.body, kMaxLoggedReply);
    }
    if (report.will_retry) {
      std::string why = r.ok() ? "HTTP " + std::to_string(r.response.status) : r.error_message;
      spdlog::warn("{} {}: attempt {} failed ({}); retrying in {} ms", provider_name_, url_,
                   report.attempt, key_.redact(why), report.delay.count());
    }
    if (!log_.enabled()) return;
    using J = nlohmann::ordered_json;
    J record = {
        {"time", utc_timestamp()},
        {"provider", provider_name_},
        {"endpoint", url_},
        {"model", model_},
        {"call", call_id},
        {"exchange", exchange},
        {"attempt", report.attempt},
        {"mode", output_mode_name(mode)},
        {"status", r.ok() ? J(r.response.status) : J(nullptr)},
        {"error", r.ok() ? J(nullptr) : J(std::string(transport_error_name(r.error)) + ": " + r.error_message)},
        {"latency_ms", r.latency_ms},
        {"will_retry", report.will_retry},
        {"retry_delay_ms", report.will_retry ? report.delay.count() : 0},
        {"usage", usage},
        {"request_headers", J::array()},
        {"request", body},
        {"reply", reply}};
    // Header names only: values carry the key and whatever the user put in extra headers.
    for (const auto& h : report.request->headers) record["request_headers"].push_back(h.name);
    Status st = log_.append(record, key_);
    if (!st.ok()) spdlog::warn("{}", key_.redact(st.message()));
  };
  return sender_.send(request, observe, attempts);
}

void add_usage(const nlohmann::json& u, TokenUsage& usage) {
  if (!u.is_object()) return;
  auto count = [&](const char* field) -> std::int64_t {
    auto it = u.find(field);
    return it != u.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
  };
  usage.input_tokens += count("prompt_tokens") + count("input_tokens");
  usage.output_tokens += count("completion_tokens") + count("output_tokens");
  if (auto d = u.find("completion_tokens_details"); d != u.end() && d->is_object()) {
    auto r = d->find("reasoning_tokens");
    if (r != d->end() && r->is_number_integer()) usage.reasoning_tokens += r->get<std::int64_t>();
  }
}

std::string string_field(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

int larger_token_cap(int cap) {
  // Double, up to 128k: beyond that no current model goes, and the server would say 400.
  return static_cast<int>(std::max<std::int64_t>(cap, std::min<std::int64_t>(std::int64_t{cap} * 2, 131072)));
}

}  // namespace tilesmith::llm::detail
