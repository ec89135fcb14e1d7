#include "llm/detail/request_loop.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "llm/json_extract.h"

namespace tilesmith::llm::detail {

Result<CompletionResult> run_request_loop(EndpointClient& client, const ProviderDialect& dialect,
                                          const CompletionRequest& req) {
  auto start = std::chrono::steady_clock::now();
  const ProviderOptions& options = client.options();
  EndpointCapabilities caps = client.capabilities().get(client.capability_key());
  OutputMode mode = dialect.first_mode(options, caps);
  const std::vector<HttpHeader> headers = dialect.headers(client.key());

  nlohmann::ordered_json schema = nlohmann::ordered_json::parse(req.schema_json, nullptr, /*allow_exceptions=*/false);
  if (!schema.is_object()) return Status::invalid("the reply schema is not a JSON object");

  const int call = client.next_call_id();
  const int max_exchanges = dialect.max_exchanges();
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

  for (int exchange = 1; exchange <= max_exchanges; ++exchange) {
    const ExchangeBody sent = dialect.body(req, schema, client.model(), mode, cap, caps);
    int attempts = 0;
    HttpResult r = client.post(sent.body, headers, mode, call, exchange, &attempts);
    out.http_attempts += attempts;
    const int status = r.ok() ? r.response.status : 0;

    if (r.ok() && (status == 400 || status == 422)) {
      const ApiError err = parse_api_error(r.response.body);
      const BadRequest handled = dialect.on_bad_request(err, sent, options.forced_mode.has_value(), mode, caps, client);
      if (handled != BadRequest::kNotMine) remember();
      if (handled == BadRequest::kAdapted) continue;
      if (handled == BadRequest::kGiveUp)
        return exchange_failure(r, attempts, client.url(), client.model(), client.key());
    }
    if (!r.ok() || status < 200 || status >= 300) {
      // The larger cap of a length retry can be more than the model allows: then the cut-off
      // reply we already have is better than an error.
      if (cut_off && r.ok() && status >= 400 && status < 500 && status != 429) return finish(std::move(*cut_off));
      return exchange_failure(r, attempts, client.url(), client.model(), client.key());
    }

    if (json_nesting_depth(r.response.body) > kMaxReplyDepth)
      return Status::parse_error("POST " + client.url() + " answered with JSON nested more than " +
                                 std::to_string(kMaxReplyDepth) + " levels deep");
    nlohmann::json reply = nlohmann::json::parse(r.response.body, nullptr, /*allow_exceptions=*/false);
    TS_ASSIGN_OR_RETURN(ReplyReading read, dialect.read_reply(reply, r.response.body, status, req, client));
    if (auto u = reply.find("usage"); u != reply.end()) add_usage(*u, out.usage);
    out.finish_reason = read.finish_reason;
    out.mode = mode;
    if (read.refusal) {
      out.refusal = std::move(read.refusal);
      out.text = std::move(read.text);
      done = true;
      break;
    }
    if (read.cut_off && !length_retried) {
      int larger = larger_token_cap(cap);
      if (larger > cap) {
        cut_off = out;
        cut_off->truncated = true;
        cut_off->text = read.text;
        spdlog::warn("{} ({}): reply cut off at {} tokens; retrying once with {}", client.url(),
                     client.model(), cap, larger);
        length_retried = true;
        cap = larger;
        continue;
      }
    }
    out.truncated = read.cut_off;
    out.text = std::move(read.text);
    done = true;
    break;
  }
  if (!done)
    return Status::unavailable("POST " + client.url() + ": no usable reply after " +
                               std::to_string(max_exchanges) + " exchanges adapting to the server");
  return finish(out);
}

}  // namespace tilesmith::llm::detail
