// The ROCm SMI binding driven through a function table of the test's own (what ROCm SMI
// answers, in its units and error codes), and its declarations checked against ROCm SMI's
// own header where it is installed (Debian librocm-smi-dev; scripts/setup.sh installs it).
// No AMD GPU is at hand: this is what can be checked without one.

#include <gtest/gtest.h>

#include <cstring>
#include <tuple>
#include <type_traits>

#include "runtime/rocm_smi/rocm_smi_telemetry.h"

#if __has_include(<rocm_smi/rocm_smi.h>)
#include <rocm_smi/rocm_smi.h>
#define TILESMITH_TEST_ROCM_SMI_HEADER 1
#endif

namespace tilesmith::rocm_smi {
namespace {

#ifdef TILESMITH_TEST_ROCM_SMI_HEADER
// The values and the ROCm 5 layout declared in rocm_smi_telemetry.h are the header's.
static_assert(kSuccess == RSMI_STATUS_SUCCESS);
static_assert(kNotSupported == RSMI_STATUS_NOT_SUPPORTED);
static_assert(kClockSys == RSMI_CLK_TYPE_SYS);
static_assert(kClockMem == RSMI_CLK_TYPE_MEM);
static_assert(kTemperatureJunction == RSMI_TEMP_TYPE_JUNCTION);
static_assert(kTemperatureCurrent == RSMI_TEMP_CURRENT);
static_assert(kMaxFrequencies == RSMI_MAX_NUM_FREQUENCIES);
static_assert(sizeof(rsmi_frequencies_t) <= kFrequenciesBytes);
static_assert(sizeof(Version) == sizeof(rsmi_version_t));
// The functions take the header's parameter types; rsmi_status_t returns as an int.
template <typename R, typename... A>
std::tuple<A...> parameters_of(R (*)(A...));
static_assert(sizeof(rsmi_status_t) == sizeof(Return));
static_assert(std::is_same_v<decltype(parameters_of(&rsmi_dev_pci_id_get)),
                             decltype(parameters_of(Api{}.rsmi_dev_pci_id_get))>);
static_assert(std::is_same_v<decltype(parameters_of(&rsmi_dev_power_ave_get)),
                             decltype(parameters_of(Api{}.rsmi_dev_power_ave_get))>);
static_assert(std::is_same_v<decltype(parameters_of(&rsmi_num_monitor_devices)),
                             decltype(parameters_of(Api{}.rsmi_num_monitor_devices))>);
static_assert(std::is_same_v<decltype(parameters_of(&rsmi_dev_energy_count_get)),
                             decltype(parameters_of(Api{}.rsmi_dev_energy_count_get))>);
static_assert(std::is_same_v<decltype(parameters_of(&rsmi_init)), decltype(parameters_of(Api{}.rsmi_init))>);

TEST(RocmSmiTelemetry, TheRocm5ClockTableIsTheHeadersLayout) {
  rsmi_frequencies_t f{};
  f.num_supported = 3;
  f.current = 2;
  f.frequency[0] = 500'000'000;
  f.frequency[1] = 1'000'000'000;
  f.frequency[2] = 1'700'000'000;
  unsigned char bytes[kFrequenciesBytes] = {};
  std::memcpy(bytes, &f, sizeof f);
  auto mhz = clock_mhz(bytes, 5);
  ASSERT_TRUE(mhz);
  EXPECT_DOUBLE_EQ(*mhz, 1700);
}
#endif

// rsmi_frequencies_t of ROCm 6 and later: {bool has_deep_sleep; uint32 num_supported;
// uint32 current; uint64 frequency[32]}.
void fill_rocm6(unsigned char* b, std::uint32_t count, std::uint32_t current, const std::vector<std::uint64_t>& hz) {
  b[0] = 1;  // has_deep_sleep
  std::memcpy(b + 4, &count, 4);
  std::memcpy(b + 8, &current, 4);
  for (std::size_t i = 0; i < hz.size(); ++i) std::memcpy(b + 16 + 8 * i, &hz[i], 8);
}

TEST(RocmSmiTelemetry, EitherClockTableLayoutIsRead) {
  unsigned char b[kFrequenciesBytes] = {};
  fill_rocm6(b, 2, 1, {900'000'000, 2'100'000'000});
  auto mhz = clock_mhz(b, 6);
  ASSERT_TRUE(mhz);
  EXPECT_DOUBLE_EQ(*mhz, 2100);
  // A ROCm 6 table read by a library that says 5 (or says nothing) still comes out right:
  // the ROCm 5 reading does not hold together (count 1 with the flag, current 2).
  mhz = clock_mhz(b, 0);
  ASSERT_TRUE(mhz);
  EXPECT_DOUBLE_EQ(*mhz, 2100);
  // Nothing that holds together: no figure.
  unsigned char zero[kFrequenciesBytes] = {};
  EXPECT_FALSE(clock_mhz(zero, 5));
  EXPECT_FALSE(clock_mhz(zero, 6));
}

TEST(RocmSmiTelemetry, PciIdsAreRocmSmisEncoding) {
  EXPECT_EQ(bdf_id(0, 0x3b, 0, 0), 0x3b00ull);
  EXPECT_EQ(bdf_id(1, 0xc1, 2, 1), (1ull << 32) | (0xc1ull << 8) | (2ull << 3) | 1);
}

// ROCm SMI as the test scripts it: two devices, the one asked for at index 1.
struct FakeRocmSmi {
  static inline int inits = 0, shutdowns = 0;
  static inline Return energy_result = kSuccess;
  static inline bool power = true;
  static Api api() {
    Api a;
    a.rsmi_init = [](std::uint64_t) { return inits++, kSuccess; };
    a.rsmi_shut_down = [] { return shutdowns++, kSuccess; };
    a.rsmi_status_string = [](Return r, const char** s) {
      *s = r == kNotSupported ? "RSMI_STATUS_NOT_SUPPORTED" : "RSMI_STATUS_UNKNOWN_ERROR";
      return kSuccess;
    };
    a.rsmi_version_get = [](Version* v) {
      v->major = 6;
      return kSuccess;
    };
    a.rsmi_num_monitor_devices = [](std::uint32_t* n) { return *n = 2, kSuccess; };
    a.rsmi_dev_pci_id_get = [](std::uint32_t i, std::uint64_t* id) {
      *id = i == 0 ? bdf_id(0, 0x03, 0) : bdf_id(0, 0xc1, 0, 1);
      return kSuccess;
    };
    a.rsmi_dev_gpu_clk_freq_get = [](std::uint32_t i, int clock, void* table) -> Return {
      if (i != 1) return 1;
      auto* b = static_cast<unsigned char*>(table);
      if (clock == kClockSys) fill_rocm6(b, 3, 2, {500'000'000, 1'500'000'000, 2'100'000'000});
      else if (clock == kClockMem) fill_rocm6(b, 1, 0, {1'300'000'000});
      else return kNotSupported;
      return kSuccess;
    };
    a.rsmi_dev_power_ave_get = [](std::uint32_t, std::uint32_t, std::uint64_t* uw) -> Return {
      if (!power) return kNotSupported;
      return *uw = 612'500'000, kSuccess;
    };
    a.rsmi_dev_temp_metric_get = [](std::uint32_t, std::uint32_t sensor, int metric, std::int64_t* mc) -> Return {
      if (sensor != std::uint32_t(kTemperatureJunction) || metric != kTemperatureCurrent) return kNotSupported;
      return *mc = 71'500, kSuccess;
    };
    a.rsmi_dev_energy_count_get = [](std::uint32_t, std::uint64_t* counter, float* res, std::uint64_t* ts) {
      if (energy_result != kSuccess) return energy_result;
      *counter = 2'000'000;
      *res = 15.3f;
      *ts = 1;
      return kSuccess;
    };
    return a;
  }
  FakeRocmSmi() {
    inits = shutdowns = 0;
    energy_result = kSuccess;
    power = true;
  }
};

TEST(RocmSmiTelemetry, ReadsEachFigureInItsUnitsFromTheDeviceAtThePciAddress) {
  FakeRocmSmi fake;
  const Api a = FakeRocmSmi::api();
  {
    auto t = Telemetry::open(a, bdf_id(0, 0xc1, 0));  // function 0 asked, 1 reported: the same device
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    TelemetryReading r = (*t)->read();
    ASSERT_TRUE(r.sm_clock_mhz && r.mem_clock_mhz && r.power_w && r.temperature_c);
    EXPECT_DOUBLE_EQ(*r.sm_clock_mhz, 2100);
    EXPECT_DOUBLE_EQ(*r.mem_clock_mhz, 1300);
    EXPECT_DOUBLE_EQ(*r.power_w, 612.5);
    EXPECT_DOUBLE_EQ(*r.temperature_c, 71.5);
    EXPECT_FALSE(r.throttle_reasons) << "not read on AMD";
    auto j = (*t)->energy_j();
    ASSERT_TRUE(j);
    EXPECT_NEAR(*j, 2'000'000 * 15.3 * 1e-6, 1e-4);
    FakeRocmSmi::power = false;
    EXPECT_FALSE((*t)->read().power_w) << "a call that fails leaves its figure absent";
  }
  EXPECT_EQ(FakeRocmSmi::inits, 1);
  EXPECT_EQ(FakeRocmSmi::shutdowns, 1);
}

TEST(RocmSmiTelemetry, NoCounterOrNoDeviceSaysWhy) {
  FakeRocmSmi fake;
  const Api a = FakeRocmSmi::api();
  auto t = Telemetry::open(a, bdf_id(0, 0xc1, 0));
  ASSERT_TRUE(t.ok());
  FakeRocmSmi::energy_result = kNotSupported;
  std::string why;
  EXPECT_FALSE((*t)->energy_j(&why));
  EXPECT_NE(why.find("no energy counter on this GPU"), std::string::npos) << why;
  FakeRocmSmi::energy_result = 8;
  EXPECT_FALSE((*t)->energy_j(&why));
  EXPECT_NE(why.find("ROCm SMI error 8"), std::string::npos) << why;

  auto missing = Telemetry::open(a, bdf_id(0, 0x44, 0));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("none of its 2 devices is at PCI address 0000:44:00"), std::string::npos)
      << missing.status().message();
  Api broken = a;
  broken.rsmi_init = [](std::uint64_t) -> Return { return 8; };
  auto failed = Telemetry::open(broken, bdf_id(0, 0xc1, 0));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("rsmi_init failed: error 8 (RSMI_STATUS_UNKNOWN_ERROR)"), std::string::npos)
      << failed.status().message();
}

}  // namespace
}  // namespace tilesmith::rocm_smi
