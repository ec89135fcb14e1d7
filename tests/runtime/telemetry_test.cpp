// Telemetry without a GPU: the readings' summary, the throttle reasons' names, the energy
// window's arithmetic, and the NVML binding driven through a function table of the
// test's own (what NVML answers, in NVML's units and error codes).

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "runtime/nvml/nvml_telemetry.h"
#include "runtime/telemetry.h"

namespace tilesmith {
namespace {

TEST(Telemetry, ReadingsAreSummarisedMedianClocksMeanPowerHighestTemperatureEveryReason) {
  std::vector<TelemetryReading> r(3);
  r[0] = {1980, 2619, 600, 60, 0};
  r[1] = {1755, 2619, 700, 71, throttle::kSwPowerCap};
  r[2] = {1800, 2619, 650, 65, throttle::kSwPowerCap | throttle::kGpuIdle};
  auto s = summarize_telemetry(r);
  EXPECT_EQ(s.readings, 3);
  EXPECT_EQ(s.sm_clock_mhz, 1800);
  EXPECT_EQ(s.mem_clock_mhz, 2619);
  EXPECT_DOUBLE_EQ(*s.power_w, 650);
  EXPECT_EQ(s.max_temperature_c, 71);
  EXPECT_EQ(s.throttle_reasons, throttle::kSwPowerCap | throttle::kGpuIdle);
  EXPECT_EQ(s.throttled_readings, 2);
  EXPECT_TRUE(s.throttled());
  EXPECT_FALSE(s.joules_per_launch.has_value()) << "the energy is the caller's";

  // What a device does not report stays absent rather than zero.
  std::vector<TelemetryReading> partial(2);
  partial[0].sm_clock_mhz = 1500;
  partial[1].throttle_reasons = throttle::kGpuIdle;
  auto p = summarize_telemetry(partial);
  EXPECT_EQ(p.sm_clock_mhz, 1500);
  EXPECT_FALSE(p.power_w.has_value());
  EXPECT_FALSE(p.max_temperature_c.has_value());
  EXPECT_FALSE(p.throttled()) << "an idle GPU between batches is not a throttled one";
  EXPECT_EQ(summarize_telemetry({}).readings, 0);
}

TEST(Telemetry, ThrottleReasonsHaveNamesBothWays) {
  EXPECT_EQ(throttle_reason_names(0), "");
  EXPECT_EQ(throttle_reason_names(throttle::kSwPowerCap | throttle::kHwThermal),
            "sw_power_cap+hw_thermal");
  EXPECT_EQ(throttle_reason_names(0x400), "0x400") << "a reason NVML adds later keeps its bit";
  for (std::uint64_t bits :
       {std::uint64_t(0), std::uint64_t(0x1ff), std::uint64_t(0x404), std::uint64_t(1) << 63}) {
    auto back = parse_throttle_reason_names(throttle_reason_names(bits));
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(*back, bits);
  }
  auto bad = parse_throttle_reason_names("sw_power_cap+warm");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'warm'"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(parse_throttle_reason_names("0xzz").ok());
}

TEST(Telemetry, ClockSettlesAfterReadingsInARowWithinTheTolerance) {
  ClockSettle settle(0.01, 2);
  EXPECT_FALSE(settle.observe(1100.0));
  EXPECT_FALSE(settle.observe(1600.0)) << "still ramping";
  EXPECT_FALSE(settle.observe(1965.0));
  EXPECT_FALSE(settle.observe(1980.0)) << "one step within 1% is not yet two";
  EXPECT_TRUE(settle.observe(1975.0));
  ClockSettle jumpy(0.01, 2);
  jumpy.observe(1980.0);
  jumpy.observe(1980.0);
  EXPECT_FALSE(jumpy.observe(1700.0)) << "a drop starts the count again";
  EXPECT_TRUE(ClockSettle().observe(std::nullopt)) << "no clock to read: nothing to wait for";
}

TEST(Telemetry, EnergyWindowSpansWholeCounterSteps) {
  // A counter stepping every 20 ms by 10 J while each launch takes 1 ms: 0.5 J a launch.
  EnergyWindow w(100, 500);
  bool done = false;
  int launches = 0;
  for (double ms = 0; ms <= 500 && !done; ms += 1) {
    const double counter = 1000 + 10 * std::floor((ms + 7) / 20);  // steps at 13, 33, 53, ... ms
    done = w.observe(launches, counter, ms);
    ++launches;
  }
  EXPECT_TRUE(done);
  ASSERT_TRUE(w.joules_per_launch());
  EXPECT_DOUBLE_EQ(*w.joules_per_launch(), 0.5)
      << "from step to step the launches and joules match exactly";
  EXPECT_EQ(w.why_none(), "");
}

TEST(Telemetry, EnergyWindowWithoutStepsOrGoingBackwardsSaysSo) {
  EnergyWindow still(100, 300);
  double ms = 0;
  while (!still.observe(std::int64_t(ms), 42.0, ms)) ms += 10;
  EXPECT_FALSE(still.joules_per_launch());
  EXPECT_NE(still.why_none().find("did not advance over 300 ms"), std::string::npos)
      << still.why_none();

  EnergyWindow back(100, 300);
  back.observe(0, 50, 0);
  back.observe(10, 60, 10);
  EXPECT_TRUE(back.observe(20, 5, 20));
  EXPECT_FALSE(back.joules_per_launch());
  EXPECT_NE(back.why_none().find("backwards"), std::string::npos);
}

// NVML as the test scripts it: one device at one PCI address, figures in NVML's units.
struct FakeNvml {
  static inline int inits = 0, shutdowns = 0;
  static inline nvml::Return init_result = nvml::kSuccess;
  static inline nvml::Return energy_result = nvml::kSuccess;
  static inline unsigned long long energy_mj = 0;
  static inline std::map<int, unsigned> clocks;
  static inline nvml::Return power_result = nvml::kSuccess;
  static inline nvml::DeviceSt* const kDevice = reinterpret_cast<nvml::DeviceSt*>(0x1234);

