// OpenAiProvider against a loopback server scripted to answer as OpenAI, vLLM and
// llama.cpp do: structured replies, servers without json_schema, rejected parameters,
// replies cut off, refusals, errors, hangs, and a closed port.

#include "llm/openai_provider.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/files.h"
#include "tests/llm/loopback_server.h"
#include "tests/llm/test_support.h"

namespace tilesmith::llm {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using tilesmith::testing::LoopbackServer;
using tilesmith::testing::openai_error;
using tilesmith::testing::openai_reply;
using tilesmith::testing::RecordingSleeper;

constexpr const char* kGoodContent =
    R"({"candidates":[{"rationale":"square tiles","BLOCK_M":64,"BLOCK_N":64,"THREAD_M":4}]})";
constexpr const char* kSchema =
    R"({"type":"object","properties":{"candidates":{"type":"array","items":{"type":"object","properties":{"rationale":{"type":"string"},"BLOCK_M":{"type":"integer","enum":[16,32,64,128]}},"required":["rationale","BLOCK_M"],"additionalProperties":false}}},"required":["candidates"],"additionalProperties":false})";

CompletionRequest request() {
  CompletionRequest r;
  r.system = "You tune GEMM kernels. Reply in JSON.";
  r.user = "Propose 1 configuration.";
  r.schema_name = "tile_configs";
  r.schema_json = kSchema;
  r.max_output_tokens = 1000;
  return r;
}

struct Fixture {
  LoopbackServer server;
  RecordingSleeper sleeper;
  tilesmith::testing::TempDir dir;
  ProviderOptions options;
  Fixture() {
    options.base_url = server.url() + "/v1";
    options.model = "test-model";
    options.api_key_env = "TILESMITH_TEST_OPENAI_KEY";
    options.sleeper = sleeper.sleeper();
    options.capabilities = std::make_shared<CapabilityCache>();  // fresh per test
    options.log_path = dir.path() / "llm_log.jsonl";
  }
  std::unique_ptr<OpenAiProvider> provider() {
    auto p = OpenAiProvider::create(options);
    if (!p.ok()) ADD_FAILURE() << p.status().to_string();
    return std::move(p).value();
  }
  std::vector<json> bodies() const {
    std::vector<json> out;
    for (const auto& r : server.requests()) out.push_back(json::parse(r.body));
    return out;
  }
  std::vector<json> log_lines() const {
    std::vector<json> out;
    std::ifstream in(options.log_path);
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }
};

TEST(OpenAiProvider, SendsAStrictJsonSchemaRequestAndReadsTheReply) {
  tilesmith::testing::ScopedEnv key("TILESMITH_TEST_OPENAI_KEY", "sk-test-123");
  Fixture f;
  f.server.set_handler([](const httplib::Request&, httplib::Response& res) {
    res.set_content(openai_reply(kGoodContent), "application/json");
  });
  auto p = f.provider();
  EXPECT_EQ(p->endpoint(), f.server.url() + "/v1/chat/completions");
  auto r = p->complete(request());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->text, kGoodContent);
  EXPECT_EQ(r->mode, OutputMode::kJsonSchema);
  EXPECT_EQ(r->finish_reason, "stop");
  EXPECT_FALSE(r->refusal.has_value());
  EXPECT_FALSE(r->truncated);
  EXPECT_EQ(r->usage.input_tokens, 1200);
  EXPECT_EQ(r->usage.output_tokens, 300);
  EXPECT_EQ(r->usage.reasoning_tokens, 100);
  EXPECT_EQ(r->http_attempts, 1);

  auto seen = f.server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/v1/chat/completions");
  EXPECT_EQ(seen[0].header("Authorization"), "Bearer sk-test-123");
  EXPECT_EQ(seen[0].header("Content-Type"), "application/json");
  json body = json::parse(seen[0].body);
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_EQ(body["max_completion_tokens"], 1000);
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][1]["role"], "user");
  EXPECT_EQ(body["messages"][1]["content"], "Propose 1 configuration.");
  EXPECT_EQ(body["response_format"]["type"], "json_schema");
  EXPECT_EQ(body["response_format"]["json_schema"]["name"], "tile_configs");
  EXPECT_EQ(body["response_format"]["json_schema"]["strict"], true);
  EXPECT_EQ(body["response_format"]["json_schema"]["schema"], json::parse(kSchema));
  // Property order is kept ("rationale" first) so that strict decoding reasons first.
  auto props = seen[0].body.find("\"properties\":{\"rationale\"");
  EXPECT_NE(props, std::string::npos);
}

