// The offline proposers' contract on synthetic spaces: distinct, valid, never in the
// history, deterministic; exhaustive covers the space exactly once; the factory.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/tuner/search/evolve_parts_fixtures.h"
#include "tuner/search/evolve_proposer.h"
#include "tuner/search/exhaustive_proposer.h"
#include "tuner/search/offline_proposers.h"
#include "tuner/search/random_proposer.h"

namespace tilesmith {
namespace {

using nlohmann::json;

using proposers::detail::fixtures::tiled_ctx;
using proposers::detail::fixtures::tiled_ms;  // the "measured" times
using proposers::detail::fixtures::tiled_space;

std::vector<Trial> measure(const std::vector<Proposal>& proposals, std::vector<Trial> history) {
  for (const auto& p : proposals) {
    Trial t;
    t.config = p.config;
    t.outcome = Outcome::kOk;
    t.score = tiled_ms(p.config);
    history.push_back(t);
  }
  return history;
}

ProposalRequest request(const ParamSpace& space, const std::vector<Trial>& history, int count,
                        std::uint64_t seed) {
  ProposalRequest r;
  r.space = &space;
  r.context = tiled_ctx();
  r.history = &history;
  r.count = count;
  r.seed = seed;
  return r;
}

class EveryProposer : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryProposer, DistinctValidNeverInHistoryDeterministic) {
  ParamSpace space = tiled_space();
  std::vector<Trial> history;
  std::set<Config> seen;
  auto a = make_offline_proposer(GetParam());
  auto b = make_offline_proposer(GetParam());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)->name(), GetParam());
  for (int gen = 0; gen < 8; ++gen) {
    ProposalBatch batch = (*a)->propose(request(space, history, 8, 1000 + gen));
    ASSERT_TRUE(batch.status.ok()) << batch.status.to_string();
    ASSERT_EQ(batch.proposals.size(), 8u) << "generation " << gen;
    EXPECT_EQ(batch.proposer, GetParam());
    // A second proposer with the same seed and history proposes the same.
    ProposalBatch again = (*b)->propose(request(space, history, 8, 1000 + gen));
    ASSERT_EQ(again.proposals.size(), batch.proposals.size());
    for (size_t i = 0; i < batch.proposals.size(); ++i)
      EXPECT_EQ(again.proposals[i].config, batch.proposals[i].config);
    for (const auto& p : batch.proposals) {
      EXPECT_TRUE(space.validate(p.config, tiled_ctx()).ok())
          << space.validate(p.config, tiled_ctx()).message();
      EXPECT_TRUE(seen.insert(p.config).second)
          << "repeated or in history: " << config_to_json_text(p.config);
      EXPECT_FALSE(p.rationale.empty());
    }
    history = measure(batch.proposals, history);
  }
}

TEST_P(EveryProposer, HistoryWithFailuresAndForeignConfigs) {
  ParamSpace space = tiled_space();
  std::vector<Trial> history;
  auto all = space.enumerate_valid(tiled_ctx());
  // Every fifth valid point failed in some way; plus configs from elsewhere (an LLM).
  const Outcome failures[] = {
      Outcome::kCompileError, Outcome::kWrongResult,   Outcome::kTimeout,    Outcome::kCrash,
      Outcome::kInvalid,      Outcome::kResourceError, Outcome::kLaunchError};
  for (size_t i = 0; i < all.size(); i += 5) {
    Trial t;
    t.config = space.to_config(all[i]);
    t.outcome = failures[(i / 5) % 7];
    history.push_back(t);
  }
  for (size_t i = 2; i < all.size(); i += 37) {
    Trial t;
    t.config = space.to_config(all[i]);
    t.outcome = Outcome::kOk;
    t.score = tiled_ms(t.config);
    history.push_back(t);
  }
  Trial foreign;
  foreign.config = {{"BM", 96}, {"NOT_A_PARAM", 1}};
  history.push_back(foreign);
  std::set<Config> tried;
  for (const auto& t : history) tried.insert(t.config);
  auto p = make_offline_proposer(GetParam());
  ASSERT_TRUE(p.ok());
  ProposalBatch batch = (*p)->propose(request(space, history, 16, 5));
  ASSERT_TRUE(batch.status.ok()) << batch.status.to_string();
  EXPECT_EQ(batch.proposals.size(), 16u);
  std::set<Config> distinct;
  for (const auto& prop : batch.proposals) {
    EXPECT_FALSE(tried.count(prop.config));
    EXPECT_TRUE(distinct.insert(prop.config).second);
    EXPECT_TRUE(space.validate(prop.config, tiled_ctx()).ok());
  }
}

