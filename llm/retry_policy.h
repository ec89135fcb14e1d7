#pragma once
// When and how long to retry an HTTP exchange, as the official OpenAI and Anthropic SDKs
// do: connection errors, timeouts, 408, 409, 429 and any 5xx (Anthropic's 529 "overloaded"
// included) are retried; other statuses are answers. The wait is the server's
// retry-after-ms / Retry-After (seconds or an HTTP date) when given, capped, else
// min(initial * 2^n, max) scaled by a jitter in [0.75, 1]. An `x-should-retry: true|false`
// header overrides the status rule, as in the SDKs.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <random>

#include "llm/http_transport.h"

namespace tilesmith::llm {

struct RetryPolicy {
  int max_retries = 4;            // attempts = 1 + max_retries
  double initial_delay_s = 0.5;
  double max_delay_s = 8.0;
  double max_retry_after_s = 120;  // a longer server request is clamped to this
  // For one logical request, all attempts and waits together: bounds how long a proposer
  // can block. Each attempt's own timeout is cut to what is left.
  std::chrono::milliseconds total_deadline{std::chrono::minutes(40)};
};

// How a client waits between attempts. Tests inject one that records and scales the
// waits; the default sleeps for real.
using Sleeper = std::function<void(std::chrono::milliseconds)>;
Sleeper real_sleeper();

bool is_retryable_status(int status);

// The server's requested wait, from retry-after-ms (milliseconds, may be fractional) or
// Retry-After (seconds, or an HTTP date relative to `now`). nullopt when absent, negative
// or unparseable.
std::optional<std::chrono::milliseconds> retry_after(const HttpResponse& response,
                                                     std::chrono::system_clock::time_point now);

// Backoff before retry number `retry_index` (0 for the first retry) without a server
// hint; `unit_random` in [0, 1) sets the jitter.
std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int retry_index, double unit_random);

// Whether this result should be retried (ignoring the retry count).
bool should_retry(const HttpResult& result);

struct AttemptReport {
  int attempt = 1;                 // 1-based
  const HttpRequest* request = nullptr;
  const HttpResult* result = nullptr;
  bool will_retry = false;
  std::chrono::milliseconds delay{0};  // the wait before the next attempt, when will_retry
};
using AttemptObserver = std::function<void(const AttemptReport&)>;

// Sends through a transport, retrying per the policy. Thread-safe when the transport and
// the sleeper are (each call keeps its own state; the jitter generator is locked).
class RetryingSender {
 public:
  RetryingSender(std::shared_ptr<HttpTransport> transport, RetryPolicy policy, Sleeper sleeper);

  // The last attempt's result: a response with a non-retryable status, the last retryable
  // one when retries or the deadline ran out, or a transport error. `observer` (optional)
  // sees every attempt; `attempts` (optional) receives how many were made.
  HttpResult send(const HttpRequest& request, const AttemptObserver& observer = {},
                  int* attempts = nullptr);

  const RetryPolicy& policy() const { return policy_; }

 private:
  double next_random();

  std::shared_ptr<HttpTransport> transport_;
  RetryPolicy policy_;
  Sleeper sleeper_;
  std::mutex rng_mutex_;
  std::mt19937_64 rng_;
};

}  // namespace tilesmith::llm
