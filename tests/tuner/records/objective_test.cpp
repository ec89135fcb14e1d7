// The tuning objective: its names, the one value every ranking uses, and how
// best_config.json records it (with the winner's and the vendor's energy).

#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/process.h"
#include "tuner/records/best_config.h"
#include "tuner/records/objective.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using testing::fresh_dir;

TEST(Objective, NamesParseBackAndOthersAreRefusedWithTheChoices) {
  for (Objective o : {Objective::kTime, Objective::kEnergy, Objective::kEdp}) {
    auto back = parse_objective(objective_name(o));
    ASSERT_TRUE(back.ok()) << objective_name(o);
    EXPECT_EQ(*back, o);
  }
  EXPECT_EQ(objective_names(), (std::vector<std::string>{"time", "energy", "edp"}));
  for (const char* bad : {"", "Energy", "power", "time "}) {
    auto r = parse_objective(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("time, energy or edp"), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(needs_energy(Objective::kTime));
  EXPECT_TRUE(needs_energy(Objective::kEnergy));
  EXPECT_TRUE(needs_energy(Objective::kEdp));
  EXPECT_STREQ(objective_unit(Objective::kEdp), "J*s");
}

TEST(Objective, ValueIsTheTimeTheEnergyOrTheirProductAndNothingWhenAFigureIsMissing) {
  EXPECT_EQ(objective_value(Objective::kTime, 2.0, std::nullopt), 2.0);
  EXPECT_EQ(objective_value(Objective::kTime, 2.0, 0.5), 2.0);
  EXPECT_EQ(objective_value(Objective::kEnergy, 2.0, 0.5), 0.5);
  // 0.5 J over 2 ms: 0.5 * 0.002 J*s.
  EXPECT_DOUBLE_EQ(*objective_value(Objective::kEdp, 2.0, 0.5), 0.001);
  EXPECT_FALSE(objective_value(Objective::kEnergy, 2.0, std::nullopt));
  EXPECT_FALSE(objective_value(Objective::kEdp, 2.0, std::nullopt));
  EXPECT_FALSE(objective_value(Objective::kEdp, std::nullopt, 0.5));
  EXPECT_FALSE(objective_value(Objective::kTime, std::nullopt, 0.5));
  // A zero or broken figure is a failed measurement, never the best.
  EXPECT_FALSE(objective_value(Objective::kTime, 0.0, std::nullopt));
  EXPECT_FALSE(objective_value(Objective::kEnergy, 1.0, 0.0));
  EXPECT_FALSE(objective_value(Objective::kEnergy, 1.0, -1.0));
  EXPECT_FALSE(objective_value(Objective::kTime, std::nan(""), std::nullopt));
}

TEST(Objective, OnlyOkEvaluationRowsAndEvaluationsHaveAValue) {
  HistoryRow row;
  row.outcome = Outcome::kOk;
  row.median_ms = 1.5;
  row.joules_per_launch = 0.25;
  EXPECT_EQ(objective_value(Objective::kEnergy, row), 0.25);
  EXPECT_EQ(objective_value(Objective::kTime, row), 1.5);
  row.stage = kStageProposal;
  EXPECT_FALSE(objective_value(Objective::kTime, row));
  row.stage = kStageEvaluation;
  row.outcome = Outcome::kWrongResult;
  EXPECT_FALSE(objective_value(Objective::kTime, row));

  Evaluation e;
  e.outcome = Outcome::kOk;
  e.timing.median_ms = 1.5;
  EXPECT_EQ(objective_value(Objective::kTime, e), 1.5);
  EXPECT_FALSE(objective_value(Objective::kEnergy, e)) << "no telemetry, no energy";
  e.telemetry = TelemetrySummary{};
  e.telemetry->joules_per_launch = 0.25;
  EXPECT_EQ(objective_value(Objective::kEnergy, e), 0.25);
  EXPECT_DOUBLE_EQ(*objective_value(Objective::kEdp, e), 0.25 * 1.5e-3);
  e.outcome = Outcome::kTimeout;
  EXPECT_FALSE(objective_value(Objective::kEnergy, e));
}

BestEntry energy_entry(double median_ms, double joules) {
  BestEntry e;
  e.device_fingerprint = "H100|sm_90|580|13.0";
  e.device = json{{"name", "H100"}, {"arch", "sm_90"}};
  e.template_name = "gemm_tiled";
  e.template_hash = "abcdef0123456789";
  e.problem.m = e.problem.n = e.problem.k = 4096;
  e.config = {{"BLOCK_M", 64}};
  e.metrics = json{{"median_ms", median_ms}, {"joules_per_launch", joules}, {"source", "retime"}};
  e.objective = Objective::kEnergy;
  e.vendor_name = "cuBLASLt";
  e.vendor_median_ms = 1.0;
  e.vendor_joules = 0.75;
  return e;
}

TEST(Objective, BestConfigRecordsTheObjectiveAndBothEnergiesAndReadsThemBack) {
  const fs::path path = fresh_dir("objective_best_config") / "best_config.json";
  ASSERT_TRUE(write_best_config(path, {energy_entry(1.2, 0.5)}).ok());
  json raw = json::parse(std::ifstream(path));
  EXPECT_EQ(raw["entries"][0]["objective"], "energy");
  EXPECT_EQ(raw["entries"][0]["vendor"]["joules_per_launch"], 0.75);
  auto read = read_best_config(path);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  const BestEntry& e = read->front();
  EXPECT_EQ(e.objective, Objective::kEnergy);
  EXPECT_EQ(e.vendor_joules, 0.75);
  EXPECT_EQ(entry_objective_value(e), 0.5);
  EXPECT_EQ(entry_objective_value(e, Objective::kTime), 1.2);
  EXPECT_DOUBLE_EQ(*entry_objective_value(e, Objective::kEdp), 0.5 * 1.2e-3);
}

TEST(Objective, AFileWithoutTheObjectiveWasTunedForTimeAndAMisspeltOneIsRefused) {
  const fs::path dir = fresh_dir("objective_best_config_old");
  ASSERT_TRUE(write_best_config(dir / "best_config.json", {energy_entry(1.2, 0.5)}).ok());
  json raw = json::parse(std::ifstream(dir / "best_config.json"));
  raw["entries"][0].erase("objective");
  raw["entries"][0]["vendor"].erase("joules_per_launch");
  std::ofstream(dir / "old.json") << raw.dump();
  auto old = read_best_config(dir / "old.json");
  ASSERT_TRUE(old.ok()) << old.status().to_string();
  EXPECT_EQ(old->front().objective, Objective::kTime);
  EXPECT_FALSE(old->front().vendor_joules);
  EXPECT_EQ(entry_objective_value(old->front()), 1.2);

  for (const json& bad : {json("Energy"), json(1)}) {
    raw["entries"][0]["objective"] = bad;
    std::ofstream(dir / "bad.json") << raw.dump();
    auto refused = read_best_config(dir / "bad.json");
    ASSERT_FALSE(refused.ok()) << bad.dump();
    EXPECT_NE(refused.status().message().find("\"objective\""), std::string::npos) << refused.status().message();
  }
}

TEST(Objective, AnEntryTunedForEnergyWithoutItsFigureCannotBeRanked) {
  BestEntry e = energy_entry(1.2, 0.5);
  e.metrics.erase("joules_per_launch");
  EXPECT_FALSE(entry_objective_value(e));
  EXPECT_EQ(entry_objective_value(e, Objective::kTime), 1.2);
}

}  // namespace
}  // namespace tilesmith
