// Warm start: seeds read from best_config.json files and folders (order, dedup, errors),
// and WarmStartProposer around a real offline proposer (exhaustive) on a small space.

#include "tuner/search/warm_start.h"

#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/process.h"
#include "tests/tuner/search/seed_test_helpers.h"
#include "tuner/search/offline_proposers.h"
#include "tuner/search/warm_start_proposer.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using tilesmith::testing::cfg;
using tilesmith::testing::configs_of;
using tilesmith::testing::contains;
using tilesmith::testing::fresh_dir;

BestEntry entry(const std::string& device, const std::string& tmpl, std::int64_t size, Config config) {
  BestEntry e;
  e.device_fingerprint = device + "|sm_90";
  e.device = json{{"name", device}, {"arch", "sm_90"}};
  e.template_name = tmpl;
  e.template_hash = "0123456789abcdef";
  e.problem.m = e.problem.n = e.problem.k = size;
  e.config = std::move(config);
  return e;
}

// ---------------------------------------------------------------- reading the seeds

TEST(WarmStartSeeds, SameDeviceFirstThenFileOrderEachConfigOnce) {
  const fs::path dir = fresh_dir("warm_start_seeds");
  ASSERT_TRUE(write_best_config(dir / "best_config.json",
                                {entry("GPU B", "t", 2048, cfg(64, 64, 2)), entry("GPU A", "t", 4096, cfg(128, 64, 4)),
                                 entry("GPU A", "other", 4096, cfg(32, 32, 1)), entry("GPU B", "t", 1024, cfg(128, 64, 4)),
                                 entry("GPU A", "t", 1024, cfg(32, 64, 1))})
                  .ok());
  auto file = load_warm_start(dir / "best_config.json");
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ(file->path, dir / "best_config.json");
  EXPECT_EQ(file->entries.size(), 5u);

  auto on_a = warm_start_seeds({*file}, "t", "GPU A");
  EXPECT_EQ(configs_of(on_a), (std::vector<Config>{cfg(128, 64, 4), cfg(32, 64, 1), cfg(64, 64, 2)}))
      << "GPU A's winners first in file order, then GPU B's; 128/64/4 once";
  ASSERT_EQ(on_a.size(), 3u);
  EXPECT_EQ(on_a[0].origin, "winner for 4096x4096x4096 fp32 NN in " + (dir / "best_config.json").string());
  EXPECT_TRUE(contains(on_a[2].origin, "2048x2048x2048 fp32 NN on GPU B in ")) << on_a[2].origin;

  auto on_b = warm_start_seeds({*file}, "t", "GPU B");
  EXPECT_EQ(configs_of(on_b), (std::vector<Config>{cfg(64, 64, 2), cfg(128, 64, 4), cfg(32, 64, 1)}));
  EXPECT_TRUE(contains(on_b[1].origin, "1024x1024x1024")) << "the kept duplicate is GPU B's entry: " << on_b[1].origin;

  EXPECT_EQ(configs_of(warm_start_seeds({*file}, "other", "GPU C")), (std::vector<Config>{cfg(32, 32, 1)}))
      << "any device will do";
  EXPECT_TRUE(warm_start_seeds({*file}, "absent", "GPU A").empty());
}

TEST(WarmStartSeeds, AResultsFolderAndSeveralFiles) {
  const fs::path dir = fresh_dir("warm_start_folder");
  fs::create_directories(dir / "run1");
  fs::create_directories(dir / "run2");
  ASSERT_TRUE(write_best_config(dir / "run1" / "best_config.json", {entry("GPU B", "t", 4096, cfg(64, 64, 2))}).ok());
  ASSERT_TRUE(write_best_config(dir / "run2" / "best_config.json",
                                {entry("GPU B", "t", 2048, cfg(32, 64, 1)), entry("GPU A", "t", 2048, cfg(128, 64, 4))})
                  .ok());
  auto run1 = load_warm_start(dir / "run1");
  ASSERT_TRUE(run1.ok()) << run1.status().to_string();
  EXPECT_EQ(run1->path, dir / "run1" / "best_config.json") << "a folder means its best_config.json";
  auto run2 = load_warm_start(dir / "run2");
  ASSERT_TRUE(run2.ok()) << run2.status().to_string();
  EXPECT_EQ(configs_of(warm_start_seeds({*run1, *run2}, "t", "GPU A")),
            (std::vector<Config>{cfg(128, 64, 4), cfg(64, 64, 2), cfg(32, 64, 1)}))
      << "this device's winner of the second file comes before the first file's other-device winner";
}

