// Telemetry through the loop: what an evaluator measured lands in history.csv's columns;
// an evaluator that has none says why, and the run says it once.

#include "tests/tuner/loop/loop_fixture.h"

namespace tilesmith::loop_test {
namespace {

// The replayed GPU with what a device's telemetry would add to each ok evaluation, or
// only the note an evaluator without NVML gives.
class TelemetryEvaluator final : public Evaluator {
 public:
  TelemetryEvaluator(Evaluator& inner, bool with_telemetry)
      : inner_(inner), with_(with_telemetry) {}
  const DeviceFacts& device() const override { return inner_.device(); }
  Evaluation prepare(const KernelTemplate& t, const GemmProblem& p, const Config& c) override {
    return inner_.prepare(t, p, c);
  }
  Evaluation evaluate(const KernelTemplate& t, const GemmProblem& p, const Config& c) override {
    Evaluation e = inner_.evaluate(t, p, c);
    if (!e.ok()) return e;
    if (with_) {
      TelemetrySummary s;
      s.readings = 3;
      s.sm_clock_mhz = 1980;
      s.mem_clock_mhz = 2619;
      s.power_w = 400 + e.timing.median_ms;
      s.max_temperature_c = 66;
      s.throttle_reasons = ++n_ % 2 ? throttle::kSwPowerCap : 0;
      s.joules_per_launch = e.timing.median_ms * 0.4;
      e.telemetry = s;
    } else {
      e.telemetry_note = "no telemetry: NVML: libnvidia-ml.so.1: cannot open shared object file";
    }
    return e;
  }
  Result<Evaluation> vendor_baseline(const GemmProblem& p) override {
    return inner_.vendor_baseline(p);
  }
  std::string vendor_name() const override { return inner_.vendor_name(); }

 private:
  Evaluator& inner_;
  bool with_;
  int n_ = 0;
};

// A 12-evaluation random run on the replayed recording whose evaluations carry telemetry (or
// the reason there is none); the history it wrote.
Result<HistoryLoad> run_and_read(Fixture& f, const fs::path& dir, bool with_telemetry, Observer& obs) {
  auto proposer = make_offline_proposer("random");
  if (!proposer.ok()) return proposer.status();
  TelemetryEvaluator ev(f.replay, with_telemetry);
  auto options = f.options(dir, 12);
  options.retime_top = 0;
  auto loop = GenerationLoop::open(ev, {{&f.tmpl, proposer->get()}}, options);
  if (!loop.ok()) return loop.status();
  if (auto run = (*loop)->run(obs); !run.ok()) return run.status();
  return read_history(dir / kHistoryFileName);
}

TEST(LoopTelemetry, WhatTheDeviceReportedIsInEveryOkRow) {
  Fixture f;
  Observer obs;
  auto history = run_and_read(f, fresh_dir("loop_telemetry_rows"), true, obs);
  ASSERT_TRUE(history.ok()) << history.status().to_string();
  EXPECT_EQ(history->schema_version, kHistorySchemaVersion);
  int ok = 0, throttled = 0;
  for (const auto& r : history->rows) {
    if (!r.ok()) {
      EXPECT_FALSE(r.power_w.has_value()) << "nothing measured, nothing read";
      continue;
    }
    ++ok;
    EXPECT_EQ(r.sm_clock_mhz, 1980);
    EXPECT_EQ(r.mem_clock_mhz, 2619);
    EXPECT_DOUBLE_EQ(*r.power_w, 400 + *r.median_ms);
    EXPECT_EQ(r.max_temp_c, 66);
    EXPECT_DOUBLE_EQ(*r.joules_per_launch, *r.median_ms * 0.4);
    EXPECT_TRUE(r.throttle_reasons == "sw_power_cap" || r.throttle_reasons == "none")
        << r.throttle_reasons;
    throttled += r.throttle_reasons == "sw_power_cap";
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(throttled, 0);
  EXPECT_LT(throttled, ok);
}

TEST(LoopTelemetry, WithoutTelemetryTheColumnsStayEmptyAndTheRunSaysWhyOnce) {
  Fixture f;
  Observer obs;
  auto history = run_and_read(f, fresh_dir("loop_telemetry_none"), false, obs);
  ASSERT_TRUE(history.ok()) << history.status().to_string();
  int ok = 0;
  for (const auto& r : history->rows) {
    ok += r.ok();
    EXPECT_FALSE(r.sm_clock_mhz || r.power_w || r.joules_per_launch);
    EXPECT_EQ(r.throttle_reasons, "");
  }
  EXPECT_GT(ok, 1) << "several rows, one message";
  EXPECT_EQ(std::count_if(obs.logs.begin(), obs.logs.end(),
                          [](const std::string& l) {
                            return l.find("libnvidia-ml.so.1") != std::string::npos;
                          }),
            1);
}

}  // namespace
}  // namespace tilesmith::loop_test
