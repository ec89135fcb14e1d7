// bench-best's words for telemetry and for a recorded re-timing: pure formatting, no GPU.
#include <gtest/gtest.h>

#include "cli/bench_best_output.h"

namespace tilesmith::cli {
namespace {
using nlohmann::json;

TEST(BenchBestOutput, TelemetryLineSaysClocksPowerEnergyAndThrottling) {
  Evaluation e;
  EXPECT_EQ(telemetry_line(e, 1e12), "") << "nothing read, nothing said";
  TelemetrySummary t;
  t.readings = 4;
  t.sm_clock_mhz = 1980;
  t.mem_clock_mhz = 2619;
  t.power_w = 612.34;
  t.max_temperature_c = 71;
  t.joules_per_launch = 0.5;
  t.throttle_reasons = throttle::kSwPowerCap | throttle::kGpuIdle;
  t.throttled_readings = 3;
  e.telemetry = t;
  // 2e12 FLOP for 0.5 J: 4 TFLOP/s per watt.
  EXPECT_EQ(telemetry_line(e, 2e12),
            "SM 1980 MHz, mem 2619 MHz, 612.3 W, max 71 C, 0.5 J/launch (4 TFLOP/s per W), "
            "throttled (sw_power_cap) "
            "in 3 of 4 readings");
  e.telemetry->throttle_reasons = throttle::kGpuIdle;
  e.telemetry->joules_per_launch.reset();
  e.telemetry->power_w.reset();
  EXPECT_EQ(telemetry_line(e, 2e12), "SM 1980 MHz, mem 2619 MHz, max 71 C")
      << "idle is no throttling";
}

// An entry tuned for energy: what it was tuned for, and ours beside the vendor in time,
// joules per GEMM and TFLOP/s per watt; nothing for an entry tuned for time.
TEST(BenchBestOutput, AnEntryTunedForEnergyShowsTimeJoulesAndThroughputPerWattOfBothSides) {
  BestEntry entry;
  entry.problem.m = entry.problem.n = entry.problem.k = 1000;  // 2e9 FLOP
  auto measured = [](double ms, std::optional<double> joules) {
    Evaluation e;
    e.outcome = Outcome::kOk;
    e.timing.median_ms = ms;
    if (joules) {
      e.telemetry = TelemetrySummary{};
      e.telemetry->joules_per_launch = joules;
    }
    return e;
  };
  const auto ours = measured(0.5, 0.004), vendor = measured(0.4, 0.005);
  EXPECT_EQ(objective_line(entry, ours, vendor), "") << "tuned for time: the usual lines say it";
  entry.objective = Objective::kEnergy;
  EXPECT_EQ(objective_line(entry, ours, vendor),
            "energy (energy per launch): ours 0.5000 ms, 0.004 J/GEMM, 0.5 TFLOP/s per W; vendor 0.4000 ms, "
            "0.005 J/GEMM, 0.4 TFLOP/s per W; ours 0.800x the vendor's energy per launch");
  entry.objective = Objective::kEdp;
  EXPECT_EQ(objective_line(entry, ours, std::nullopt),
            "edp (energy-delay product): ours 0.5000 ms, 0.004 J/GEMM, 0.5 TFLOP/s per W; vendor not measured");
  EXPECT_EQ(objective_line(entry, measured(0.5, std::nullopt), vendor),
            "edp (energy-delay product): ours 0.5000 ms, no energy figure; vendor 0.4000 ms, 0.005 J/GEMM, 0.4 "
            "TFLOP/s per W");
}

TEST(BenchBestOutput, TheRecordedIntervalIsShownAndTodaysMedianPlacedInIt) {
  BestEntry e;
  EXPECT_EQ(certification_text(e), "") << "an entry written before the rounds";
  EXPECT_FALSE(within_recorded_interval(e, 1.0).has_value());
  e.certification = json{{"verdict", "certified"},
                         {"rounds", 12},
                         {"interval_ms", {0.5101, 0.514}},
                         {"interval_coverage", 0.9614}};
  EXPECT_EQ(certification_text(e),
            "certified after 12 rounds, 96% interval of the median [0.5101, 0.5140] ms");
  EXPECT_EQ(within_recorded_interval(e, 0.512), true);
  EXPECT_EQ(within_recorded_interval(e, 0.52), false);
  EXPECT_FALSE(within_recorded_range(e, 0.512).has_value()) << "an entry recorded before the range";
  e.certification["range_ms"] = {0.508, 0.5182};
  e.certification["range_coverage"] = 11.0 / 13;
  EXPECT_EQ(
      certification_text(e),
      "certified after 12 rounds, 96% interval of the median [0.5101, 0.5140] ms, rounds [0.5080, "
      "0.5182] ms (85% of new runs fall there)");
  EXPECT_EQ(within_recorded_range(e, 0.517), true)
      << "outside the interval of the median, inside the range";
  EXPECT_EQ(within_recorded_interval(e, 0.517), false);
  EXPECT_EQ(within_recorded_range(e, 0.519), false);
  e.certification.erase("range_ms");
  e.certification["interval_ms"] = nullptr;  // too few rounds for one
  EXPECT_EQ(certification_text(e), "certified after 12 rounds");
  EXPECT_FALSE(within_recorded_interval(e, 0.512).has_value());
}

// --epilogue-cost from alternating rounds: a clock that slows the GPU by a third halfway through
// the rounds (a power cap) leaves the cost of each round, and so the median's, where it was; the
// medians of the times alone are no longer a fair pair of figures.
TEST(EpilogueCost, PairedRoundsCancelAClockThatMoves) {
  std::vector<double> fused, plain;
  for (int r = 0; r < 8; ++r) {
    const double clock = r < 4 ? 1.0 : 1.33;
    const double jitter = 1 + 0.002 * (r % 3);
    plain.push_back(0.1800 * clock * jitter);
    fused.push_back(0.1800 * 1.05 * clock * jitter);
  }
  const auto c = side_cost(fused, plain);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->rounds, 8);
  EXPECT_NEAR(c->pct, 5.0, 1e-9);
  ASSERT_TRUE(c->interval_pct.has_value());
  EXPECT_NEAR(c->interval_pct->first, 5.0, 1e-9);
  EXPECT_NEAR(c->interval_pct->second, 5.0, 1e-9);