TEST(OpenAiProvider, SendsTemperatureOnlyWhenSetAndExtraHeaders) {
  Fixture f;
  f.options.extra_headers = {{"X-Org", "perf-team"}};
  f.server.set_handler([](const httplib::Request&, httplib::Response& res) {
    res.set_content(openai_reply(kGoodContent), "application/json");
  });
  auto p = f.provider();
  CompletionRequest req = request();
  req.temperature = 0.25;
  ASSERT_TRUE(p->complete(req).ok());
  auto seen = f.server.requests();
  EXPECT_EQ(json::parse(seen[0].body)["temperature"], 0.25);
  EXPECT_EQ(seen[0].header("X-Org"), "perf-team");
  // No key in the environment: no Authorization header at all (local servers).
  EXPECT_EQ(seen[0].header("Authorization"), "");
}

// A llama.cpp-like server: no json_schema, no json_object either, and a model that wraps
// its JSON in prose and a fence.
TEST(OpenAiProvider, FallsBackFromJsonSchemaToJsonObjectToTextAndRemembers) {
  Fixture f;
  f.options.capabilities = std::make_shared<CapabilityCache>(f.dir.path() / "caps.json");
  f.server.set_handler([](const httplib::Request& req, httplib::Response& res) {
    json body = json::parse(req.body);
    if (body.contains("response_format")) {
      res.status = 400;
      std::string type = body["response_format"]["type"];
      res.set_content(openai_error("response_format type '" + type + "' is not supported"), "application/json");
      return;
    }
    res.set_content(openai_reply(std::string("Sure! Here are my picks:\n```json\n") + kGoodContent + "\n```\nGood luck."),
                    "application/json");
  });
  auto p = f.provider();
  auto r = p->complete(request());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->mode, OutputMode::kText);
  EXPECT_NE(r->text.find("```json"), std::string::npos);
  auto bodies = f.bodies();
  ASSERT_EQ(bodies.size(), 3u);
  EXPECT_EQ(bodies[0]["response_format"]["type"], "json_schema");
  EXPECT_EQ(bodies[1]["response_format"]["type"], "json_object");
  EXPECT_FALSE(bodies[2].contains("response_format"));
  // Without a decoder-enforced schema the schema travels in the system message.
  EXPECT_NE(bodies[2]["messages"][0]["content"].get<std::string>().find("\"candidates\""), std::string::npos);
  EXPECT_EQ(r->http_attempts, 3);
  // A 400 is not retried with backoff: no waits.
  EXPECT_TRUE(f.sleeper.delays().empty());

  // The next call goes straight to text mode.
  ASSERT_TRUE(p->complete(request()).ok());
  bodies = f.bodies();
  ASSERT_EQ(bodies.size(), 4u);
  EXPECT_FALSE(bodies[3].contains("response_format"));

  // And so does a new process reading the persisted capabilities.
  CapabilityCache reloaded(f.dir.path() / "caps.json");
  EXPECT_EQ(reloaded.get(CapabilityCache::key(p->endpoint(), "test-model")).output_mode, "text");

  // The log says which mode each attempt used.
  auto lines = f.log_lines();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0]["mode"], "json_schema");
  EXPECT_EQ(lines[0]["status"], 400);
  EXPECT_EQ(lines[1]["mode"], "json_object");
  EXPECT_EQ(lines[2]["mode"], "text");
  EXPECT_EQ(lines[2]["status"], 200);
  EXPECT_EQ(lines[2]["exchange"], 3);
  EXPECT_EQ(lines[3]["call"], 2);
}

// OpenAI reasoning models reject temperature: drop it, retry once, remember.
TEST(OpenAiProvider, DropsAParameterTheModelRejectsAndRemembers) {
  Fixture f;
  f.server.set_handler([](const httplib::Request& req, httplib::Response& res) {
    if (json::parse(req.body).contains("temperature")) {
      res.status = 400;
      res.set_content(openai_error("Unsupported value: 'temperature' does not support 0.2 with this model. "
                                   "Only the default (1) value is supported.",
                                   "temperature", "unsupported_value"),
                      "application/json");
      return;
    }
    res.set_content(openai_reply(kGoodContent), "application/json");
  });
  auto p = f.provider();
  CompletionRequest req = request();
  req.temperature = 0.2;
  auto r = p->complete(req);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->mode, OutputMode::kJsonSchema);
  ASSERT_TRUE(p->complete(req).ok());
  auto bodies = f.bodies();
  ASSERT_EQ(bodies.size(), 3u);
  EXPECT_TRUE(bodies[0].contains("temperature"));
  EXPECT_FALSE(bodies[1].contains("temperature"));
  EXPECT_FALSE(bodies[2].contains("temperature"));
}

