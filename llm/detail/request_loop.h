#pragma once
// The request loop both providers share: build a body, POST it, adapt to a 400/422 the
// server explains (another output mode, a renamed or dropped parameter, remembered per
// endpoint and model), turn other non-2xx answers into a Status, check the reply's JSON
// depth, retry once with a larger token cap after a cut-off reply (keeping the cut-off
// reply in case the larger cap is refused), and sum attempts, usage and latency.
// What differs between providers sits behind ProviderDialect. Private to the llm module.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "llm/detail/endpoint_client.h"
#include "llm/detail/http_errors.h"
#include "llm/provider.h"

namespace tilesmith::llm::detail {

// One exchange's request body and the parameters in it a server may reject by name.
struct ExchangeBody {
  nlohmann::ordered_json body;
  std::vector<std::string> rejectable;  // e.g. "max_completion_tokens", "temperature"
};

// What the provider read from a 2xx reply.
struct ReplyReading {
  std::string finish_reason;             // as the server said it
  bool cut_off = false;                  // stopped at the token cap
  std::optional<std::string> refusal;    // set when the model refused
  std::string text;                      // the JSON text (tool input or message content)
};

// How a provider answered a 400/422.
enum class BadRequest {
  kNotMine,  // not something it can adapt to: the generic non-2xx failure
  kAdapted,  // it changed the mode or the capabilities: remember them and send again
  kGiveUp,   // it changed the capabilities but cannot go on: remember them and fail
};

// The provider-specific parts. Implementations are stateless (const) and thread-safe.
class ProviderDialect {
 public:
  virtual ~ProviderDialect() = default;
  // The bound on exchanges of one call (fallbacks and the length retry).
  virtual int max_exchanges() const = 0;
  // The mode to start from, given the options and what was learned before.
  virtual OutputMode first_mode(const ProviderOptions& options, const EndpointCapabilities& caps) const = 0;
  // Authentication and version headers.
  virtual std::vector<HttpHeader> headers(const ApiKey& key) const = 0;
  virtual ExchangeBody body(const CompletionRequest& req, const nlohmann::ordered_json& schema,
                            const std::string& model, OutputMode mode, int cap,
                            const EndpointCapabilities& caps) const = 0;
  // A 400/422 whose error body is `err`, after sending `sent` in `mode`; may change
  // `mode` and `caps`. `client` is for the log line.
  virtual BadRequest on_bad_request(const ApiError& err, const ExchangeBody& sent, bool forced_mode,
                                    OutputMode& mode, EndpointCapabilities& caps,
                                    const EndpointClient& client) const = 0;
  // Reads a 2xx reply parsed as `reply` (any JSON value; `raw` is the body text, for
  // messages); parse_error when it is not the provider's shape.
  virtual Result<ReplyReading> read_reply(const nlohmann::json& reply, const std::string& raw, int status,
                                          const CompletionRequest& req, const EndpointClient& client) const = 0;
};

// LlmProvider::complete for `dialect` over `client`.
Result<CompletionResult> run_request_loop(EndpointClient& client, const ProviderDialect& dialect,
                                          const CompletionRequest& req);

}  // namespace tilesmith::llm::detail
