// The run's --prior picks and model rows (add_warm_start_seeds, tuner/assembly/run_start.h): a
// source measured on another problem is carried to the run's problem by its blocks' waves
// (tuner/search/prior_rescale.h); a problem set's --prior, which serves every problem, as measured.

#include <gtest/gtest.h>

#include "registry/template_library.h"
#include "tests/template_config.h"
#include "tuner/assembly/run_start.h"

namespace tilesmith {
namespace {
using tilesmith::testing::config_with;

TEST(PriorSeeds, ASourceOfAnotherProblemIsCarriedToTheRunsProblem) {
  const TemplateLibrary library = TemplateLibrary::embedded().value();
  const KernelTemplate& t = *library.find("gemm_wgmma_half");
  DeviceFacts device = nominal_facts_for_arch("sm_90");
  device.multiprocessors = 132;
  GemmProblem square;
  square.m = square.n = square.k = 4096;
  square.a_type = square.b_type = square.c_type = DType::kBF16;
  GemmProblem skinny = square;
  skinny.m = 128;
  auto tile = [&](std::int64_t stages) {
    return config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"WARPGROUPS", 2}, {"STAGES", stages},
                           {"MMA_PENDING", 0}, {"SPLIT_K", 1}, {"GROUP_M", 1}, {"MIN_BLOCKS", 1}});
  };
  // On 4096^3 the tile with three blocks an SM is faster (3 rounds against 8); at M = 128 both
  // run one round, and the one a block does sooner leads.
  PriorSource source;
  source.template_name = t.name();
  source.describe = "gemm_wgmma_half, 4096^3, a test";
  source.problem = square;
  source.rows = {{tile(2), 1.0}, {tile(4), 1.2}};

  ProposerSettings carried;
  add_warm_start_seeds({}, {source}, {&t}, device, &skinny, &carried);
  ASSERT_EQ(carried.warm_start[t.name()].size(), 2u);
  EXPECT_EQ(carried.warm_start[t.name()][0].config, tile(4));
  EXPECT_NE(carried.warm_start[t.name()][0].origin.find("carried to 128x4096x4096"), std::string::npos)
      << carried.warm_start[t.name()][0].origin;
  ASSERT_EQ(carried.prior[t.name()].size(), 2u);
  EXPECT_EQ(carried.prior[t.name()][0].config, tile(4));
  EXPECT_DOUBLE_EQ(carried.prior[t.name()][1].time_ms, (1.0 / 3) / (1.2 / 8));  // relative to the fastest

  ProposerSettings as_measured;  // a set's --prior: no one problem to carry it to
  add_warm_start_seeds({}, {source}, {&t}, device, nullptr, &as_measured);
  ASSERT_EQ(as_measured.warm_start[t.name()].size(), 2u);
  EXPECT_EQ(as_measured.warm_start[t.name()][0].config, tile(2));
  EXPECT_DOUBLE_EQ(as_measured.prior[t.name()][1].time_ms, 1.2);
}

}  // namespace
}  // namespace tilesmith