TEST(WarmStartSeeds, MissingAndGarbageFilesAreExplained) {
  const fs::path dir = fresh_dir("warm_start_errors");
  auto missing = load_warm_start(dir / "absent");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(contains(missing.status().message(), (dir / "absent").string())) << missing.status().message();
  EXPECT_TRUE(contains(missing.status().message(), "no such file or folder")) << missing.status().message();
  EXPECT_TRUE(contains(missing.status().message(), "give the best_config.json")) << missing.status().message();

  fs::create_directories(dir / "empty_results");
  auto folder = load_warm_start(dir / "empty_results");
  ASSERT_FALSE(folder.ok());
  EXPECT_TRUE(contains(folder.status().message(), (dir / "empty_results").string() + " is a folder without a "
                                                                                     "best_config.json"))
      << folder.status().message();

  std::ofstream(dir / "garbage.json") << "{\"schema\": \"tilesmith.best_config/1\", \"entries\": [";
  auto garbage = load_warm_start(dir / "garbage.json");
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().code(), StatusCode::kParseError);
  EXPECT_TRUE(contains(garbage.status().message(), (dir / "garbage.json").string() + " is not valid JSON"))
      << garbage.status().message();
  EXPECT_TRUE(contains(garbage.status().message(), "give the best_config.json")) << garbage.status().message();

  std::ofstream(dir / "history.json") << "{\"rows\": []}";
  auto other = load_warm_start(dir / "history.json");
  ASSERT_FALSE(other.ok());
  EXPECT_TRUE(contains(other.status().message(), "is not a tilesmith best_config file")) << other.status().message();

  std::ofstream(dir / "bad_entry.json") << R"({"schema": "tilesmith.best_config/1", "entries": [{"template": {}}]})";
  auto bad = load_warm_start(dir / "bad_entry.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.status().message(), (dir / "bad_entry.json").string() + ": entry 0"))
      << bad.status().message();
}

// ---------------------------------------------------------------- the proposer

// 3 * 3 * 3 = 27 points, those with BM * BN / TM <= 4096 valid.
ParamSpace small_space() {
  auto s = ParamSpace::from_json(json::parse(R"js({
    "parameters": [
      {"name": "BM", "values": [32, 64, 128]}, {"name": "BN", "values": [32, 64, 128]},
      {"name": "TM", "values": [1, 2, 4]}
    ],
    "constraints": ["BM * BN // TM <= LIMIT"]
  })js"));
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return *s;
}

ProposalRequest request(const ParamSpace& space, const std::vector<Trial>& history, int count,
                        std::uint64_t seed = 7) {
  ProposalRequest r;
  r.space = &space;
  r.context.constants = {{"LIMIT", 4096}};
  r.history = &history;
  r.count = count;
  r.seed = seed;
  return r;
}

// Six seeds: the second breaks the constraint (128*128/1), the fourth is out of domain.
std::vector<WarmStartSeed> six_seeds() {
  return {{cfg(64, 64, 1), "winner for A"},
          {cfg(128, 128, 1), "winner for B"},
          {cfg(128, 64, 2), "winner for C"},
          {cfg(96, 64, 2), "winner for D"},
          {cfg(32, 32, 1), "winner for E"},
          {cfg(128, 128, 4), "winner for F"}};
}

struct Wrapped {
  std::unique_ptr<WarmStartProposer> proposer;
  std::vector<std::string> events;
};