TEST_P(EveryProposer, RunsOutGracefully) {
  // Six valid points: asking for more gives what is left, then a failed_precondition.
  auto space = ParamSpace::from_json(json::parse(R"js({
    "parameters": [{"name": "A", "values": [1, 2, 3]}, {"name": "B", "values": [1, 2, 3]}],
    "constraints": ["A != B"]})js"));
  ASSERT_TRUE(space.ok());
  auto p = make_offline_proposer(GetParam());
  ASSERT_TRUE(p.ok());
  std::vector<Trial> history;
  ProposalBatch first = (*p)->propose(request(*space, history, 4, 1));
  ASSERT_TRUE(first.status.ok());
  ASSERT_EQ(first.proposals.size(), 4u);
  history = measure({}, history);
  for (const auto& prop : first.proposals) {
    Trial t;
    t.config = prop.config;
    t.outcome = Outcome::kOk;
    t.score = double(prop.config.at("A") * 10 + prop.config.at("B"));
    history.push_back(t);
  }
  ProposalBatch second = (*p)->propose(request(*space, history, 4, 2));
  ASSERT_TRUE(second.status.ok()) << second.status.to_string();
  EXPECT_EQ(second.proposals.size(), 2u);
  for (const auto& prop : second.proposals) {
    Trial t;
    t.config = prop.config;
    t.outcome = Outcome::kCompileError;
    history.push_back(t);
  }
  ProposalBatch third = (*p)->propose(request(*space, history, 4, 3));
  EXPECT_TRUE(third.proposals.empty());
  EXPECT_EQ(third.status.code(), StatusCode::kFailedPrecondition);
  // A request without a space is refused.
  ProposalRequest bad;
  EXPECT_EQ((*p)->propose(bad).status.code(), StatusCode::kInvalidArgument);
  // So is a context that lacks a constant the space reads.
  ProposalRequest no_ctx = request(tiled_space(), history, 4, 1);
  ParamSpace tiled = tiled_space();
  no_ctx.space = &tiled;
  no_ctx.context = {};
  EXPECT_EQ((*p)->propose(no_ctx).status.code(), StatusCode::kFailedPrecondition);
}

TEST_P(EveryProposer, SpacesTooLargeToEnumerate) {
  // 10^9 points, about 1 in 10 valid: sampled, not enumerated.
  json j = json::parse(
      R"js({"parameters": [], "constraints": ["(A + B + C + D + E + F + G + H + I) % 10 == 3"]})js");
  for (const char* n : {"A", "B", "C", "D", "E", "F", "G", "H", "I"})
    j["parameters"].push_back({{"name", n}, {"values", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}});
  auto space = ParamSpace::from_json(j);
  ASSERT_TRUE(space.ok());
  auto p = make_offline_proposer(GetParam());
  ASSERT_TRUE(p.ok());
  std::vector<Trial> history;
  std::set<Config> seen;
  for (int gen = 0; gen < 4; ++gen) {
    ProposalRequest r = request(*space, history, 8, 77 + gen);
    r.context = {};
    ProposalBatch batch = (*p)->propose(r);
    ASSERT_TRUE(batch.status.ok()) << batch.status.to_string();
    ASSERT_EQ(batch.proposals.size(), 8u);
    for (const auto& prop : batch.proposals) {
      EXPECT_TRUE(space->validate(prop.config, {}).ok());
      EXPECT_TRUE(seen.insert(prop.config).second);
      Trial t;
      t.config = prop.config;
      t.outcome = Outcome::kOk;
      double sum = 0;
      for (const auto& [k, v] : prop.config) sum += double(v) * (k[0] - 'A' + 1);
      t.score = 1 + sum / 100;
      history.push_back(t);
    }
  }
}