TEST(OpenAiProvider, FallsBackToMaxTokensWhenMaxCompletionTokensIsUnknown) {
  Fixture f;
  f.server.set_handler([](const httplib::Request& req, httplib::Response& res) {
    if (json::parse(req.body).contains("max_completion_tokens")) {
      res.status = 422;
      res.set_content(R"({"detail":"extra field not permitted: max_completion_tokens"})", "application/json");
      return;
    }
    res.set_content(openai_reply(kGoodContent), "application/json");
  });
  auto p = f.provider();
  auto r = p->complete(request());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  auto bodies = f.bodies();
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[1]["max_tokens"], 1000);
  EXPECT_FALSE(bodies[1].contains("max_completion_tokens"));
  EXPECT_EQ(bodies[1]["response_format"]["type"], "json_schema");
}

TEST(OpenAiProvider, RetriesOnceWithALargerCapWhenCutOff) {
  Fixture f;
  std::atomic<int> calls{0};
  f.server.set_handler([&](const httplib::Request&, httplib::Response& res) {
    if (++calls == 1) res.set_content(openai_reply("{\"candidates\":[{\"rationale\":\"long", "length"), "application/json");
    else res.set_content(openai_reply(kGoodContent), "application/json");
  });
  auto p = f.provider();
  auto r = p->complete(request());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->truncated);
  EXPECT_EQ(r->text, kGoodContent);
  EXPECT_EQ(r->usage.output_tokens, 600);  // both exchanges counted
  auto bodies = f.bodies();
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[0]["max_completion_tokens"], 1000);
  EXPECT_EQ(bodies[1]["max_completion_tokens"], 2000);
}

TEST(OpenAiProvider, ReportsTruncationAfterTheOneRetry) {
  Fixture f;
  f.server.set_handler([&](const httplib::Request&, httplib::Response& res) {
    res.set_content(openai_reply("{\"candidates\":[{\"rationale\":\"long", "length"), "application/json");
  });
  auto p = f.provider();
  auto r = p->complete(request());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(r->finish_reason, "length");
  EXPECT_EQ(f.server.request_count(), 2u);
}

// The doubled cap can exceed what the model allows: the cut-off reply is returned rather
// than the error, and "too large" is not mistaken for "unsupported parameter".
TEST(OpenAiProvider, KeepsTheCutOffReplyWhenTheLargerCapIsRefused) {
  Fixture f;
  f.server.set_handler([&](const httplib::Request& req, httplib::Response& res) {
    if (json::parse(req.body)["max_completion_tokens"] == 1000) {
      res.set_content(openai_reply("{\"candidates\":[{\"rationale\":\"a\",\"BLOCK_M\":64},{\"ratio", "length"),
                      "application/json");
      return;
    }
    res.status = 400;
    res.set_content(openai_error("max_completion_tokens is too large: 2000. This model supports at most "
                                 "1000 completion tokens, whereas you provided 2000.",
                                 "max_completion_tokens", "invalid_value"),
                    "application/json");
  });
  auto p = f.provider();
  auto r = p->complete(request());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(r->text, "{\"candidates\":[{\"rationale\":\"a\",\"BLOCK_M\":64},{\"ratio");
  EXPECT_EQ(r->http_attempts, 2);
  ASSERT_TRUE(p->complete(request()).ok());
  auto bodies = f.bodies();
  ASSERT_EQ(bodies.size(), 4u);
  EXPECT_TRUE(bodies[2].contains("max_completion_tokens"));  // no rename was learned
}

TEST(OpenAiProvider, RecordsARefusal) {
  Fixture f;
  f.server.set_handler([](const httplib::Request&, httplib::Response& res) {
    res.set_content(openai_reply("", "stop", "I can't help with that."), "application/json");
  });
  auto r = f.provider()->complete(request());
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->refusal.has_value());
  EXPECT_EQ(*r->refusal, "I can't help with that.");
  EXPECT_EQ(f.server.request_count(), 1u);
}