  static nvml::Api api() {
    nvml::Api a;
    a.nvmlInit_v2 = [] { return inits++, init_result; };
    a.nvmlShutdown = [] { return shutdowns++, nvml::kSuccess; };
    a.nvmlErrorString = [](nvml::Return r) -> const char* {
      return r == 3 ? "Not Supported" : "Unknown Error";
    };
    a.nvmlDeviceGetHandleByPciBusId_v2 = [](const char* id, nvml::Device* d) -> nvml::Return {
      if (std::strcmp(id, "0000:3b:00.0") != 0) return 6;  // NVML_ERROR_NOT_FOUND
      *d = kDevice;
      return nvml::kSuccess;
    };
    a.nvmlDeviceGetClockInfo = [](nvml::Device d, int type, unsigned* mhz) -> nvml::Return {
      if (d != kDevice || !clocks.count(type)) return nvml::kErrorNotSupported;
      *mhz = clocks[type];
      return nvml::kSuccess;
    };
    a.nvmlDeviceGetPowerUsage = [](nvml::Device, unsigned* mw) {
      *mw = 612500;
      return power_result;
    };
    a.nvmlDeviceGetTemperature = [](nvml::Device, int sensor, unsigned* c) -> nvml::Return {
      if (sensor != nvml::kTemperatureGpu) return 2;
      *c = 68;
      return nvml::kSuccess;
    };
    a.nvmlDeviceGetCurrentClocksThrottleReasons = [](nvml::Device, unsigned long long* r) {
      *r = throttle::kSwPowerCap;
      return nvml::kSuccess;
    };
    a.nvmlDeviceGetTotalEnergyConsumption = [](nvml::Device, unsigned long long* mj) {
      *mj = energy_mj;
      return energy_result;
    };
    return a;
  }
  FakeNvml() {
    inits = shutdowns = 0;
    init_result = energy_result = power_result = nvml::kSuccess;
    energy_mj = 123456789;
    clocks = {{nvml::kClockSm, 1980}, {nvml::kClockMem, 2619}};
  }
};

TEST(NvmlTelemetry, ReadsEachFigureInItsUnitsAndShutsDownOnce) {
  FakeNvml fake;
  const nvml::Api api = FakeNvml::api();
  {
    auto t = nvml::Telemetry::open(api, "0000:3b:00.0");
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    TelemetryReading r = (*t)->read();
    EXPECT_EQ(r.sm_clock_mhz, 1980);
    EXPECT_EQ(r.mem_clock_mhz, 2619);
    EXPECT_DOUBLE_EQ(*r.power_w, 612.5) << "NVML reports milliwatts";
    EXPECT_EQ(r.temperature_c, 68);
    EXPECT_EQ(r.throttle_reasons, throttle::kSwPowerCap);
    auto e = (*t)->energy_j();
    ASSERT_TRUE(e);
    EXPECT_DOUBLE_EQ(*e, 123456.789) << "NVML counts millijoules";
  }
  EXPECT_EQ(FakeNvml::inits, 1);
  EXPECT_EQ(FakeNvml::shutdowns, 1);
}

TEST(NvmlTelemetry, WhatTheDeviceDoesNotReportIsAbsentWithTheReason) {
  FakeNvml fake;
  FakeNvml::clocks.erase(nvml::kClockMem);
  FakeNvml::power_result = nvml::kErrorNotSupported;
  FakeNvml::energy_result = nvml::kErrorNotSupported;
  const nvml::Api api = FakeNvml::api();
  auto t = nvml::Telemetry::open(api, "0000:3b:00.0");
  ASSERT_TRUE(t.ok());
  TelemetryReading r = (*t)->read();
  EXPECT_EQ(r.sm_clock_mhz, 1980);
  EXPECT_FALSE(r.mem_clock_mhz.has_value());
  EXPECT_FALSE(r.power_w.has_value());
  std::string why;
  EXPECT_FALSE((*t)->energy_j(&why));
  EXPECT_NE(why.find("no energy counter on this GPU"), std::string::npos) << why;

  // An NVML too old for the energy call or the throttle reasons: those stay absent.
  nvml::Api old = FakeNvml::api();
  old.nvmlDeviceGetTotalEnergyConsumption = nullptr;
  old.nvmlDeviceGetCurrentClocksThrottleReasons = nullptr;
  auto o = nvml::Telemetry::open(old, "0000:3b:00.0");
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE((*o)->read().throttle_reasons.has_value());
  EXPECT_FALSE((*o)->energy_j(&why));
  EXPECT_NE(why.find("nvmlDeviceGetTotalEnergyConsumption"), std::string::npos) << why;
}

TEST(NvmlTelemetry, AFailedStartNamesTheCallAndTheError) {
  FakeNvml fake;
  const nvml::Api api = FakeNvml::api();
  auto missing = nvml::Telemetry::open(api, "0000:af:00.0");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(missing.status().message().find("no device at PCI bus id 0000:af:00.0"),
            std::string::npos)
      << missing.status().message();
  EXPECT_EQ(FakeNvml::shutdowns, 1) << "NVML is shut down again after a failed lookup";

  FakeNvml::init_result = 12;  // NVML_ERROR_LIBRARY_NOT_FOUND: no driver
  auto no_driver = nvml::Telemetry::open(api, "0000:3b:00.0");
  ASSERT_FALSE(no_driver.ok());
  EXPECT_NE(no_driver.status().message().find("nvmlInit_v2 failed: error 12"), std::string::npos)
      << no_driver.status().message();
  EXPECT_FALSE(nvml::Telemetry::open(api, "").ok()) << "no PCI address, no device";
}

TEST(NvmlTelemetry, OnAMachineWithoutTheDriverTheLibraryIsReportedMissing) {
  // This machine may or may not have libnvidia-ml; either way the call must answer.
  auto a = nvml::api();
  if (a.ok()) GTEST_SKIP() << "libnvidia-ml is present here: " << (*a)->library_path;
  EXPECT_EQ(a.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(a.status().message().find("libnvidia-ml"), std::string::npos) << a.status().message();
}

}  // namespace
}  // namespace tilesmith
