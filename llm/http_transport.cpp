#include "llm/http_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>

namespace tilesmith::llm {
namespace {

struct EasyDeleter {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
using EasyHandle = std::unique_ptr<CURL, EasyDeleter>;

struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using HeaderList = std::unique_ptr<curl_slist, SlistDeleter>;

// curl_global_init is not guaranteed thread-safe on every build of libcurl; do it once.
void global_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

struct Receiver {
  HttpResponse* response;
  std::size_t limit;
  bool too_large = false;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* r = static_cast<Receiver*>(user);
  size_t n = size * count;
  if (r->response->body.size() + n > r->limit) {
    r->too_large = true;
    return 0;  // makes curl abort with CURLE_WRITE_ERROR
  }
  r->response->body.append(data, n);
  return n;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* r = static_cast<Receiver*>(user);
  size_t n = size * count;
  std::string_view line(data, n);
  // A new status line starts a new header block (after 100 Continue, say): keep only the last.
  if (line.rfind("HTTP/", 0) == 0) {
    r->response->headers.clear();
    return n;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  r->response->headers.push_back(
      {lower(trim(line.substr(0, colon))), std::string(trim(line.substr(colon + 1)))});
  return n;
}

TransportError classify(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
      return TransportError::kConnect;
    case CURLE_OPERATION_TIMEDOUT:
      return TransportError::kTimeout;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_NOT_BUILT_IN:
      return TransportError::kPermanent;
    default:
      return TransportError::kSend;
  }
}

// Loopback must never go through a proxy (local vLLM/llama.cpp servers, tests), but a
// user's own no_proxy list still applies.
std::string no_proxy_list() {
  std::string list = "localhost,127.0.0.1,::1";
  for (const char* var : {"no_proxy", "NO_PROXY"}) {
    if (const char* v = std::getenv(var); v && *v) {
      list += ",";
      list += v;
      break;
    }
  }
  return list;
}

}  // namespace

const char* transport_error_name(TransportError e) {
  switch (e) {
    case TransportError::kNone: return "none";
    case TransportError::kConnect: return "connect";
    case TransportError::kTimeout: return "timeout";
    case TransportError::kTooLarge: return "too_large";
    case TransportError::kSend: return "send";
    case TransportError::kPermanent: return "permanent";
  }
  return "?";
}

std::optional<std::string> HttpResponse::header(std::string_view name) const {
  std::string key = lower(name);
  for (auto it = headers.rbegin(); it != headers.rend(); ++it)
    if (it->name == key) return it->value;
  return std::nullopt;
}

CurlTransport::CurlTransport() { global_init_once(); }

HttpResult CurlTransport::post(const HttpRequest& request) {
  HttpResult result;
  auto start = std::chrono::steady_clock::now();
  auto finish = [&]() -> HttpResult& {
    result.latency_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return result;
  };

  EasyHandle easy(curl_easy_init());
  if (!easy) {
    result.error = TransportError::kPermanent;
    result.error_message = "curl_easy_init failed";
    return finish();
  }
  HeaderList headers;
  auto add_header = [&](const std::string& line) {
    curl_slist* next = curl_slist_append(headers.get(), line.c_str());
    if (next) {
      (void)headers.release();  // the list now hangs off `next`
      headers.reset(next);
    }
  };
  for (const auto& h : request.headers) add_header(h.name + ": " + h.value);
  // Without this, curl waits for a "100 Continue" before sending bodies over 1 KiB.
  add_header("Expect:");

  Receiver receiver{&result.response, request.max_response_bytes};
  char error_buffer[CURL_ERROR_SIZE] = {0};
  std::string no_proxy = no_proxy_list();
  CURL* h = easy.get();
  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<long long>(1, request.timeout.count())));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for timeouts: we run in threads
  curl_easy_setopt(h, CURLOPT_NOPROXY, no_proxy.c_str());
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);  // a redirected POST is a configuration error
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");  // whatever curl can decode
  curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(request.max_response_bytes));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &receiver);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &receiver);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "tilesmith/" TILESMITH_VERSION);

  CURLcode code = curl_easy_perform(h);
  if (code == CURLE_OK) {
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    result.response.status = static_cast<int>(status);
    return finish();
  }
  if (receiver.too_large || code == CURLE_FILESIZE_EXCEEDED) {
    result.error = TransportError::kTooLarge;
    result.error_message = "reply larger than " + std::to_string(request.max_response_bytes) + " bytes";
  } else {
    result.error = classify(code);
    result.error_message = error_buffer[0] ? error_buffer : curl_easy_strerror(code);
  }
  result.response = HttpResponse{};
  return finish();
}

}  // namespace tilesmith::llm