TEST_P(EveryProposer, NeverProposesWhatIsBeingMeasured) {
  // Overlapped generations: a generation's candidates are still being measured when the
  // next is proposed. Told what they are (pending), a proposer leaves them out, in the
  // initial design and after it, on an enumerated space and on one it samples.
  ParamSpace space = tiled_space();
  std::vector<Trial> history;
  auto p = make_offline_proposer(GetParam());
  ASSERT_TRUE(p.ok());
  for (int gen = 0; gen < 6; ++gen) {
    // What the proposer would propose without being told, told as pending.
    auto fresh = make_offline_proposer(GetParam());
    ProposalBatch would = (*fresh)->propose(request(space, history, 8, 500 + gen));
    ASSERT_EQ(would.proposals.size(), 8u);
    std::vector<Config> pending;
    for (const auto& q : would.proposals) pending.push_back(q.config);
    ProposalRequest r = request(space, history, 8, 500 + gen);
    r.pending = &pending;
    ProposalBatch batch = (*p)->propose(r);
    ASSERT_TRUE(batch.status.ok()) << batch.status.to_string();
    ASSERT_EQ(batch.proposals.size(), 8u) << "generation " << gen;
    const std::set<Config> measuring(pending.begin(), pending.end());
    for (const auto& q : batch.proposals)
      EXPECT_FALSE(measuring.count(q.config)) << "being measured: " << config_to_json_text(q.config);
    history = measure(would.proposals, history);  // their rows come in
  }
  // A space that must be sampled (10^9 points) leaves them out too.
  json j = json::parse(R"js({"parameters": [], "constraints": ["(A + B + C + D + E + F + G + H + I) % 10 == 3"]})js");
  for (const char* n : {"A", "B", "C", "D", "E", "F", "G", "H", "I"})
    j["parameters"].push_back({{"name", n}, {"values", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}});
  auto large = ParamSpace::from_json(j);
  ASSERT_TRUE(large.ok());
  std::vector<Trial> none;
  ProposalRequest r = request(*large, none, 8, 9);
  r.context = {};
  ProposalBatch would = (*make_offline_proposer(GetParam()))->propose(r);
  ASSERT_EQ(would.proposals.size(), 8u);
  std::vector<Config> pending;
  for (const auto& q : would.proposals) pending.push_back(q.config);
  r.pending = &pending;
  ProposalBatch batch = (*make_offline_proposer(GetParam()))->propose(r);
  ASSERT_EQ(batch.proposals.size(), 8u);
  const std::set<Config> measuring(pending.begin(), pending.end());
  for (const auto& q : batch.proposals) EXPECT_FALSE(measuring.count(q.config));
}

INSTANTIATE_TEST_SUITE_P(Offline, EveryProposer,
                         ::testing::Values("random", "exhaustive", "evolve"),
                         [](const auto& info) { return info.param; });

TEST(ExhaustiveProposer, CoversEveryValidPointExactlyOnceInOrder) {
  ParamSpace space = tiled_space();
  auto all = space.enumerate_valid(tiled_ctx());
  ASSERT_GT(all.size(), 100u);
  ExhaustiveProposer p;
  std::vector<Trial> history;
  std::vector<PointValues> got;
  for (int guard = 0; guard < 1000; ++guard) {
    ProposalBatch batch = p.propose(request(space, history, 64, 0));
    if (batch.proposals.empty()) {
      EXPECT_EQ(batch.status.code(), StatusCode::kFailedPrecondition);
      break;
    }
    for (const auto& prop : batch.proposals) got.push_back(*space.from_config(prop.config));
    history = measure(batch.proposals, history);
  }
  EXPECT_EQ(got, all);
}

TEST(RandomProposer, SeedsMatterAndCoverageIsBroad) {
  ParamSpace space = tiled_space();
  std::vector<Trial> history;
  RandomProposer p;
  auto a = p.propose(request(space, history, 8, 1));
  auto b = p.propose(request(space, history, 8, 2));
  std::set<Config> sa, sb;
  for (const auto& x : a.proposals) sa.insert(x.config);
  for (const auto& x : b.proposals) sb.insert(x.config);
  EXPECT_NE(sa, sb);
  // Uniform: over 400 draws every value of every parameter that has valid points shows up.
  std::map<std::string, std::set<std::int64_t>> values;
  for (int s = 0; s < 50; ++s)
    for (const auto& x : p.propose(request(space, history, 8, 100 + s)).proposals)
      for (const auto& [k, v] : x.config) values[k].insert(v);
  for (const auto& param : space.parameters())
    EXPECT_EQ(values[param.name].size(), param.values.size()) << param.name;
}

TEST(OfflineProposers, Factory) {
  auto names = offline_proposer_names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), default_offline_proposer());
  for (const auto& n : names) {
    auto p = make_offline_proposer(n);
    ASSERT_TRUE(p.ok()) << n;
    EXPECT_EQ((*p)->name(), n);
  }
  EXPECT_EQ((*make_offline_proposer("grid"))->name(), "exhaustive");
  EXPECT_EQ((*make_offline_proposer("surrogate"))->name(), "evolve");
  auto bad = make_offline_proposer("llm");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  EXPECT_NE(bad.status().message().find("evolve"), std::string::npos);
}

