#pragma once
// HTTP POST behind a small interface, so providers do not depend on libcurl and the
// transport can be swapped (a proxy-aware one, a recording one). CurlTransport is the real
// implementation. Transports do not retry: see llm/retry_policy.h.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilesmith::llm {

struct HttpHeader {
  std::string name;
  std::string value;
};

struct HttpRequest {
  std::string url;
  // Sent as given. Values may be secrets (API keys): transports never log or echo them.
  std::vector<HttpHeader> headers;
  std::string body;
  std::chrono::milliseconds connect_timeout{10'000};
  // Limit for the whole exchange (connect, send, wait, receive).
  std::chrono::milliseconds timeout{600'000};
  // A longer reply is abandoned with TransportError::kTooLarge.
  std::size_t max_response_bytes = std::size_t{16} << 20;
};

struct HttpResponse {
  int status = 0;
  // Headers of the final response (not of a 100 Continue), names lower-cased, in order.
  std::vector<HttpHeader> headers;
  std::string body;

  // Value of the last header with this name (compared case-insensitively), or nullopt.
  std::optional<std::string> header(std::string_view name) const;
};

enum class TransportError {
  kNone,
  kConnect,    // could not resolve or connect (refused, unreachable, TLS handshake failed)
  kTimeout,    // connect or whole-request timeout
  kTooLarge,   // reply larger than max_response_bytes
  kSend,       // the connection broke while sending or receiving
  kPermanent,  // retrying cannot help: malformed URL, unsupported scheme, bad certificate
};
const char* transport_error_name(TransportError e);  // "connect", "timeout", ...

struct HttpResult {
  TransportError error = TransportError::kNone;
  // What went wrong, in words; never contains header values.
  std::string error_message;
  HttpResponse response;  // meaningful when ok()
  double latency_ms = 0;  // from the call to the last byte (or the failure)
  bool ok() const { return error == TransportError::kNone; }
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // One POST, no retries. Any HTTP status is a successful exchange (ok()); only
  // transport failures set `error`. Implementations must be safe to call from several
  // threads at once.
  virtual HttpResult post(const HttpRequest& request) = 0;
};

// libcurl, one easy handle per call (an LLM call takes seconds; connection reuse would not
// pay for the shared state). Thread-safe. Honours the usual proxy variables, but never
// sends loopback traffic through a proxy.
class CurlTransport final : public HttpTransport {
 public:
  CurlTransport();
  HttpResult post(const HttpRequest& request) override;
};

}  // namespace tilesmith::llm
