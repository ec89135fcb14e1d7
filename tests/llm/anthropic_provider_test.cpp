// AnthropicProvider against a loopback server answering as the Messages API does.

#include "llm/anthropic_provider.h"

#include <gtest/gtest.h>

#include <atomic>

#include <nlohmann/json.hpp>

#include "base/files.h"
#include "tests/llm/loopback_server.h"
#include "tests/llm/test_support.h"

namespace tilesmith::llm {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using tilesmith::testing::anthropic_error;
using tilesmith::testing::anthropic_reply;
using tilesmith::testing::LoopbackServer;
using tilesmith::testing::RecordingSleeper;

const json kInput = json::parse(R"({"candidates":[{"rationale":"r","BLOCK_M":64}]})");
constexpr const char* kSchema =
    R"({"type":"object","properties":{"candidates":{"type":"array","items":{"type":"object","properties":{"rationale":{"type":"string"},"BLOCK_M":{"type":"integer","enum":[16,32,64,128]}},"required":["rationale","BLOCK_M"],"additionalProperties":false}}},"required":["candidates"],"additionalProperties":false})";

CompletionRequest request() {
  CompletionRequest r;
  r.system = "You tune GEMM kernels.";
  r.user = "Propose 1 configuration.";
  r.schema_name = "tile_configs";
  r.schema_json = kSchema;
  r.max_output_tokens = 2000;
  return r;
}

struct Fixture {
  LoopbackServer server;
  RecordingSleeper sleeper;
  tilesmith::testing::TempDir dir;
  ProviderOptions options;
  Fixture() {
    options.kind = ProviderKind::kAnthropic;
    options.base_url = server.url();
    options.model = "claude-test";
    options.api_key_env = "TILESMITH_TEST_ANTHROPIC_KEY";
    options.sleeper = sleeper.sleeper();
    options.capabilities = std::make_shared<CapabilityCache>();
    options.log_path = dir.path() / "llm_log.jsonl";
  }
  std::unique_ptr<LlmProvider> provider() {
    auto p = make_provider(options);
    if (!p.ok()) ADD_FAILURE() << p.status().to_string();
    return std::move(p).value();
  }
  std::vector<json> bodies() const {
    std::vector<json> out;
    for (const auto& r : server.requests()) out.push_back(json::parse(r.body));
    return out;
  }
};

TEST(AnthropicProvider, ForcesToolUseAndReadsTheToolInput) {
  const std::string secret = "sk-ant-api03-SECRETSECRET";
  tilesmith::testing::ScopedEnv key("TILESMITH_TEST_ANTHROPIC_KEY", secret);
  Fixture f;
  f.server.set_handler([](const httplib::Request&, httplib::Response& res) {
    res.set_content(anthropic_reply(kInput, "tool_use", "Let me think."), "application/json");
  });
  auto p = f.provider();
  EXPECT_EQ(p->provider_name(), "anthropic");
  EXPECT_EQ(p->endpoint(), f.server.url() + "/v1/messages");
  auto r = p->complete(request());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(json::parse(r->text), kInput);
  EXPECT_EQ(r->mode, OutputMode::kToolUse);
  EXPECT_EQ(r->finish_reason, "tool_use");
  EXPECT_EQ(r->usage.input_tokens, 900);
  EXPECT_EQ(r->usage.output_tokens, 200);

  auto seen = f.server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/v1/messages");
  EXPECT_EQ(seen[0].header("x-api-key"), secret);
  EXPECT_EQ(seen[0].header("anthropic-version"), "2023-06-01");
  EXPECT_EQ(seen[0].header("Authorization"), "");
  json body = json::parse(seen[0].body);
  EXPECT_EQ(body["model"], "claude-test");
  EXPECT_EQ(body["max_tokens"], 2000);
  EXPECT_EQ(body["system"], "You tune GEMM kernels.");
  EXPECT_EQ(body["messages"][0]["role"], "user");
  EXPECT_EQ(body["tools"][0]["name"], "tile_configs");
  EXPECT_EQ(body["tools"][0]["input_schema"], json::parse(kSchema));
  EXPECT_EQ(body["tool_choice"], json::parse(R"({"type":"tool","name":"tile_configs"})"));
  EXPECT_FALSE(body.contains("temperature"));

  auto log = read_file(f.options.log_path);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->find(secret), std::string::npos);
  EXPECT_NE(log->find("\"provider\":\"anthropic\""), std::string::npos);
}

