// Priors (tuner/search/prior.h): sources read from a history, a results folder and a Kernel
// Tuner cache; the picks' order, spread and origins; the errors a user sees.

#include "tuner/search/prior.h"

#include <fstream>

#include <gtest/gtest.h>

#include "runtime/replay/kernel_tuner_cache.h"
#include "tests/cli/process.h"
#include "tests/tuner/search/seed_test_helpers.h"
#include "tuner/records/history.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using tilesmith::testing::cfg;
using tilesmith::testing::configs_of;
using tilesmith::testing::contains;
using tilesmith::testing::fresh_dir;

HistoryRow row(const std::string& tmpl, std::int64_t m, const Config& c, std::optional<double> ms,
               Outcome outcome = Outcome::kOk) {
  HistoryRow r;
  r.template_name = tmpl;
  r.m = m, r.n = 4096, r.k = 4096;
  r.dtype = r.c_dtype = "bf16";
  r.layout = "NT";
  r.problem_key = "m" + std::to_string(m);
  r.device_name = "NVIDIA H200";
  r.config = config_to_json_text(c);
  r.config_hash = "h";
  r.outcome = outcome;
  r.median_ms = ms;
  return r;
}

PriorSource source(std::vector<std::pair<Config, double>> rows) {
  PriorSource s;
  s.template_name = "t";
  s.describe = "t, 128x4096x4096 bf16 NT on GPU, from somewhere";
  for (auto& [c, ms] : rows) s.rows.push_back({c, ms});
  return s;
}

TEST(Prior, AHistoryGivesOneSourcePerTemplateAndProblemFastestFirstSuccessesOnly) {
  const fs::path dir = fresh_dir("prior_history");
  {
    auto file = HistoryFile::open(dir / kHistoryFileName);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    for (const HistoryRow& r :
         {row("t", 128, cfg(64, 64, 2), 0.30), row("t", 128, cfg(128, 64, 4), 0.20),
          row("t", 128, cfg(64, 128, 2), std::nullopt, Outcome::kCompileError),
          row("t", 128, cfg(64, 64, 2), 0.25), row("u", 128, cfg(32, 32, 1), 0.50),
          row("t", 4096, cfg(128, 128, 4), 2.0)})
      ASSERT_TRUE(file->append(r).ok());
  }
  for (const fs::path& given : {dir, dir / kHistoryFileName}) {  // the folder or the file
    auto sources = load_prior(given);
    ASSERT_TRUE(sources.ok()) << sources.status().to_string();
    ASSERT_EQ(sources->size(), 3u) << "t at two problems, u at one";
    const PriorSource* t128 = nullptr;
    for (const auto& s : *sources)
      if (s.template_name == "t" && s.rows.size() == 2) t128 = &s;
    ASSERT_NE(t128, nullptr);
    EXPECT_EQ(t128->rows[0].config, cfg(128, 64, 4));
    EXPECT_DOUBLE_EQ(t128->rows[0].time_ms, 0.20);
    EXPECT_EQ(t128->rows[1].config, cfg(64, 64, 2));
    EXPECT_DOUBLE_EQ(t128->rows[1].time_ms, 0.25)
        << "a config measured twice counts at its fastest, once";
    EXPECT_TRUE(contains(t128->describe, "t, 128x4096x4096 bf16 NT on NVIDIA H200, from "))
        << t128->describe;
  }
}

TEST(Prior, AKernelTunerCacheIsOneSourceNamedAfterItsKernel) {
  const fs::path dir = fresh_dir("prior_cache");
  replay::KernelTunerCache cache;
  cache.device_name = "GPU X";
  cache.kernel_name = "Xgemm";
  cache.objective = "time";
  cache.problem_size = {4096, 4096};
  cache.param_names = {"BM", "BN"};
  cache.param_values = {{64, 128}, {64, 128}};
  auto record = [](std::int64_t bm, std::int64_t bn, double ms, Outcome o = Outcome::kOk) {
    replay::KernelTunerRecord r;
    r.point = {bm, bn};
    r.outcome = o;
    r.failure = o == Outcome::kOk ? "" : "CompilationFailedConfig";
    r.time_ms = ms;
    return r;
  };
  cache.records = {record(64, 64, 3.0), record(64, 128, 1.0),
                   record(128, 64, 0, Outcome::kCompileError), record(128, 128, 2.0)};
  std::ofstream(dir / "x.json") << replay::kernel_tuner_cache_to_json_text(cache);
  auto sources = load_prior(dir / "x.json");
  ASSERT_TRUE(sources.ok()) << sources.status().to_string();
  ASSERT_EQ(sources->size(), 1u);
  const PriorSource& s = sources->front();
  EXPECT_EQ(s.template_name, "Xgemm");
  ASSERT_EQ(s.rows.size(), 3u) << "the failure left out";
  EXPECT_EQ(s.rows[0].config, (Config{{"BM", 64}, {"BN", 128}}));
  EXPECT_EQ(s.rows[2].config, (Config{{"BM", 64}, {"BN", 64}}));
  EXPECT_TRUE(contains(s.describe, "Xgemm, 4096x4096 on GPU X, from ")) << s.describe;
}

