// FallbackProposer: the circuit breaker around a real LlmProposer talking to a loopback
// server that goes away and comes back, plus the breaker's rules with plain proposers.

#include "tuner/search/fallback_proposer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/llm/loopback_server.h"
#include "tests/llm/test_support.h"
#include "tuner/search/llm_proposer.h"

namespace tilesmith {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using tilesmith::testing::LoopbackServer;
using tilesmith::testing::openai_reply;
using tilesmith::testing::RecordingSleeper;

// The offline side: valid points in enumeration order, skipping the history. A real
// proposer (not a stand-in for ours), kept small for the test.
class FirstUntriedProposer final : public Proposer {
 public:
  explicit FirstUntriedProposer(std::string name = "first-untried") : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  ProposalBatch propose(const ProposalRequest& req) override {
    ++calls;
    ProposalBatch b;
    b.proposer = name_;
    std::set<Config> tried;
    if (req.history)
      for (const auto& t : *req.history) tried.insert(t.config);
    req.space->for_each_valid(req.context, [&](const PointValues& p) {
      Config c = req.space->to_config(p);
      if (!tried.count(c)) b.proposals.push_back({c, "enumeration"});
      return static_cast<int>(b.proposals.size()) < req.count;
    });
    return b;
  }
  int calls = 0;

 private:
  std::string name_;
};

// A primary that does what it is told, for the breaker's rules.
class ScriptedProposer final : public Proposer {
 public:
  enum class Mode { kGood, kFail, kEmpty, kOne };
  std::string name() const override { return "scripted"; }
  ProposalBatch propose(const ProposalRequest& req) override {
    ++calls;
    ProposalBatch b;
    b.proposer = "scripted";
    if (mode == Mode::kFail) {
      b.status = Status::unavailable("endpoint down");
      return b;
    }
    if (mode == Mode::kEmpty) {
      b.rejected.push_back({"{}", "unusable reply"});
      return b;
    }
    // From the end of the enumeration, so its configs differ from FirstUntried's.
    auto all = req.space->enumerate_valid(req.context);
    int want = mode == Mode::kOne ? 1 : req.count;
    for (auto it = all.rbegin(); it != all.rend() && static_cast<int>(b.proposals.size()) < want; ++it)
      b.proposals.push_back({req.space->to_config(*it), "scripted"});
    return b;
  }
  Mode mode = Mode::kGood;
  int calls = 0;
};

struct Breaker {
  ParamSpace space = tilesmith::testing::small_space();
  std::vector<Trial> history;
  ScriptedProposer* primary;
  FirstUntriedProposer* fallback;
  std::chrono::steady_clock::time_point now = std::chrono::steady_clock::time_point(1h);
  std::vector<std::string> events;
  std::unique_ptr<FallbackProposer> proposer;