TEST(OpenAiProvider, RetriesRateLimitsAndServerErrorsThenSucceeds) {
  Fixture f;
  std::atomic<int> calls{0};
  f.server.set_handler([&](const httplib::Request&, httplib::Response& res) {
    int n = ++calls;
    if (n == 1) {
      res.status = 429;
      res.set_header("retry-after-ms", "40");
      res.set_content(openai_error("Rate limit reached", "", "rate_limit_exceeded", "requests"), "application/json");
    } else if (n == 2) {
      res.status = 502;
      res.set_content("<html>Bad gateway</html>", "text/html");
    } else {
      res.set_content(openai_reply(kGoodContent), "application/json");
    }
  });
  auto r = f.provider()->complete(request());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->http_attempts, 3);
  auto delays = f.sleeper.delays();
  ASSERT_EQ(delays.size(), 2u);
  EXPECT_EQ(delays[0], 40ms);
  auto lines = f.log_lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["attempt"], 1);
  EXPECT_EQ(lines[0]["status"], 429);
  EXPECT_EQ(lines[0]["will_retry"], true);
  EXPECT_EQ(lines[1]["status"], 502);
  EXPECT_EQ(lines[1]["reply"], "<html>Bad gateway</html>");
  EXPECT_EQ(lines[2]["attempt"], 3);
  EXPECT_EQ(lines[2]["status"], 200);
  EXPECT_EQ(lines[2]["usage"]["prompt_tokens"], 1200);
  EXPECT_GE(lines[2]["latency_ms"].get<double>(), 0.0);
  EXPECT_EQ(lines[2]["request"]["model"], "test-model");
  EXPECT_TRUE(lines[2].contains("time"));
}

TEST(OpenAiProvider, AServerThatHangsTimesOutAndIsReportedUnavailable) {
  Fixture f;
  f.options.request_timeout = 200ms;
  f.options.retry.max_retries = 1;
  f.server.set_handler([&](const httplib::Request&, httplib::Response& res) {
    f.server.hold(5s);
    res.set_content(openai_reply(kGoodContent), "application/json");
  });
  auto start = std::chrono::steady_clock::now();
  auto r = f.provider()->complete(request());
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("timeout"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("2 attempts"), std::string::npos) << r.status().message();
  EXPECT_LT(took, 3s);
  EXPECT_EQ(f.server.request_count(), 2u);
}

TEST(OpenAiProvider, ConnectionRefusedIsUnavailable) {
  Fixture f;
  f.options.base_url = "http://127.0.0.1:" + std::to_string(tilesmith::testing::unused_port()) + "/v1";
  f.options.retry.max_retries = 2;
  auto r = f.provider()->complete(request());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("connect"), std::string::npos) << r.status().message();
  EXPECT_EQ(f.sleeper.delays().size(), 2u);
  auto lines = f.log_lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(lines[0]["status"].is_null());
  EXPECT_NE(lines[0]["error"].get<std::string>().find("connect"), std::string::npos);
}

TEST(OpenAiProvider, AReplyOverTheSizeLimitIsAbandonedNotRetried) {
  Fixture f;
  f.options.max_response_bytes = 1 << 20;
  f.server.set_handler([](const httplib::Request&, httplib::Response& res) {
    res.set_content(openai_reply(std::string(2 << 20, 'x')), "application/json");
  });
  auto r = f.provider()->complete(request());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("larger than 1048576 bytes"), std::string::npos) << r.status().message();
  EXPECT_EQ(f.server.request_count(), 1u);
}

TEST(OpenAiProvider, ADeeplyNestedReplyIsRefusedNotRecursedInto) {
  Fixture f;
  f.server.set_handler([](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"choices\":" + std::string(200000, '[') + std::string(200000, ']') + "}", "application/json");
  });
  auto r = f.provider()->complete(request());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kParseError);
  EXPECT_NE(r.status().message().find("levels deep"), std::string::npos);
  auto lines = f.log_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0]["reply"].is_string());
}

TEST(OpenAiProvider, ClientErrorsAreNotRetriedAndSayWhatToFix) {
  Fixture f;
  std::atomic<int> status{404};
  f.server.set_handler([&](const httplib::Request&, httplib::Response& res) {
    res.status = status;
    res.set_content(openai_error("The model `test-model` does not exist", "", "model_not_found"), "application/json");
  });
  auto p = f.provider();
  auto r = p->complete(request());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("404"), std::string::npos);
  EXPECT_NE(r.status().message().find("does not exist"), std::string::npos);
  EXPECT_NE(r.status().message().find("base URL"), std::string::npos);

  status = 400;
  r = p->complete(request());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.server.request_count(), 2u);
  EXPECT_TRUE(f.sleeper.delays().empty());
}