TEST(Prior, BadSourcesSayWhatIsWrongAndWhatToGive) {
  const fs::path dir = fresh_dir("prior_bad");
  auto missing = load_prior(dir / "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.status().message(), "no such file or folder; give a results folder"))
      << missing.status().message();
  fs::create_directories(dir / "empty");
  auto empty = load_prior(dir / "empty");
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(contains(empty.status().message(), "is a folder without a history.csv"))
      << empty.status().message();
  {
    fs::create_directories(dir / "failed");
    auto file = HistoryFile::open(dir / "failed" / kHistoryFileName);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    ASSERT_TRUE(file->append(row("t", 128, cfg(64, 64, 2), std::nullopt, Outcome::kCrash)).ok());
  }
  auto failed = load_prior(dir / "failed");
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(contains(failed.status().message(), "holds no successful measurement to learn from"))
      << failed.status().message();
  std::ofstream(dir / "garbage.json") << "{not json";
  auto garbage = load_prior(dir / "garbage.json");
  ASSERT_FALSE(garbage.ok());
  EXPECT_TRUE(contains(garbage.status().message(), "Kernel Tuner cache file"))
      << garbage.status().message();
}

// The picks skip a config one parameter away from one already picked while farther ones
// remain, fill up with the fastest of the rest, come out fastest first, and say where each
// came from.
TEST(Prior, PicksSpreadOverTheGoodRegionsFastestFirst) {
  const PriorSource s = source({{cfg(128, 64, 4), 1.0},
                                {cfg(128, 64, 2), 1.1},   // one parameter from the fastest
                                {cfg(128, 128, 4), 1.2},  // one parameter from the fastest
                                {cfg(64, 128, 2), 1.3},   // far
                                {cfg(64, 64, 1), 1.4}});  // far
  EXPECT_EQ(configs_of(prior_picks(s, 3)),
            (std::vector<Config>{cfg(128, 64, 4), cfg(64, 128, 2), cfg(64, 64, 1)}));
  EXPECT_EQ(configs_of(prior_picks(s, 4)), (std::vector<Config>{cfg(128, 64, 4), cfg(128, 64, 2),
                                                                cfg(64, 128, 2), cfg(64, 64, 1)}))
      << "too few far apart: the fastest of the rest, in time order";
  EXPECT_EQ(configs_of(prior_picks(s, 2, 1)),
            (std::vector<Config>{cfg(128, 64, 4), cfg(128, 64, 2)}))
      << "distance 1: plain time order";
  const auto picks = prior_picks(s, 3);
  EXPECT_EQ(picks[0].origin, "prior: fastest of " + s.describe);
  EXPECT_EQ(picks[1].origin, "prior: 4th fastest of " + s.describe);
  EXPECT_TRUE(picks[0].quiet_if_invalid) << "a pick that does not fit the new problem is expected";
  EXPECT_TRUE(prior_picks(s, 0).empty());
  EXPECT_EQ(prior_picks(s, 50).size(), 5u);
}

TEST(Prior, PicksForATemplateTakeTheSourcesInTurnEachConfigOnce) {
  PriorSource a = source({{cfg(128, 64, 4), 1.0}, {cfg(64, 64, 1), 2.0}});
  PriorSource b = source({{cfg(128, 64, 4), 5.0}, {cfg(32, 32, 1), 6.0}, {cfg(256, 256, 8), 7.0}});
  PriorSource other = source({{cfg(16, 16, 1), 0.1}});
  other.template_name = "other";
  const std::vector<PriorSource> all{a, other, b};
  EXPECT_EQ(
      configs_of(prior_picks_for(all, "t", 4)),
      (std::vector<Config>{cfg(128, 64, 4), cfg(64, 64, 1), cfg(32, 32, 1), cfg(256, 256, 8)}))
      << "a's fastest, b's fastest (the same: once), a's 2nd, b's 2nd, b's 3rd";
  EXPECT_EQ(prior_picks_for(all, "t", 2).size(), 2u);
  EXPECT_TRUE(prior_picks_for(all, "none", 4).empty());
  EXPECT_EQ(configs_of(prior_picks_for(all, "other", 4)), (std::vector<Config>{cfg(16, 16, 1)}));
}

}  // namespace
}  // namespace tilesmith
