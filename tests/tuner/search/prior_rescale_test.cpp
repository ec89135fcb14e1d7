// A prior carried to another problem by its blocks' waves (tuner/search/prior_rescale.h): the
// rounds a config's blocks run in, from the template's own launch geometry, and the source's
// times scaled by the two problems' rounds and K.

#include "tuner/search/prior_rescale.h"

#include <gtest/gtest.h>

#include "registry/template_library.h"
#include "tests/template_config.h"

namespace tilesmith {
namespace {
using tilesmith::testing::config_with;

DeviceFacts hopper() {
  DeviceFacts d = nominal_facts_for_arch("sm_90");
  d.multiprocessors = 132;
  return d;
}

GemmProblem problem(std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmProblem p;
  p.m = m, p.n = n, p.k = k;
  p.a_type = p.b_type = p.c_type = DType::kBF16;
  return p;
}

const KernelTemplate& builtin(const std::string& name) {
  static const TemplateLibrary library = TemplateLibrary::embedded().value();
  const KernelTemplate* t = library.find(name);
  EXPECT_NE(t, nullptr) << name;
  return *t;
}

// gemm_wgmma_half, 128x128 tiles, two warpgroups: STAGES 4 asks 4 x 256 x 128 + 1024 bytes of
// shared memory (one block an SM), STAGES 2 half of that (three an SM).
Config wgmma_tile(std::int64_t stages) {
  return config_with(builtin("gemm_wgmma_half"), {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"WARPGROUPS", 2},
                                                  {"STAGES", stages}, {"MMA_PENDING", 0}, {"SPLIT_K", 1},
                                                  {"GROUP_M", 1}, {"MIN_BLOCKS", 1}});
}

TEST(WaveRounds, AreTheGridsBlocksOverTheSmsTimesWhatFitsOnOne) {
  const KernelTemplate& t = builtin("gemm_wgmma_half");
  // 4096^3: 32 x 32 = 1,024 blocks.
  EXPECT_EQ(wave_rounds(t, wgmma_tile(4), problem(4096, 4096, 4096), hopper()), 8);  // 1,024 / 132
  EXPECT_EQ(wave_rounds(t, wgmma_tile(2), problem(4096, 4096, 4096), hopper()), 3);  // 1,024 / 396
  // 128 x 4096 x 4096: 32 blocks, one round whatever fits.
  EXPECT_EQ(wave_rounds(t, wgmma_tile(4), problem(128, 4096, 4096), hopper()), 1);
  // A split along K multiplies the blocks.
  Config split = wgmma_tile(4);
  split["SPLIT_K"] = 4;
  EXPECT_EQ(wave_rounds(t, split, problem(4096, 4096, 4096), hopper()), 32);  // 4,096 / 132
}

TEST(WaveRounds, APersistentGridCountsItsTilesNotItsLaunch) {
  const KernelTemplate& t = builtin("gemm_tma_half");
  const Config c = config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"CONSUMERS", 2}, {"STAGES", 4},
                                   {"PERSISTENT", 1}, {"SPLIT_K", 1}, {"CLUSTER_M", 1}, {"CLUSTER_N", 1},
                                   {"CLUSTER_K", 1}, {"PINGPONG", 0}});
  auto rendered = t.render(problem(4096, 4096, 4096), c, hopper());
  ASSERT_TRUE(rendered.ok()) << rendered.status().message();
  EXPECT_EQ(rendered->grid[0], 132u);  // one block an SM, each looping over tiles
  EXPECT_EQ(wave_rounds(t, c, problem(4096, 4096, 4096), hopper()), 4);  // 512 tiles / 132
}

TEST(WaveRounds, UnknownWithoutTheSmCountOrForAConfigTheProblemRefuses) {
  const KernelTemplate& t = builtin("gemm_wgmma_half");
  DeviceFacts no_sms = hopper();
  no_sms.multiprocessors = 0;
  EXPECT_EQ(wave_rounds(t, wgmma_tile(4), problem(4096, 4096, 4096), no_sms), std::nullopt);
  Config grouped = wgmma_tile(4);
  grouped["GROUP_M"] = 8;  // needs more than one row of tiles: M = 128 has one
  EXPECT_EQ(wave_rounds(t, grouped, problem(128, 4096, 4096), hopper()), std::nullopt);
}