std::unique_ptr<Wrapped> wrap(std::vector<WarmStartSeed> seeds) {
  auto w = std::make_unique<Wrapped>();
  auto inner = make_offline_proposer("exhaustive");
  EXPECT_TRUE(inner.ok());
  WarmStartOptions o;
  o.label = "t";
  o.on_event = [events = &w->events](const std::string& line) { events->push_back(line); };
  w->proposer = std::make_unique<WarmStartProposer>(std::move(seeds), std::move(inner).value(), std::move(o));
  return w;
}

void measure(const ProposalBatch& batch, std::vector<Trial>& history) {
  for (const auto& p : batch.proposals) history.push_back({p.config, Outcome::kOk, 1.0, p.proposer, ""});
}

TEST(WarmStartProposer, ValidUnseenSeedsFirstInBatchesOfCountThenTheWrappedProposer) {
  const ParamSpace space = small_space();
  auto w = wrap(six_seeds());
  EXPECT_EQ(w->proposer->name(), "warm-start+exhaustive");
  std::vector<Trial> history;
  const ProposalRequest req = request(space, history, 2);

  ProposalBatch first = w->proposer->propose(req);
  ASSERT_TRUE(first.status.ok()) << first.status.to_string();
  EXPECT_EQ(first.proposer, "warm-start");
  ASSERT_EQ(first.proposals.size(), 2u);
  EXPECT_EQ(first.proposals[0].config, cfg(64, 64, 1));
  EXPECT_EQ(first.proposals[1].config, cfg(128, 64, 2)) << "the invalid 128x128x1 is skipped";
  for (const auto& p : first.proposals) EXPECT_EQ(p.proposer, "warm-start");
  EXPECT_EQ(first.proposals[0].rationale, "warm start: winner for A");
  ASSERT_EQ(w->events.size(), 1u);
  EXPECT_TRUE(contains(w->events[0], "t: warm start: 2 of 6 seed(s) skipped")) << w->events[0];
  EXPECT_TRUE(contains(w->events[0], "first: winner for B: ")) << w->events[0];
  measure(first, history);

  ProposalBatch second = w->proposer->propose(req);
  EXPECT_EQ(second.proposer, "warm-start");
  ASSERT_EQ(second.proposals.size(), 2u);
  EXPECT_EQ(second.proposals[0].config, cfg(32, 32, 1));
  EXPECT_EQ(second.proposals[1].config, cfg(128, 128, 4));
  measure(second, history);
  EXPECT_EQ(w->events.size(), 1u) << "the skipped seeds are reported once";

  // No seed left: the wrapped proposer answers, exactly as it would on its own.
  ProposalBatch third = w->proposer->propose(req);
  auto alone = make_offline_proposer("exhaustive");
  ASSERT_TRUE(alone.ok());
  ProposalBatch expected = (*alone)->propose(req);
  EXPECT_EQ(third.proposer, "exhaustive");
  ASSERT_EQ(third.proposals.size(), expected.proposals.size());
  ASSERT_EQ(third.proposals.size(), 2u);
  for (std::size_t i = 0; i < third.proposals.size(); ++i) {
    EXPECT_EQ(third.proposals[i].config, expected.proposals[i].config);
    EXPECT_EQ(third.proposals[i].rationale, expected.proposals[i].rationale);
    EXPECT_EQ(third.proposals[i].proposer, expected.proposals[i].proposer);
  }
}

TEST(WarmStartProposer, SeedsAlreadyTriedAreNotProposedAgain) {
  const ParamSpace space = small_space();
  auto w = wrap(six_seeds());
  // A resumed run: the first seed was measured, the third one failed, before the stop.
  std::vector<Trial> history{{cfg(64, 64, 1), Outcome::kOk, 2.0, "warm-start", ""},
                             {cfg(128, 64, 2), Outcome::kCrash, std::nullopt, "warm-start", "in flight"}};
  ProposalBatch b = w->proposer->propose(request(space, history, 8));
  EXPECT_EQ(b.proposer, "warm-start");
  ASSERT_EQ(b.proposals.size(), 2u) << "only the valid seeds not in the history, even with room for more";
  EXPECT_EQ(b.proposals[0].config, cfg(32, 32, 1));
  EXPECT_EQ(b.proposals[1].config, cfg(128, 128, 4));
}

