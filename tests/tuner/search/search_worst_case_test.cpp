// The search's worst case, through the whole loop: on every recorded space (the shared
// Kernel Tuner GEMM spaces and the built-in templates' spaces in data/recordings),
// `autotune-loop --backend replay --max-evals 300 --seed S` must come within 5% of the
// space's optimum for every seed listed, none may miss. The seeds include each space's
// historically worst ones (docs/search.md, "Worst case"): a change that lets one basin
// swallow a run's budget again fails here.

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "runtime/replay/recording.h"
#include "tuner/bench/loop_run.h"
#include "tuner/search/offline_proposers.h"

namespace tilesmith {
namespace {

namespace fs = std::filesystem;

struct Space {
  const char* file;  // under the shared data folder, or data/recordings when `shipped`
  bool shipped;
  std::vector<std::uint64_t> seeds;
};

fs::path kt_data_dir() {
  if (const char* env = std::getenv("TILESMITH_KT_DATA"); env && *env) return env;
  return TILESMITH_KT_DATA_DIR;
}

// A memory-backed folder when there is one: the loop fsyncs every history row.
fs::path scratch() {
  std::error_code ec;
  if (fs::is_directory("/dev/shm", ec)) return "/dev/shm";
  return fs::temp_directory_path();
}

class WorstCase : public ::testing::TestWithParam<Space> {};

TEST_P(WorstCase, EverySeedComesWithinFivePercentIn300Evaluations) {
  const Space& space = GetParam();
  const fs::path file = space.shipped ? fs::path(TILESMITH_SOURCE_DIR) / "data" / "recordings" / space.file
                                      : kt_data_dir() / space.file;
  if (!fs::exists(file)) GTEST_SKIP() << file << " not found (set TILESMITH_KT_DATA)";
  replay::RecordingOptions o;
  o.spaces_dir = fs::path(TILESMITH_SOURCE_DIR) / "data" / "spaces";
  auto rec = replay::Recording::load(file, o);
  ASSERT_TRUE(rec.ok()) << rec.status().to_string();

  bench::LoopRunOptions options;
  options.max_evals = 300;
  options.targets = {0.05};
  options.retime_top = 0;  // re-timing adds no evaluation row
  options.scratch = scratch();
  std::vector<bench::LoopRunResult> results(space.seeds.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < space.seeds.size(); i = next++) {
      auto proposer = make_offline_proposer(default_offline_proposer());
      if (!proposer.ok()) continue;
      results[i] = bench::run_loop(*rec, **proposer, space.seeds[i], options);
    }
  };
  std::thread helper(work);
  work();
  helper.join();
  for (size_t i = 0; i < space.seeds.size(); ++i) {
    const auto& r = results[i];
    ASSERT_TRUE(r.status.ok()) << "seed " << space.seeds[i] << ": " << r.status.to_string();
    ASSERT_EQ(r.evaluations_to_target.size(), 1u) << "seed " << space.seeds[i];
    std::printf("[ worst  ] %s seed %llu: %s evaluations to 5%%, best/optimum %.3f\n", (*rec)->name().c_str(),
                static_cast<unsigned long long>(space.seeds[i]),
                r.evaluations_to_target[0] ? std::to_string(*r.evaluations_to_target[0]).c_str() : "never",
                r.best_over_optimum);
    EXPECT_TRUE(r.evaluations_to_target[0].has_value())
        << (*rec)->name() << " seed " << space.seeds[i] << " missed 5% of the optimum in " << r.evaluations
        << " evaluations (best " << r.best_over_optimum << "x the optimum)";
  }
}

std::string space_name(const ::testing::TestParamInfo<Space>& info) {
  std::string n = info.param.file;
  n = n.substr(0, n.find(".json"));
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(
    RecordedSpaces, WorstCase,
    // Per space, the seeds of 1-20 that took longest before (the first ones listed:
    // Titan seed 6 never came within 5%) or after issue 18's changes, then those of the
    // Gaussian-process picks (docs/search.md, "Fourth pass"); Titan seed 63 missed 5%
    // with the forest alone.
    ::testing::Values(Space{"gemm_RTX_3090.json.gz", false, {7, 13, 15, 20, 2, 5}},
                      Space{"gemm_RTX_Titan.json.gz", false, {6, 9, 8, 7, 4, 2, 63}},
                      Space{"gemm_wgmma_fp32_128x4096x4096_H200.json.gz", true, {3, 6, 18, 7, 13, 14}},
                      Space{"gemm_wgmma_fp32_4096x4096x4096_H200.json.gz", true, {16, 7, 20, 18, 13}},
                      Space{"gemm_wgmma_half_bf16_128x4096x4096_H200.json.gz", true, {1, 19, 13, 15, 2, 9}},
                      Space{"gemm_wgmma_half_bf16_4096x4096x4096_H200.json.gz", true, {14, 4, 15, 9, 11}}),
    space_name);

}  // namespace
}  // namespace tilesmith