PriorSource measured_on(const GemmProblem& p, std::vector<std::pair<Config, double>> rows) {
  PriorSource s;
  s.template_name = "gemm_wgmma_half";
  s.describe = "gemm_wgmma_half, a test";
  s.problem = p;
  for (auto& [c, ms] : rows) s.rows.push_back({c, ms});
  return s;
}

TEST(RescaledToProblem, ScalesEachTimeByTheRoundsAndKAndReordersThem) {
  const KernelTemplate& t = builtin("gemm_wgmma_half");
  Config grouped = wgmma_tile(4);
  grouped["GROUP_M"] = 8;
  // On 4096^3 the three-an-SM tile is the faster; at M = 128 both run one round, so the one with
  // the longer per-block time is slower there: 1.0 / 3 rounds against 1.2 / 8.
  const PriorSource source = measured_on(problem(4096, 4096, 4096),
                                         {{wgmma_tile(2), 1.0}, {wgmma_tile(4), 1.2}, {grouped, 1.3}});
  const PriorSource carried = rescaled_to_problem(source, t, problem(128, 4096, 2048), hopper());
  ASSERT_EQ(carried.rows.size(), 2u);  // GROUP_M 8 cannot run at M = 128: left out
  EXPECT_EQ(carried.rows[0].config, wgmma_tile(4));
  EXPECT_DOUBLE_EQ(carried.rows[0].time_ms, 1.2 / 8 * 0.5);  // one round of eight, half the K
  EXPECT_EQ(carried.rows[1].config, wgmma_tile(2));
  EXPECT_DOUBLE_EQ(carried.rows[1].time_ms, 1.0 / 3 * 0.5);
  EXPECT_NE(carried.describe.find("carried to 128x4096x2048"), std::string::npos) << carried.describe;
  ASSERT_TRUE(carried.problem.has_value());
}

TEST(RescaledToProblem, LeavesASourceWithoutAProblemOrOfTheSameSizesAsItIs) {
  const KernelTemplate& t = builtin("gemm_wgmma_half");
  PriorSource unknown = measured_on(problem(4096, 4096, 4096), {{wgmma_tile(2), 1.0}, {wgmma_tile(4), 1.2}});
  unknown.problem.reset();  // a Kernel Tuner file of its own
  const PriorSource a = rescaled_to_problem(unknown, t, problem(128, 4096, 4096), hopper());
  EXPECT_EQ(a.rows[0].time_ms, 1.0);
  EXPECT_EQ(a.describe, unknown.describe);
  const PriorSource same = measured_on(problem(128, 4096, 4096), {{wgmma_tile(2), 1.0}});
  EXPECT_EQ(rescaled_to_problem(same, t, problem(128, 4096, 4096), hopper()).rows[0].time_ms, 1.0);
  // A device that does not say its SMs carries nothing: the source as it is.
  DeviceFacts no_sms = hopper();
  no_sms.multiprocessors = 0;
  const PriorSource source = measured_on(problem(4096, 4096, 4096), {{wgmma_tile(2), 1.0}});
  EXPECT_EQ(rescaled_to_problem(source, t, problem(128, 4096, 4096), no_sms).rows[0].time_ms, 1.0);
}

TEST(PriorsForProblem, CarriesOnlyTheTemplatesOwnSources) {
  const KernelTemplate& t = builtin("gemm_wgmma_half");
  PriorSource other = measured_on(problem(4096, 4096, 4096), {{wgmma_tile(4), 1.2}});
  other.template_name = "gemm_hmma";
  const auto out = priors_for_problem({measured_on(problem(4096, 4096, 4096), {{wgmma_tile(4), 1.2}}), other}, t,
                                      problem(128, 4096, 4096), hopper());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_DOUBLE_EQ(out[0].rows[0].time_ms, 1.2 / 8);
  EXPECT_DOUBLE_EQ(out[1].rows[0].time_ms, 1.2);
}

}  // namespace
}  // namespace tilesmith
