#include "llm/retry_policy.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>

namespace tilesmith::llm {
namespace {

std::optional<double> parse_number(const std::string& text) {
  const char* begin = text.c_str();
  while (*begin && std::isspace(static_cast<unsigned char>(*begin))) ++begin;
  if (!*begin) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(begin, &end);
  while (end && *end && std::isspace(static_cast<unsigned char>(*end))) ++end;
  if (end == begin || (end && *end) || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::chrono::milliseconds from_seconds(double s) {
  return std::chrono::milliseconds(static_cast<long long>(std::llround(s * 1000.0)));
}

}  // namespace

Sleeper real_sleeper() {
  return [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
}

bool is_retryable_status(int status) {
  return status == 408 || status == 409 || status == 429 || status >= 500;
}

std::optional<std::chrono::milliseconds> retry_after(const HttpResponse& response,
                                                     std::chrono::system_clock::time_point now) {
  if (auto ms = response.header("retry-after-ms")) {
    if (auto v = parse_number(*ms); v && *v >= 0)
      return std::chrono::milliseconds(static_cast<long long>(std::llround(*v)));
  }
  auto value = response.header("retry-after");
  if (!value) return std::nullopt;
  if (auto v = parse_number(*value)) {
    if (*v < 0) return std::nullopt;
    return from_seconds(*v);
  }
  // An HTTP date ("Wed, 21 Oct 2015 07:28:00 GMT"); curl_getdate knows all three formats.
  std::time_t when = curl_getdate(value->c_str(), nullptr);
  if (when == -1) return std::nullopt;
  auto delta = std::chrono::system_clock::from_time_t(when) - now;
  if (delta < std::chrono::milliseconds(0)) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(delta);
}

std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int retry_index, double unit_random) {
  double base = std::min(policy.initial_delay_s * std::pow(2.0, std::max(0, retry_index)),
                         policy.max_delay_s);
  double jitter = 1.0 - 0.25 * std::clamp(unit_random, 0.0, 1.0);
  return from_seconds(base * jitter);
}

bool should_retry(const HttpResult& result) {
  if (!result.ok()) {
    // A reply too large or a malformed URL will be the same next time.
    return result.error != TransportError::kPermanent && result.error != TransportError::kTooLarge;
  }
  // An absent header reads as "": neither answer, so the status decides.
  const std::string hint = result.response.header("x-should-retry").value_or("");
  if (hint == "true") return true;
  if (hint == "false") return false;
  return is_retryable_status(result.response.status);
}

RetryingSender::RetryingSender(std::shared_ptr<HttpTransport> transport, RetryPolicy policy,
                               Sleeper sleeper)
    : transport_(std::move(transport)),
      policy_(policy),
      sleeper_(sleeper ? std::move(sleeper) : real_sleeper()),
      rng_(std::random_device{}()) {}

double RetryingSender::next_random() {
  std::lock_guard lock(rng_mutex_);
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
}

HttpResult RetryingSender::send(const HttpRequest& request, const AttemptObserver& observer,
                                int* attempts) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + policy_.total_deadline;
  HttpRequest attempt_request = request;
  HttpResult result;
  for (int attempt = 1;; ++attempt) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    attempt_request.timeout = std::clamp(left, std::chrono::milliseconds(1), request.timeout);
    result = transport_->post(attempt_request);

    AttemptReport report;
    report.attempt = attempt;
    report.request = &attempt_request;
    report.result = &result;
    if (attempt <= policy_.max_retries && should_retry(result)) {
      std::optional<std::chrono::milliseconds> hint;
      if (result.ok()) hint = retry_after(result.response, std::chrono::system_clock::now());
      // A server asking for 0 ms gets the computed backoff, as the SDKs do.
      if (hint && hint->count() > 0)
        report.delay = std::min(*hint, from_seconds(policy_.max_retry_after_s));
      else
        report.delay = backoff_delay(policy_, attempt - 1, next_random());
      left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      // Waiting past the deadline only to start an attempt with no time left helps nobody.
      report.will_retry = report.delay < left;
    }
    if (observer) observer(report);
    if (!report.will_retry) {
      if (attempts) *attempts = attempt;
      return result;
    }
    sleeper_(report.delay);
  }
}

}  // namespace tilesmith::llm
