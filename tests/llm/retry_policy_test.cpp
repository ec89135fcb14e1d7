// The retry policy: the pure decisions, then the real retry path against a loopback server.

#include "llm/retry_policy.h"

#include <gtest/gtest.h>

#include <atomic>

#include "tests/llm/loopback_server.h"
#include "tests/llm/test_support.h"

namespace tilesmith::llm {
namespace {

using namespace std::chrono_literals;
using tilesmith::testing::LoopbackServer;
using tilesmith::testing::RecordingSleeper;

HttpResponse with_header(const std::string& name, const std::string& value) {
  HttpResponse r;
  r.status = 429;
  r.headers.push_back({name, value});
  return r;
}

TEST(RetryPolicy, RetryableStatusesAreThoseOfTheSdks) {
  for (int s : {408, 409, 429, 500, 502, 503, 504, 529}) EXPECT_TRUE(is_retryable_status(s)) << s;
  for (int s : {200, 400, 401, 403, 404, 422}) EXPECT_FALSE(is_retryable_status(s)) << s;
}

TEST(RetryPolicy, ShouldRetryHonoursXShouldRetryAndTransportErrors) {
  HttpResult r;
  r.response.status = 500;
  EXPECT_TRUE(should_retry(r));
  r.response.headers.push_back({"x-should-retry", "false"});
  EXPECT_FALSE(should_retry(r));
  r.response.status = 400;
  r.response.headers = {{"x-should-retry", "true"}};
  EXPECT_TRUE(should_retry(r));
  HttpResult t;
  t.error = TransportError::kTimeout;
  EXPECT_TRUE(should_retry(t));
  t.error = TransportError::kConnect;
  EXPECT_TRUE(should_retry(t));
  t.error = TransportError::kTooLarge;
  EXPECT_FALSE(should_retry(t));
  t.error = TransportError::kPermanent;
  EXPECT_FALSE(should_retry(t));
}

TEST(RetryPolicy, RetryAfterReadsMillisecondsSecondsAndDates) {
  auto now = std::chrono::system_clock::from_time_t(1445412480);  // Wed, 21 Oct 2015 07:28:00 GMT
  EXPECT_EQ(retry_after(with_header("retry-after-ms", "250"), now), 250ms);
  EXPECT_EQ(retry_after(with_header("retry-after-ms", "12.6"), now), 13ms);
  EXPECT_EQ(retry_after(with_header("retry-after", "2"), now), 2000ms);
  EXPECT_EQ(retry_after(with_header("retry-after", "0.5"), now), 500ms);
  EXPECT_EQ(retry_after(with_header("retry-after", "Wed, 21 Oct 2015 07:28:30 GMT"), now), 30000ms);
  EXPECT_EQ(retry_after(with_header("retry-after", "Wed, 21 Oct 2015 07:27:00 GMT"), now), 0ms);
  EXPECT_FALSE(retry_after(with_header("retry-after", "soon"), now).has_value());
  EXPECT_FALSE(retry_after(with_header("retry-after", "-3"), now).has_value());
  EXPECT_FALSE(retry_after(HttpResponse{}, now).has_value());
  // retry-after-ms wins over Retry-After.
  HttpResponse both = with_header("retry-after", "9");
  both.headers.push_back({"retry-after-ms", "100"});
  EXPECT_EQ(retry_after(both, now), 100ms);
}

TEST(RetryPolicy, BackoffDoublesWithJitterAndIsCapped) {
  RetryPolicy p;
  EXPECT_EQ(backoff_delay(p, 0, 0.0), 500ms);
  EXPECT_EQ(backoff_delay(p, 0, 1.0), 375ms);  // jitter takes off at most a quarter
  EXPECT_EQ(backoff_delay(p, 1, 0.0), 1000ms);
  EXPECT_EQ(backoff_delay(p, 3, 0.0), 4000ms);
  EXPECT_EQ(backoff_delay(p, 4, 0.0), 8000ms);
  EXPECT_EQ(backoff_delay(p, 10, 0.0), 8000ms);
}

TEST(RetryingSender, RetriesServerErrorsThenSucceeds) {
  LoopbackServer server;
  ASSERT_TRUE(server.ok());
  std::atomic<int> calls{0};
  server.set_handler([&](const httplib::Request&, httplib::Response& res) {
    int n = ++calls;
    if (n == 1) res.status = 500;
    else if (n == 2) res.status = 503;
    else res.set_content("{\"ok\":true}", "application/json");
  });
  RecordingSleeper sleeper;
  RetryingSender sender(std::make_shared<CurlTransport>(), RetryPolicy{}, sleeper.sleeper());
  HttpRequest req;
  req.url = server.url() + "/x";
  req.body = "{}";
  std::vector<int> seen_attempts;
  int attempts = 0;
  HttpResult r = sender.send(req, [&](const AttemptReport& a) { seen_attempts.push_back(a.attempt); }, &attempts);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response.status, 200);
  EXPECT_EQ(attempts, 3);
  EXPECT_EQ(seen_attempts, (std::vector<int>{1, 2, 3}));
  auto delays = sleeper.delays();
  ASSERT_EQ(delays.size(), 2u);
  EXPECT_GE(delays[0], 375ms);
  EXPECT_LE(delays[0], 500ms);
  EXPECT_GE(delays[1], 750ms);
  EXPECT_LE(delays[1], 1000ms);
}

TEST(RetryingSender, HonoursRetryAfterForReal) {
  LoopbackServer server;
  ASSERT_TRUE(server.ok());
  std::atomic<int> calls{0};
  server.set_handler([&](const httplib::Request&, httplib::Response& res) {
    if (++calls == 1) {
      res.status = 429;
      res.set_header("Retry-After", "1");
      res.set_content(tilesmith::testing::openai_error("Rate limit reached", "", "rate_limit_exceeded"),
                      "application/json");
      return;
    }
    res.set_content("{}", "application/json");
  });
  RetryingSender sender(std::make_shared<CurlTransport>(), RetryPolicy{}, real_sleeper());
  HttpRequest req;
  req.url = server.url() + "/x";
  auto start = std::chrono::steady_clock::now();
  int attempts = 0;
  HttpResult r = sender.send(req, {}, &attempts);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response.status, 200);
  EXPECT_EQ(attempts, 2);
  EXPECT_GE(took, 950ms);
  EXPECT_LT(took, 5s);
}

