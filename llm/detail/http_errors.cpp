#include "llm/detail/http_errors.h"

#include <nlohmann/json.hpp>

#include "llm/retry_policy.h"

namespace tilesmith::llm::detail {
namespace {

std::string as_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string reason_phrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 529: return "Overloaded";
    default: return "";
  }
}

}  // namespace

std::string excerpt(std::string_view text, std::size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  std::size_t cut = max_chars;
  // Step back over UTF-8 continuation bytes so the cut never splits a character.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "...";
}

ApiError parse_api_error(std::string_view body) {
  ApiError err;
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    const nlohmann::json* e = nullptr;
    if (auto it = j.find("error"); it != j.end()) e = &*it;
    if (e && e->is_object()) {
      if (auto m = e->find("message"); m != e->end()) err.message = as_text(*m);
      if (auto m = e->find("type"); m != e->end()) err.type = as_text(*m);
      if (auto m = e->find("param"); m != e->end()) err.param = as_text(*m);
      if (auto m = e->find("code"); m != e->end()) err.code = as_text(*m);
    } else if (e && e->is_string()) {
      err.message = e->get<std::string>();
    } else if (auto d = j.find("detail"); d != j.end()) {
      err.message = as_text(*d);
    } else if (auto m = j.find("message"); m != j.end()) {
      err.message = as_text(*m);
    }
  }
  if (err.message.empty()) err.message = std::string(body);
  err.message = excerpt(err.message, 600);
  return err;
}

Status exchange_failure(const HttpResult& result, int attempts, const std::string& url,
                        const std::string& model, const ApiKey& key) {
  std::string what = "POST " + url;
  std::string tries = attempts == 1 ? "1 attempt" : std::to_string(attempts) + " attempts";
  if (!result.ok()) {
    std::string msg = what + " failed (" + transport_error_name(result.error) + ") after " + tries +
                      ": " + result.error_message;
    if (result.error == TransportError::kConnect) msg += "; is the server running and the base URL right?";
    return Status::unavailable(key.redact(msg));
  }
  int status = result.response.status;
  ApiError err = parse_api_error(result.response.body);
  std::string phrase = reason_phrase(status);
  std::string head = what + " returned " + std::to_string(status) + (phrase.empty() ? "" : " " + phrase);
  std::string server = err.message.empty() ? "" : ": " + err.message;
  if (status == 401)
    return Status::failed_precondition(
        key.redact(head + server + "; check the API key in " + key.describe()));
  if (status == 403)
    return Status::failed_precondition(key.redact(head + server + "; the key in " + key.describe() +
                                                  " may not have access to model '" + model + "'"));
  if (status == 404)
    return Status::not_found(key.redact(head + server + "; check the base URL and the model name '" +
                                        model + "'"));
  if (is_retryable_status(status))
    return Status::unavailable(key.redact(head + " after " + tries + server));
  if (status >= 200 && status < 300)
    return Status::internal(key.redact(head + " but was treated as a failure"));
  return Status::invalid(key.redact(head + server));
}

}  // namespace tilesmith::llm::detail