TEST(OpenAiProvider, A2xxReplyThatIsNotChatCompletionIsAParseError) {
  Fixture f;
  f.server.set_handler([](const httplib::Request&, httplib::Response& res) {
    res.set_content("<html>captive portal</html>", "text/html");
  });
  auto r = f.provider()->complete(request());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kParseError);
  f.server.set_handler([](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"choices":[]})", "application/json");
  });
  r = f.provider()->complete(request());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kParseError);
}

// The key reaches the server, but never the log or an error message, even when the
// server echoes it back.
TEST(OpenAiProvider, TheKeyIsNeverLoggedNorInErrors) {
  const std::string secret = "sk-proj-SECRET-abc123XYZ-do-not-leak";
  tilesmith::testing::ScopedEnv key("TILESMITH_TEST_OPENAI_KEY", secret);
  Fixture f;
  std::atomic<int> calls{0};
  f.server.set_handler([&](const httplib::Request& req, httplib::Response& res) {
    std::string auth = req.get_header_value("Authorization");
    int n = ++calls;
    if (n == 1) {
      res.status = 500;  // retried, and logged with the echo
      res.set_content(openai_error("internal error for " + auth), "application/json");
    } else if (n == 2) {
      res.set_content(openai_reply("{\"candidates\":[],\"echo\":\"" + auth + "\"}"), "application/json");
    } else {
      res.status = 401;
      res.set_content(openai_error("Incorrect API key provided: " + auth, "", "invalid_api_key"),
                      "application/json");
    }
  });
  auto p = f.provider();
  auto ok = p->complete(request());
  ASSERT_TRUE(ok.ok());
  auto bad = p->complete(request());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(bad.status().message().find("$TILESMITH_TEST_OPENAI_KEY"), std::string::npos)
      << bad.status().message();
  EXPECT_EQ(bad.status().message().find(secret), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("[redacted]"), std::string::npos);

  // The server did get the key.
  auto seen = f.server.requests();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].header("Authorization"), "Bearer " + secret);

  auto text = read_file(f.options.log_path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->find(secret), std::string::npos);
  EXPECT_EQ(text->find("SECRET-abc123"), std::string::npos);
  EXPECT_NE(text->find("[redacted]"), std::string::npos);
  EXPECT_NE(text->find("Authorization"), std::string::npos);  // the header's name only
  EXPECT_EQ(f.log_lines().size(), 3u);
}

TEST(OpenAiProvider, TheUnauthorisedMessageNamesTheVariableWhenItIsUnset) {
  Fixture f;
  f.server.set_handler([](const httplib::Request&, httplib::Response& res) {
    res.status = 401;
    res.set_content(openai_error("You didn't provide an API key."), "application/json");
  });
  auto r = f.provider()->complete(request());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("check the API key in $TILESMITH_TEST_OPENAI_KEY (not set)"),
            std::string::npos)
      << r.status().message();
}

TEST(OpenAiProvider, RejectsBadOptions) {
  ProviderOptions o;
  EXPECT_FALSE(OpenAiProvider::create(o).ok());  // no model
  o.model = "m";
  o.base_url = "127.0.0.1:8000/v1";
  EXPECT_FALSE(OpenAiProvider::create(o).ok());
  o.base_url = "http://127.0.0.1:8000/v1/";
  auto p = OpenAiProvider::create(o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->endpoint(), "http://127.0.0.1:8000/v1/chat/completions");
  o.forced_mode = OutputMode::kToolUse;
  EXPECT_FALSE(OpenAiProvider::create(o).ok());
}

TEST(OpenAiProvider, AForcedModeIsUsedFromTheStart) {
  Fixture f;
  f.options.forced_mode = OutputMode::kJsonObject;
  f.server.set_handler([](const httplib::Request&, httplib::Response& res) {
    res.set_content(openai_reply(kGoodContent), "application/json");
  });
  auto r = f.provider()->complete(request());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mode, OutputMode::kJsonObject);
  EXPECT_EQ(f.bodies()[0]["response_format"]["type"], "json_object");
}

}  // namespace
}  // namespace tilesmith::llm