// The template's seeds open the initial design, in their order, leaving out the ones that are not
// valid for the problem or were tried already; the rest of the batch is the space-filling sample.
TEST(EvolveProposer, InitialDesignStartsWithTheValidUntriedSeeds) {
  ParamSpace space = tiled_space();
  const Config tried{{"BM", 64}, {"BN", 64}, {"TM", 4}, {"TN", 4}, {"BK", 16}, {"DB", 1}, {"VEC", 2}};
  const Config invalid{{"BM", 32}, {"BN", 32}, {"TM", 8}, {"TN", 8}, {"BK", 8}, {"DB", 1}, {"VEC", 1}};  // 16 threads
  const Config a{{"BM", 128}, {"BN", 128}, {"TM", 8}, {"TN", 8}, {"BK", 32}, {"DB", 1}, {"VEC", 4}};
  const Config b{{"BM", 128}, {"BN", 64}, {"TM", 4}, {"TN", 4}, {"BK", 16}, {"DB", 0}, {"VEC", 1}};
  ASSERT_TRUE(space.validate(a, tiled_ctx()).ok());
  ASSERT_TRUE(space.validate(b, tiled_ctx()).ok());
  ASSERT_FALSE(space.validate(invalid, tiled_ctx()).ok());
  const std::vector<Config> seeds = {invalid, a, tried, b};
  std::vector<Trial> history(1);
  history[0].config = tried;
  history[0].outcome = Outcome::kOk;
  history[0].score = tiled_ms(tried);
  ProposalRequest r = request(space, history, 5, 11);
  r.seeds = &seeds;
  auto batch = EvolveProposer().propose(r);
  ASSERT_TRUE(batch.status.ok()) << batch.status.to_string();
  ASSERT_EQ(batch.proposals.size(), 5u);
  EXPECT_EQ(batch.proposals[0].config, a);
  EXPECT_EQ(batch.proposals[1].config, b);
  EXPECT_NE(batch.proposals[0].rationale.find("seed"), std::string::npos);
  for (size_t i = 2; i < batch.proposals.size(); ++i) {
    EXPECT_NE(batch.proposals[i].config, a);
    EXPECT_NE(batch.proposals[i].config, b);
    EXPECT_NE(batch.proposals[i].config, tried);
    EXPECT_NE(batch.proposals[i].rationale.find("space-filling"), std::string::npos);
  }
  // Once measured, the seeds are not proposed again.
  history = measure(batch.proposals, history);
  ProposalRequest again = request(space, history, 4, 12);
  again.seeds = &seeds;
  auto next = EvolveProposer().propose(again);
  ASSERT_TRUE(next.status.ok()) << next.status.to_string();
  ASSERT_EQ(next.proposals.size(), 4u);
  for (const auto& p : next.proposals) {
    EXPECT_NE(p.config, a);
    EXPECT_NE(p.config, b);
  }
}

TEST(EvolveProposer, StaysAwayFromFailingRegions) {
  // Everything with DB == 0 fails to compile. Once that is in the history, evolve should
  // hardly propose DB == 0 again, while it is half of the valid space.
  ParamSpace space = tiled_space();
  EvolveProposer p;
  std::vector<Trial> history;
  int db0 = 0, total = 0;
  for (int gen = 0; gen < 8; ++gen) {
    auto batch = p.propose(request(space, history, 8, 300 + gen));
    ASSERT_TRUE(batch.status.ok());
    for (const auto& prop : batch.proposals) {
      Trial t;
      t.config = prop.config;
      if (prop.config.at("DB") == 0) {
        t.outcome = Outcome::kCompileError;
        if (gen >= 4) ++db0;
      } else {
        t.outcome = Outcome::kOk;
        t.score = tiled_ms(prop.config);
      }
      if (gen >= 4) ++total;
      history.push_back(t);
    }
  }
  EXPECT_LE(db0, total / 8) << db0 << " of " << total << " late proposals in the failing half";
}