  explicit Breaker(FallbackOptions o = {}) {
    auto p = std::make_unique<ScriptedProposer>();
    auto f = std::make_unique<FirstUntriedProposer>();
    primary = p.get();
    fallback = f.get();
    o.clock = [this] { return now; };
    o.on_event = [this](const std::string& e) { events.push_back(e); };
    proposer = std::make_unique<FallbackProposer>(std::move(p), std::move(f), o);
  }
  ProposalBatch propose(int generation, int count = 4) {
    ProposalRequest req;
    req.space = &space;
    req.history = &history;
    req.count = count;
    req.generation = generation;
    return proposer->propose(req);
  }
};

TEST(FallbackProposer, GenerationZeroIsSeededOffline) {
  Breaker b;
  ProposalBatch batch = b.propose(0);
  EXPECT_EQ(b.primary->calls, 0);
  EXPECT_EQ(batch.proposer, "first-untried");
  ASSERT_EQ(batch.proposals.size(), 4u);
  for (const auto& p : batch.proposals) EXPECT_EQ(p.proposer, "first-untried");
  batch = b.propose(1);
  EXPECT_EQ(b.primary->calls, 1);
  EXPECT_EQ(batch.proposer, "scripted");
  for (const auto& p : batch.proposals) EXPECT_EQ(p.proposer, "scripted");
  EXPECT_EQ(b.proposer->name(), "scripted|first-untried");

  FallbackOptions llm_first;
  llm_first.offline_generations = 0;
  Breaker c(llm_first);
  c.propose(0);
  EXPECT_EQ(c.primary->calls, 1);
}

TEST(FallbackProposer, FillsUpWithDistinctFallbackProposals) {
  Breaker b;
  b.primary->mode = ScriptedProposer::Mode::kOne;
  ProposalBatch batch = b.propose(1, 5);
  ASSERT_TRUE(batch.status.ok());
  ASSERT_EQ(batch.proposals.size(), 5u);
  EXPECT_EQ(batch.proposer, "scripted+first-untried");
  EXPECT_EQ(batch.proposals[0].proposer, "scripted");
  std::set<Config> distinct;
  for (size_t i = 0; i < batch.proposals.size(); ++i) {
    distinct.insert(batch.proposals[i].config);
    if (i > 0) {
      EXPECT_EQ(batch.proposals[i].proposer, "first-untried");
    }
  }
  EXPECT_EQ(distinct.size(), 5u);
  EXPECT_FALSE(b.proposer->breaker().open);

  FallbackOptions no_fill;
  no_fill.fill_up = false;
  Breaker c(no_fill);
  c.primary->mode = ScriptedProposer::Mode::kOne;
  EXPECT_EQ(c.propose(1, 5).proposals.size(), 1u);
  EXPECT_EQ(c.fallback->calls, 0);
}

TEST(FallbackProposer, OpensOnFailureBacksOffExponentiallyAndClosesOnSuccess) {
  FallbackOptions o;
  o.initial_backoff_calls = 1;
  o.max_backoff_calls = 4;
  o.initial_backoff_time = 10s;
  o.max_backoff_time = 40s;
  Breaker b(o);
  b.primary->mode = ScriptedProposer::Mode::kFail;

  ProposalBatch batch = b.propose(1);  // fails: fallback serves this generation
  EXPECT_TRUE(batch.status.ok());
  EXPECT_EQ(batch.proposer, "first-untried");
  EXPECT_EQ(batch.proposals.size(), 4u);
  EXPECT_TRUE(b.proposer->breaker().open);
  EXPECT_EQ(b.proposer->breaker().consecutive_failures, 1);
  EXPECT_EQ(b.proposer->breaker().last_primary_status.code(), StatusCode::kUnavailable);
  ASSERT_EQ(b.events.size(), 1u);
  EXPECT_NE(b.events[0].find("endpoint down"), std::string::npos);

  b.propose(2);  // skipped: one call of backoff
  EXPECT_EQ(b.primary->calls, 1);
  b.propose(3);  // calls done, but 10 s have not passed
  EXPECT_EQ(b.primary->calls, 1);
  b.now += 10s;
  b.propose(4);  // half-open: tried, fails again -> 2 calls, 20 s
  EXPECT_EQ(b.primary->calls, 2);
  EXPECT_EQ(b.proposer->breaker().consecutive_failures, 2);
  EXPECT_EQ(b.proposer->breaker().calls_until_retry, 2);
  b.now += 60s;
  b.propose(5);
  b.propose(6);
  EXPECT_EQ(b.primary->calls, 2);
  b.propose(7);  // fails a third time: 4 calls (capped), 40 s (capped)
  EXPECT_EQ(b.primary->calls, 3);
  EXPECT_EQ(b.proposer->breaker().calls_until_retry, 4);
  b.propose(8);
  EXPECT_EQ(b.proposer->breaker().retry_not_before - b.now, 40s);

  b.primary->mode = ScriptedProposer::Mode::kGood;
  b.now += 1h;
  for (int g = 9; g < 13; ++g) b.propose(g);
  EXPECT_EQ(b.primary->calls, 4);  // three more skipped, then back
  EXPECT_FALSE(b.proposer->breaker().open);
  EXPECT_EQ(b.proposer->breaker().consecutive_failures, 0);
  EXPECT_NE(b.events.back().find("is back"), std::string::npos);
  batch = b.propose(13);
  EXPECT_EQ(batch.proposer, "scripted");
  EXPECT_EQ(b.primary->calls, 5);
}

TEST(FallbackProposer, RepeatedEmptyRepliesOpenTheBreaker) {
  FallbackOptions o;
  o.max_empty_batches = 2;
  o.initial_backoff_time = 0s;
  Breaker b(o);
  b.primary->mode = ScriptedProposer::Mode::kEmpty;
  ProposalBatch batch = b.propose(1);
  EXPECT_EQ(batch.proposals.size(), 4u);  // filled up
  EXPECT_EQ(batch.proposer, "first-untried");
  ASSERT_EQ(batch.rejected.size(), 1u);   // the primary's rejection is kept
  // ... and says it was the primary's, though the batch is named after the fallback.
  EXPECT_EQ(batch.rejected[0].proposer, "scripted");
  EXPECT_FALSE(b.proposer->breaker().open);
  b.propose(2);
  EXPECT_TRUE(b.proposer->breaker().open);
  b.propose(3);
  EXPECT_EQ(b.primary->calls, 2);
}

TEST(FallbackProposer, ReportsThePrimaryErrorWhenNothingCanBeProposed) {
  Breaker b;
  b.primary->mode = ScriptedProposer::Mode::kFail;
  // Every valid point already tried: the fallback has nothing either.
  for (const auto& p : b.space.enumerate_valid({})) b.history.push_back({b.space.to_config(p), Outcome::kOk, 1.0});
  ProposalBatch batch = b.propose(1);
  EXPECT_TRUE(batch.proposals.empty());
  EXPECT_EQ(batch.status.code(), StatusCode::kUnavailable);
}

// The real thing: an LlmProposer whose server is down, then comes up on the same port.
TEST(FallbackProposer, TakesOverWhenTheServerIsDownAndReturnsWhenItIsBack) {
  const int port = tilesmith::testing::unused_port();
  RecordingSleeper sleeper;
  llm::ProviderOptions po;
  po.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  po.model = "fake";
  po.sleeper = sleeper.sleeper();
  po.retry.max_retries = 1;
  po.capabilities = std::make_shared<llm::CapabilityCache>();
  auto provider = llm::make_provider(po);
  ASSERT_TRUE(provider.ok());
  LlmProposerOptions lo;
  lo.device.max_threads_per_block = 1024;
  auto llm_proposer = std::make_unique<LlmProposer>(std::move(provider).value(), lo);

  FallbackOptions fo;
  fo.initial_backoff_calls = 1;
  fo.initial_backoff_time = 0s;
  auto offline = std::make_unique<FirstUntriedProposer>("random");
  FallbackProposer proposer(std::move(llm_proposer), std::move(offline), fo);

  ParamSpace space = tilesmith::testing::small_space();
  std::vector<Trial> history;
  auto run = [&](int generation) {
    ProposalRequest req;
    req.space = &space;
    req.history = &history;
    req.count = 3;
    req.generation = generation;
    ProposalBatch b = proposer.propose(req);
    for (const auto& p : b.proposals) history.push_back({p.config, Outcome::kOk, 2.0, p.proposer});
    return b;
  };

  ProposalBatch b = run(0);  // seeded offline
  EXPECT_EQ(b.proposer, "random");
  b = run(1);  // LLM down: connection refused after its retry, fallback serves
  EXPECT_TRUE(b.status.ok());
  EXPECT_EQ(b.proposer, "random");
  EXPECT_EQ(b.proposals.size(), 3u);
  EXPECT_TRUE(proposer.breaker().open);
  EXPECT_NE(proposer.breaker().last_primary_status.message().find("connect"), std::string::npos);
  EXPECT_EQ(sleeper.delays().size(), 1u);

  LoopbackServer server(port);
  ASSERT_TRUE(server.ok());
  server.set_handler([](const httplib::Request&, httplib::Response& res) {
    res.set_content(openai_reply(R"({"candidates":[{"rationale":"big","BLOCK_M":128,"BLOCK_N":64,"THREAD_M":4},
                                                   {"rationale":"bigger","BLOCK_M":128,"BLOCK_N":128,"THREAD_M":8}]})"),
                    "application/json");
  });
  b = run(2);  // still backing off: no request
  EXPECT_EQ(b.proposer, "random");
  EXPECT_EQ(server.request_count(), 0u);
  b = run(3);  // back to the LLM, filled up by the fallback
  EXPECT_EQ(server.request_count(), 1u);
  EXPECT_FALSE(proposer.breaker().open);
  EXPECT_EQ(b.proposer, "llm:fake+random");
  ASSERT_EQ(b.proposals.size(), 3u);
  EXPECT_EQ(b.proposals[0].proposer, "llm:fake");
  EXPECT_EQ(b.proposals[1].proposer, "llm:fake");
  EXPECT_EQ(b.proposals[2].proposer, "random");
}

}  // namespace
}  // namespace tilesmith