  // A free epilogue in noisy rounds: the interval holds 0 and is ordered.
  fused = {0.101, 0.099, 0.100, 0.102, 0.098, 0.100};
  plain = {0.100, 0.100, 0.101, 0.100, 0.099, 0.101};
  const auto f = side_cost(fused, plain);
  ASSERT_TRUE(f && f->interval_pct);
  EXPECT_LT(f->interval_pct->first, 0.0);
  EXPECT_GT(f->interval_pct->second, 0.0);
  EXPECT_LE(f->interval_pct->first, f->pct);
  EXPECT_GE(f->interval_pct->second, f->pct);

  EXPECT_FALSE(side_cost({}, {}).has_value());
  EXPECT_FALSE(side_cost({0.1, 0.2}, {0.1}).has_value()) << "unequal counts";
  EXPECT_FALSE(side_cost({0.1}, {0.1}).value().interval_pct.has_value()) << "one round: no interval";

  EpilogueCost both{side_cost(fused, plain), std::nullopt, "vendor: no fused leaky_relu"};
  GemmProblem p;
  p.epilogue = Epilogue::kLeakyRelu;
  const std::string line = epilogue_cost_line(both, p);
  EXPECT_NE(line.find("ours "), std::string::npos) << line;
  EXPECT_NE(line.find("vendor not measured"), std::string::npos) << line;
  EXPECT_NE(line.find("6 rounds"), std::string::npos) << line;
  EXPECT_NE(line.find("no fused leaky_relu"), std::string::npos) << line;
  EXPECT_TRUE(to_json(both)["vendor"].is_null());
  EXPECT_EQ(to_json(both)["ours"]["rounds"], 6);
}

}  // namespace
}  // namespace tilesmith::cli