TEST(EvolveProposer, PassesOverCopiesOfParametersWithNoEffect) {
  // SW changes nothing (the smooth objective ignores it), as a tile-order swizzle does on
  // some problems. Once pairs of measurements show that, evolve should stop measuring
  // configurations that differ from a measured one only in SW; without the rule its
  // local search, which ranks by predicted time, keeps trying the best's SW copies.
  auto with_sw = ParamSpace::from_json(json::parse(R"js({
    "parameters": [
      {"name": "BM", "values": [32, 64, 128]}, {"name": "BN", "values": [32, 64, 128]},
      {"name": "TM", "values": [1, 2, 4, 8]}, {"name": "TN", "values": [1, 2, 4, 8]},
      {"name": "BK", "values": [8, 16, 32]}, {"name": "DB", "values": [0, 1]},
      {"name": "VEC", "values": [1, 2, 4, 8]}, {"name": "SW", "values": [1, 2, 4, 8]}
    ],
    "derived": [{"name": "THREADS", "expr": "(BM // TM) * (BN // TN)"}],
    "constraints": ["THREADS >= WARP_SIZE", "THREADS <= 512", "BK % VEC == 0", "TN % VEC == 0 or VEC == 1"]
  })js"));
  ASSERT_TRUE(with_sw.ok());
  auto copies = [&](int no_effect_pairs) {
    EvolveOptions o;
    o.no_effect_pairs = no_effect_pairs;
    o.stall_generations = 0;  // the rule holds until a stall; keep it on throughout
    EvolveProposer p(o);
    std::vector<Trial> history;
    int n = 0;
    for (int gen = 0; gen < 10; ++gen) {
      auto batch = p.propose(request(*with_sw, history, 8, 500 + gen));
      EXPECT_TRUE(batch.status.ok());
      for (const auto& prop : batch.proposals) {
        bool copy = false;
        for (const auto& t : history) {
          Config a = t.config, b = prop.config;
          a.erase("SW");
          b.erase("SW");
          copy = copy || a == b;
        }
        n += copy;
      }
      history = measure(batch.proposals, history);
    }
    return n;
  };
  const int with_rule = copies(2), without = copies(0);
  std::printf("[ copies ] with the rule %d, without %d of 80\n", with_rule, without);
  EXPECT_LE(with_rule, 4);
  EXPECT_LT(with_rule, without);
}

TEST(EvolveProposer, FindsTheOptimumOfASmoothObjective) {
  ParamSpace space = tiled_space();
  auto all = space.enumerate_valid(tiled_ctx());
  double best = 1e9;
  for (const auto& pt : all) best = std::min(best, tiled_ms(space.to_config(pt)));
  EvolveProposer p;
  std::vector<Trial> history;
  double found = 1e9;
  for (int gen = 0; gen < 10; ++gen) {
    auto batch = p.propose(request(space, history, 8, 900 + gen));
    ASSERT_TRUE(batch.status.ok());
    for (const auto& prop : batch.proposals) found = std::min(found, tiled_ms(prop.config));
    history = measure(batch.proposals, history);
  }
  // 80 of ~1000 points; random search would have about a 1 in 12 chance at the optimum.
  EXPECT_LE(found, best * 1.0001) << "best found " << found << ", optimum " << best;
}

TEST(EvolveProposer, EstimatesConvergenceOnceItsModelStands) {
  // The smooth objective: the estimate is absent unless asked and during the initial
  // design, a probability afterwards, low while the search still improves and high once
  // it holds the optimum and has stood on it for a while.
  ParamSpace space = tiled_space();
  auto all = space.enumerate_valid(tiled_ctx());
  double best = 1e9;
  for (const auto& pt : all) best = std::min(best, tiled_ms(space.to_config(pt)));
  EvolveProposer p;
  std::vector<Trial> history;
  std::vector<double> estimates;
  bool at_optimum_when_sure = true;
  for (int gen = 0; gen < 16; ++gen) {
    ProposalRequest r = request(space, history, 8, 700 + gen);
    EXPECT_FALSE(p.propose(r).converged.has_value()) << "not asked";
    r.convergence_margin = 0.05;
    auto batch = p.propose(r);
    ASSERT_TRUE(batch.status.ok());
    if (gen < 2) {
      EXPECT_FALSE(batch.converged.has_value()) << "generation " << gen << " is the initial design";
    } else {
      ASSERT_TRUE(batch.converged.has_value()) << "generation " << gen;
      EXPECT_GE(*batch.converged, 0.0);
      EXPECT_LE(*batch.converged, 1.0);
      estimates.push_back(*batch.converged);
      double found = 1e9;
      for (const auto& t : history) found = std::min(found, *t.score);
      if (*batch.converged >= 0.9 && found > best * 1.05) at_optimum_when_sure = false;
    }
    history = measure(batch.proposals, history);
  }
  EXPECT_LT(estimates.front(), 0.5) << "just after the initial design";
  EXPECT_GE(estimates.back(), 0.9) << "after 128 evaluations of a smooth ~1000-point space";
  EXPECT_TRUE(at_optimum_when_sure) << "an estimate of 0.9 or more came before the best was within 5%";
}

}  // namespace
}  // namespace tilesmith
