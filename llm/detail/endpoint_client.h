#pragma once
// What both providers share: the URL, the key, the retrying sender, the capability cache
// and the llm_log.jsonl record of every attempt. Private to the llm module.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "llm/api_key.h"
#include "llm/capabilities.h"
#include "llm/llm_log.h"
#include "llm/provider.h"
#include "llm/retry_policy.h"

namespace tilesmith::llm::detail {

// "https://host:port/path" without a trailing slash; invalid_argument unless http(s).
Result<std::string> normalize_base_url(const std::string& base_url);

class EndpointClient {
 public:
  // `url` is the full request URL. Thread-safe.
  EndpointClient(const ProviderOptions& options, std::string provider_name, std::string url,
                 ApiKey key);

  // POSTs `body` as JSON with `headers` (authentication, versions) plus Content-Type and
  // the user's extra headers; retries per the policy; appends one log record per attempt
  // (call and exchange number, mode, body, status, latency, usage, reply).
  HttpResult post(const nlohmann::ordered_json& body, const std::vector<HttpHeader>& headers,
                  OutputMode mode, int call_id, int exchange, int* attempts);

  int next_call_id() { return ++calls_; }
  const std::string& url() const { return url_; }
  const ApiKey& key() const { return key_; }
  const std::string& model() const { return model_; }
  const std::string& capability_key() const { return capability_key_; }
  CapabilityCache& capabilities() { return *capabilities_; }
  const ProviderOptions& options() const { return options_; }

 private:
  ProviderOptions options_;
  std::string provider_name_;
  std::string url_;
  std::string model_;
  std::string capability_key_;
  ApiKey key_;
  std::shared_ptr<CapabilityCache> capabilities_;
  RetryingSender sender_;
  LlmLog log_;
  std::atomic<int> calls_{0};
};

// Adds a usage object's counts (OpenAI or Anthropic field names) to `usage`.
void add_usage(const nlohmann::json& usage_object, TokenUsage& usage);

// obj[key] when obj is an object and that field is a string, else "". Never throws:
// replies are untrusted and nlohmann's value() throws on a type mismatch.
std::string string_field(const nlohmann::json& obj, const char* key);

// A larger token cap for the one retry after a reply was cut off (== cap when it cannot grow).
int larger_token_cap(int cap);

}  // namespace tilesmith::llm::detail