TEST(AnthropicProvider, RetriesOverloaded529ThenSucceeds) {
  Fixture f;
  std::atomic<int> calls{0};
  f.server.set_handler([&](const httplib::Request&, httplib::Response& res) {
    if (++calls <= 2) {
      res.status = 529;
      res.set_content(anthropic_error("overloaded_error", "Overloaded"), "application/json");
      return;
    }
    res.set_content(anthropic_reply(kInput), "application/json");
  });
  auto r = f.provider()->complete(request());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->http_attempts, 3);
  EXPECT_EQ(f.sleeper.delays().size(), 2u);
}

TEST(AnthropicProvider, RetriesOnceWithALargerCapAtMaxTokens) {
  Fixture f;
  std::atomic<int> calls{0};
  f.server.set_handler([&](const httplib::Request&, httplib::Response& res) {
    if (++calls == 1) res.set_content(anthropic_reply(nullptr, "max_tokens", "{\"candidates\": [{\"rat"), "application/json");
    else res.set_content(anthropic_reply(kInput), "application/json");
  });
  auto r = f.provider()->complete(request());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->truncated);
  auto bodies = f.bodies();
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[1]["max_tokens"], 4000);
}

TEST(AnthropicProvider, RecordsARefusal) {
  Fixture f;
  f.server.set_handler([](const httplib::Request&, httplib::Response& res) {
    res.set_content(anthropic_reply(nullptr, "refusal", "I won't do that."), "application/json");
  });
  auto r = f.provider()->complete(request());
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->refusal.has_value());
  EXPECT_EQ(*r->refusal, "I won't do that.");
}

TEST(AnthropicProvider, FallsBackToTextWhenToolsAreRejected) {
  Fixture f;
  f.server.set_handler([](const httplib::Request& req, httplib::Response& res) {
    if (json::parse(req.body).contains("tools")) {
      res.status = 400;
      res.set_content(anthropic_error("invalid_request_error", "tools: this endpoint does not support tool use"),
                      "application/json");
      return;
    }
    res.set_content(anthropic_reply(nullptr, "end_turn", "Here you go: " + kInput.dump()), "application/json");
  });
  auto p = f.provider();
  auto r = p->complete(request());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->mode, OutputMode::kText);
  EXPECT_NE(r->text.find("Here you go"), std::string::npos);
  auto bodies = f.bodies();
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_FALSE(bodies[1].contains("tool_choice"));
  EXPECT_NE(bodies[1]["system"].get<std::string>().find("JSON Schema"), std::string::npos);
  ASSERT_TRUE(p->complete(request()).ok());
  EXPECT_FALSE(f.bodies()[2].contains("tools"));  // remembered
}

TEST(AnthropicProvider, UnauthorisedNamesTheVariable) {
  Fixture f;
  f.server.set_handler([](const httplib::Request&, httplib::Response& res) {
    res.status = 401;
    res.set_content(anthropic_error("authentication_error", "invalid x-api-key"), "application/json");
  });
  auto r = f.provider()->complete(request());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("$TILESMITH_TEST_ANTHROPIC_KEY"), std::string::npos);
  EXPECT_NE(r.status().message().find("invalid x-api-key"), std::string::npos);
  EXPECT_EQ(f.server.request_count(), 1u);
}

TEST(AnthropicProvider, AcceptsABaseUrlEndingInV1) {
  ProviderOptions o;
  o.kind = ProviderKind::kAnthropic;
  o.model = "m";
  o.base_url = "http://127.0.0.1:9/v1";
  auto p = make_provider(o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->endpoint(), "http://127.0.0.1:9/v1/messages");
  o.forced_mode = OutputMode::kJsonSchema;
  EXPECT_FALSE(make_provider(o).ok());
}

TEST(ProviderKind, ParsesNamesAndAliases) {
  EXPECT_EQ(*parse_provider_kind("anthropic"), ProviderKind::kAnthropic);
  for (const char* n : {"openai", "vllm", "llama.cpp", "ollama"}) EXPECT_EQ(*parse_provider_kind(n), ProviderKind::kOpenAi);
  EXPECT_FALSE(parse_provider_kind("bard").ok());
  EXPECT_EQ(parse_output_mode("json_object"), OutputMode::kJsonObject);
  EXPECT_FALSE(parse_output_mode("yaml").has_value());
}

}  // namespace
}  // namespace tilesmith::llm
