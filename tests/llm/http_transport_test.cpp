// CurlTransport against a real HTTP server on loopback.

#include "llm/http_transport.h"

#include <gtest/gtest.h>

#include "tests/llm/loopback_server.h"

namespace tilesmith::llm {
namespace {

using tilesmith::testing::LoopbackServer;

TEST(CurlTransport, PostsBodyAndHeadersAndReadsTheReply) {
  LoopbackServer server;
  ASSERT_TRUE(server.ok());
  server.set_handler([](const httplib::Request& req, httplib::Response& res) {
    res.set_header("X-Echo-Length", std::to_string(req.body.size()));
    res.set_header("Retry-After", "3");
    res.status = 201;
    res.set_content("{\"echo\":" + req.body + "}", "application/json");
  });
  CurlTransport transport;
  HttpRequest req;
  req.url = server.url() + "/v1/chat/completions";
  req.headers = {{"Authorization", "Bearer abc"}, {"X-Custom", "yes"}};
  req.body = std::string(5000, 'x');  // larger than curl's 1 KiB Expect: 100-continue threshold
  req.body = "\"" + req.body + "\"";
  HttpResult r = transport.post(req);
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.response.status, 201);
  EXPECT_EQ(r.response.body, "{\"echo\":" + req.body + "}");
  EXPECT_EQ(r.response.header("x-echo-length"), std::to_string(req.body.size()));
  EXPECT_EQ(r.response.header("RETRY-AFTER"), "3");
  EXPECT_FALSE(r.response.header("x-missing").has_value());
  EXPECT_GT(r.latency_ms, 0.0);
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/v1/chat/completions");
  EXPECT_EQ(seen[0].header("Authorization"), "Bearer abc");
  EXPECT_EQ(seen[0].header("X-Custom"), "yes");
  EXPECT_EQ(seen[0].header("Expect"), "");
  EXPECT_EQ(seen[0].body, req.body);
}

TEST(CurlTransport, ConnectionRefusedIsAConnectError) {
  CurlTransport transport;
  HttpRequest req;
  req.url = "http://127.0.0.1:" + std::to_string(tilesmith::testing::unused_port()) + "/v1/chat/completions";
  req.body = "{}";
  HttpResult r = transport.post(req);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error, TransportError::kConnect) << r.error_message;
  EXPECT_FALSE(r.error_message.empty());
}

TEST(CurlTransport, AServerThatDoesNotAnswerTimesOut) {
  LoopbackServer server;
  ASSERT_TRUE(server.ok());
  server.set_handler([&](const httplib::Request&, httplib::Response& res) {
    server.hold(std::chrono::seconds(5));
    res.set_content("{}", "application/json");
  });
  CurlTransport transport;
  HttpRequest req;
  req.url = server.url() + "/x";
  req.body = "{}";
  req.timeout = std::chrono::milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  HttpResult r = transport.post(req);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.error, TransportError::kTimeout) << r.error_message;
  EXPECT_LT(took, std::chrono::seconds(3));
  EXPECT_GE(took, std::chrono::milliseconds(250));
}

TEST(CurlTransport, AReplyLargerThanTheLimitIsRefused) {
  LoopbackServer server;
  ASSERT_TRUE(server.ok());
  server.set_handler([](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(2 << 20, 'a'), "text/plain");
  });
  CurlTransport transport;
  HttpRequest req;
  req.url = server.url() + "/x";
  req.body = "{}";
  req.max_response_bytes = 1 << 20;
  HttpResult r = transport.post(req);
  EXPECT_EQ(r.error, TransportError::kTooLarge) << r.error_message;
  EXPECT_TRUE(r.response.body.empty());
}

TEST(CurlTransport, AMalformedUrlIsPermanent) {
  CurlTransport transport;
  HttpRequest req;
  req.url = "htp:/nowhere";
  HttpResult r = transport.post(req);
  EXPECT_EQ(r.error, TransportError::kPermanent) << r.error_message;
}

}  // namespace
}  // namespace tilesmith::llm
