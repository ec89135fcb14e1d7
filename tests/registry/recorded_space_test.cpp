// The recorded Kernel Tuner GEMM spaces, rebuilt from their tune_params plus the seven
// restrictions the data README gives, must reproduce the recordings exactly.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "registry/space.h"
#include "runtime/replay/kernel_tuner_cache.h"
#include "runtime/replay/recording.h"

namespace tilesmith {
namespace {

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("TILESMITH_KT_DATA"); env && *env) return env;
  return TILESMITH_KT_DATA_DIR;
}

const char* const kRestrictions[] = {
    "KWG % KWI == 0",
    "MWG % (MDIMC * VWM) == 0",
    "NWG % (NDIMC * VWN) == 0",
    "MWG % (MDIMA * VWM) == 0",
    "NWG % (NDIMB * VWN) == 0",
    "KWG % ((MDIMC * NDIMC)/MDIMA) == 0",
    "KWG % ((MDIMC * NDIMC)/NDIMB) == 0",
};

class RecordedSpace : public ::testing::TestWithParam<const char*> {};

TEST_P(RecordedSpace, RestrictionsReproduceTheRecording) {
  std::filesystem::path file = data_dir() / GetParam();
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not found (set TILESMITH_KT_DATA)";
  auto cache = replay::read_kernel_tuner_cache(file);
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();

  nlohmann::json j;
  for (size_t i = 0; i < cache->param_names.size(); ++i)
    j["parameters"].push_back(
        {{"name", cache->param_names[i]}, {"values", cache->param_values[i]}});
  for (const char* r : kRestrictions) j["constraints"].push_back(r);
  auto space = ParamSpace::from_json(j);
  ASSERT_TRUE(space.ok()) << space.status().to_string();
  EXPECT_EQ(space->cartesian_size(), 82944u);

  auto t0 = std::chrono::steady_clock::now();
  auto valid = space->enumerate_valid({});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ speed ] %s: %zu valid of %llu in %.2f ms (%.1f M cartesian points/s)\n",
              GetParam(), valid.size(), static_cast<unsigned long long>(space->cartesian_size()),
              secs * 1e3, double(space->cartesian_size()) / secs / 1e6);
  EXPECT_EQ(valid.size(), 17956u);

  std::set<PointValues> enumerated(valid.begin(), valid.end());
  std::set<PointValues> recorded;
  for (const auto& r : cache->records) recorded.insert(r.point);
  EXPECT_EQ(recorded.size(), 17956u);
  EXPECT_TRUE(enumerated == recorded) << "the valid set differs from the cache's keys";
  for (const auto& p : recorded) {
    if (!space->is_valid(p, {})) {
      ADD_FAILURE() << "recorded point rejected: "
                    << space->validate(space->to_config(p), {}).message();
      break;
    }
  }
}

TEST_P(RecordedSpace, ShippedSpaceFileMatchesTheRecording) {
  std::filesystem::path file = data_dir() / GetParam();
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not found (set TILESMITH_KT_DATA)";
  replay::RecordingOptions options;
  options.spaces_dir = std::filesystem::path(TILESMITH_SOURCE_DIR) / "data" / "spaces";
  auto rec = replay::Recording::load(file, options);
  ASSERT_TRUE(rec.ok()) << rec.status().to_string();
  EXPECT_NE((*rec)->space_origin().find("clblast_xgemm.json"), std::string::npos)
      << (*rec)->space_origin();
  EXPECT_EQ((*rec)->unrecorded_valid(), 0u);
  EXPECT_FALSE((*rec)->space().is_restricted())
      << "the constraints alone should describe the recording";
  EXPECT_EQ((*rec)->space().enumerate_valid((*rec)->context()).size(), 17956u);
  EXPECT_EQ((*rec)->space().constraint_texts().size(), 7u);
  ASSERT_NE((*rec)->space().find("MWG"), nullptr);
  EXPECT_FALSE((*rec)->space().find("MWG")->description.empty());
}

INSTANTIATE_TEST_SUITE_P(KernelTunerGemm, RecordedSpace,
                         ::testing::Values("gemm_RTX_3090.json.gz", "gemm_RTX_Titan.json.gz"),
                         [](const auto& info) {
                           std::string n = info.param;
                           return n.substr(5, n.find('.') - 5);
                         });

}  // namespace
}  // namespace tilesmith