TEST(WarmStartProposer, OnlyInvalidSeedsMeansTheWrappedProposerFromTheStart) {
  const ParamSpace space = small_space();
  auto w = wrap({{cfg(128, 128, 1), "winner for B"}, {{{"BM", 64}}, "winner for G"}});
  std::vector<Trial> history;
  ProposalBatch b = w->proposer->propose(request(space, history, 3));
  EXPECT_EQ(b.proposer, "exhaustive");
  EXPECT_EQ(b.proposals.size(), 3u);
  ASSERT_EQ(w->events.size(), 1u);
  EXPECT_TRUE(contains(w->events[0], "2 of 2 seed(s) skipped")) << w->events[0];
}

// Seeds from a set's related problems that do not fit are dropped without an event; the
// others are still counted and reported as before.
TEST(WarmStartProposer, QuietSeedsThatDoNotFitAreDroppedWithoutAWord) {
  const ParamSpace space = small_space();
  std::vector<WarmStartSeed> seeds = six_seeds();
  seeds[1].quiet_if_invalid = true;  // 128x128x1: invalid
  seeds[2].quiet_if_invalid = true;  // 128x64x2: valid, still proposed
  auto w = wrap(seeds);
  std::vector<Trial> history;
  ProposalBatch b = w->proposer->propose(request(space, history, 8));
  ASSERT_EQ(b.proposals.size(), 4u);
  EXPECT_EQ(b.proposals[1].config, cfg(128, 64, 2));
  ASSERT_EQ(w->events.size(), 1u);
  EXPECT_TRUE(contains(w->events[0], "t: warm start: 1 of 4 seed(s) skipped")) << w->events[0];
  EXPECT_TRUE(contains(w->events[0], "first: winner for D: ")) << w->events[0];

  for (auto& s : seeds) s.quiet_if_invalid = true;
  auto quiet = wrap(seeds);
  ProposalBatch q = quiet->proposer->propose(request(space, history, 8));
  EXPECT_EQ(q.proposals.size(), 4u);
  EXPECT_TRUE(quiet->events.empty()) << quiet->events[0];
}

TEST(WarmStartProposer, SameHistorySameProposals) {
  const ParamSpace space = small_space();
  auto once = wrap(six_seeds());
  auto again = wrap(six_seeds());
  std::vector<Trial> a, b;
  for (int call = 0; call < 5; ++call) {
    ProposalRequest ra = request(space, a, 3, 11 + static_cast<std::uint64_t>(call));
    ProposalRequest rb = request(space, b, 3, 11 + static_cast<std::uint64_t>(call));
    ra.generation = rb.generation = call;
    ProposalBatch x = once->proposer->propose(ra);
    // A proposer that has answered before (as in a long run) and a new one (as after a
    // resume) agree.
    ProposalBatch y = again->proposer->propose(rb);
    ProposalBatch z = again->proposer->propose(rb);
    ASSERT_EQ(x.proposals.size(), y.proposals.size()) << "call " << call;
    ASSERT_EQ(y.proposals.size(), z.proposals.size()) << "call " << call;
    EXPECT_EQ(x.proposer, y.proposer);
    for (std::size_t i = 0; i < x.proposals.size(); ++i) {
      EXPECT_EQ(x.proposals[i].config, y.proposals[i].config) << "call " << call;
      EXPECT_EQ(y.proposals[i].config, z.proposals[i].config) << "call " << call;
      EXPECT_EQ(x.proposals[i].rationale, y.proposals[i].rationale);
      EXPECT_EQ(x.proposals[i].proposer, y.proposals[i].proposer);
    }
    measure(x, a);
    measure(y, b);
  }
}

}  // namespace
}  // namespace tilesmith
