// NVML telemetry on real hardware (label gpu): what every measurement carries and the
// energy window's figure, or the reason there is none.

#include <gtest/gtest.h>

#include "tests/runtime/gpu_evaluator_fixture.h"

namespace tilesmith::gpu_test {
namespace {

class GpuTelemetryTest : public GpuEvaluatorTest {};

// Telemetry on real hardware: on an NVIDIA GPU whose driver has NVML, every measurement
// carries clocks, power and temperature read around its samples, and an evaluator with an
// energy window the joules of one launch; where NVML is missing, the evaluation says why.
TEST_F(GpuTelemetryTest, MeasurementsCarryClocksPowerAndEnergyOrSayWhyNot) {
  Config c{{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"BLOCK_K", 16}, {"THREAD_M", 4}, {"THREAD_N", 8}};
  const GemmProblem p = make(2048, 2048, 2048);
  Evaluation e = evaluator_->evaluate(tiled(), p, c);
  ASSERT_EQ(e.outcome, Outcome::kOk) << e.message;
  if (!e.telemetry) {
    EXPECT_FALSE(e.telemetry_note.empty()) << "no telemetry and no reason";
    if (evaluator_->device().backend == "cuda") ADD_FAILURE() << "NVIDIA GPU without telemetry: " << e.telemetry_note;
    return;
  }
  EXPECT_GT(e.telemetry->readings, 0);
  ASSERT_TRUE(e.telemetry->sm_clock_mhz && e.telemetry->power_w && e.telemetry->max_temperature_c);
  EXPECT_GT(*e.telemetry->sm_clock_mhz, 100);
  EXPECT_GT(*e.telemetry->power_w, 10);
  EXPECT_GT(*e.telemetry->max_temperature_c, 5);
  EXPECT_FALSE(e.telemetry->joules_per_launch) << "the suite's evaluator has no energy window";
  // With a window: joules per launch between a milliwatt-second and the board's limit for the launch's time.
  GpuEvaluatorOptions o;
  o.timing.max_sampling_ms = 300;
  o.timing.energy_ms = 100;
  auto with_energy = GpuEvaluator::open(*backend_, 0, o);
  ASSERT_TRUE(with_energy.ok()) << with_energy.status().message();
  Evaluation f = (*with_energy)->evaluate(tiled(), p, c);
  ASSERT_EQ(f.outcome, Outcome::kOk) << f.message;
  ASSERT_TRUE(f.telemetry);
  if (!f.telemetry->joules_per_launch) {
    EXPECT_FALSE(f.telemetry_note.empty());
    return;  // a GPU without the energy counter
  }
  const double joules = *f.telemetry->joules_per_launch, seconds = f.timing.median_ms / 1000;
  EXPECT_GT(joules, 1e-3 * seconds) << "less than a milliwatt";
  EXPECT_LT(joules, 2000 * seconds) << "more than 2 kW";
}

}  // namespace
}  // namespace tilesmith::gpu_test