TEST(RetryingSender, UsesRetryAfterMsAndClampsLongRequests) {
  LoopbackServer server;
  ASSERT_TRUE(server.ok());
  std::atomic<int> calls{0};
  server.set_handler([&](const httplib::Request&, httplib::Response& res) {
    int n = ++calls;
    if (n == 1) {
      res.status = 429;
      res.set_header("retry-after-ms", "250");
    } else if (n == 2) {
      res.status = 503;
      res.set_header("Retry-After", "3600");
    } else {
      res.set_content("{}", "application/json");
    }
  });
  RecordingSleeper sleeper(0.0);
  RetryingSender sender(std::make_shared<CurlTransport>(), RetryPolicy{}, sleeper.sleeper());
  HttpRequest req;
  req.url = server.url() + "/x";
  HttpResult r = sender.send(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response.status, 200);
  EXPECT_EQ(sleeper.delays(), (std::vector<std::chrono::milliseconds>{250ms, 120000ms}));
}

TEST(RetryingSender, GivesUpAfterMaxRetriesWithTheLastAnswer) {
  LoopbackServer server;
  ASSERT_TRUE(server.ok());
  server.set_handler([](const httplib::Request&, httplib::Response& res) {
    res.status = 529;
    res.set_content(tilesmith::testing::anthropic_error("overloaded_error", "Overloaded"), "application/json");
  });
  RecordingSleeper sleeper;
  RetryingSender sender(std::make_shared<CurlTransport>(), RetryPolicy{}, sleeper.sleeper());
  HttpRequest req;
  req.url = server.url() + "/x";
  int attempts = 0;
  HttpResult r = sender.send(req, {}, &attempts);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.response.status, 529);
  EXPECT_EQ(attempts, 5);
  EXPECT_EQ(server.request_count(), 5u);
  auto delays = sleeper.delays();
  ASSERT_EQ(delays.size(), 4u);
  EXPECT_GE(delays[3], 3000ms);  // 0.5 * 2^3 = 4 s, less at most a quarter
}

TEST(RetryingSender, DoesNotRetryClientErrors) {
  LoopbackServer server;
  ASSERT_TRUE(server.ok());
  for (int status : {400, 401, 403, 404, 422}) {
    server.set_handler([status](const httplib::Request&, httplib::Response& res) { res.status = status; });
    size_t before = server.request_count();
    RecordingSleeper sleeper;
    RetryingSender sender(std::make_shared<CurlTransport>(), RetryPolicy{}, sleeper.sleeper());
    HttpRequest req;
    req.url = server.url() + "/x";
    int attempts = 0;
    HttpResult r = sender.send(req, {}, &attempts);
    EXPECT_EQ(r.response.status, status);
    EXPECT_EQ(attempts, 1);
    EXPECT_EQ(server.request_count() - before, 1u);
    EXPECT_TRUE(sleeper.delays().empty());
  }
}

TEST(RetryingSender, RetriesConnectionRefused) {
  RecordingSleeper sleeper;
  RetryPolicy policy;
  policy.max_retries = 2;
  RetryingSender sender(std::make_shared<CurlTransport>(), policy, sleeper.sleeper());
  HttpRequest req;
  req.url = "http://127.0.0.1:" + std::to_string(tilesmith::testing::unused_port()) + "/x";
  int attempts = 0;
  HttpResult r = sender.send(req, {}, &attempts);
  EXPECT_EQ(r.error, TransportError::kConnect);
  EXPECT_EQ(attempts, 3);
  EXPECT_EQ(sleeper.delays().size(), 2u);
}

TEST(RetryingSender, StopsAtTheTotalDeadline) {
  LoopbackServer server;
  ASSERT_TRUE(server.ok());
  server.set_handler([&](const httplib::Request&, httplib::Response& res) {
    server.hold(std::chrono::seconds(5));
    res.set_content("{}", "application/json");
  });
  RetryPolicy policy;
  policy.total_deadline = 600ms;
  RecordingSleeper sleeper(0.0);
  RetryingSender sender(std::make_shared<CurlTransport>(), policy, sleeper.sleeper());
  HttpRequest req;
  req.url = server.url() + "/x";
  req.timeout = 250ms;
  auto start = std::chrono::steady_clock::now();
  int attempts = 0;
  HttpResult r = sender.send(req, {}, &attempts);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.error, TransportError::kTimeout);
  // Each attempt is cut to what is left of the deadline, and no wait runs past it.
  EXPECT_LT(took, 2s);
  EXPECT_GE(attempts, 1);
  EXPECT_LE(attempts, 3);
}

}  // namespace
}  // namespace tilesmith::llm
