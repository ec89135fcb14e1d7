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

// gemm_wgmma_half's 128x128 tile in 2 and 4 stages measured on 4096^3, and the problems.
struct TwoTiles {
  TemplateLibrary library = TemplateLibrary::embedded().value();
  const KernelTemplate& t = *library.find("gemm_wgmma_half");
  DeviceFacts device = nominal_facts_for_arch("sm_90");
  GemmProblem square, skinny;
  PriorSource source;
  TwoTiles() {
    device.multiprocessors = 132;
    square.m = square.n = square.k = 4096;
    square.a_type = square.b_type = square.c_type = DType::kBF16;
    skinny = square;
    skinny.m = 128;
    // On 4096^3 the tile with three blocks an SM is faster (3 rounds against 8); at M = 128
    // both run one round, and the one a block does sooner leads.
    source.template_name = t.name();
    source.describe = "gemm_wgmma_half, 4096^3, a test";
    source.problem = square;
    source.rows = {{tile(2), 1.0}, {tile(4), 1.2}};
  }
  Config tile(std::int64_t stages) const {
    return config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"WARPGROUPS", 2}, {"STAGES", stages},
                           {"MMA_PENDING", 0}, {"SPLIT_K", 1}, {"GROUP_M", 1}, {"MIN_BLOCKS", 1}});
  }
};

TEST(PriorSeeds, ASourceOfAnotherProblemIsCarriedToTheRunsProblem) {
  const TwoTiles f;
  const KernelTemplate& t = f.t;
  ProposerSettings carried;
  add_warm_start_seeds({}, {f.source}, {&t}, f.device, &f.skinny, &carried);
  ASSERT_EQ(carried.warm_start[t.name()].size(), 2u);
  EXPECT_EQ(carried.warm_start[t.name()][0].config, f.tile(4));
  EXPECT_NE(carried.warm_start[t.name()][0].origin.find("carried to 128x4096x4096"), std::string::npos)
      << carried.warm_start[t.name()][0].origin;
  ASSERT_EQ(carried.prior[t.name()].size(), 2u);
  EXPECT_EQ(carried.prior[t.name()][0].config, f.tile(4));
  EXPECT_DOUBLE_EQ(carried.prior[t.name()][1].time_ms, (1.0 / 3) / (1.2 / 8));  // relative to the fastest

  ProposerSettings as_measured;  // a set's --prior: no one problem to carry it to
  add_warm_start_seeds({}, {f.source}, {&t}, f.device, nullptr, &as_measured);
  ASSERT_EQ(as_measured.warm_start[t.name()].size(), 2u);
  EXPECT_EQ(as_measured.warm_start[t.name()][0].config, f.tile(2));
  EXPECT_DOUBLE_EQ(as_measured.prior[t.name()][1].time_ms, 1.2);
}

// On replay the template is a recorded space without launch geometry: a recording named after
// one of tilesmith's kernels (a problem set's recordings are) is carried by that kernel's
// geometry; one named otherwise (a Kernel Tuner kernel of its own) is taken as measured.
TEST(PriorSeeds, ARecordedSpaceIsCarriedByTheGeometryOfTheKernelOfItsName) {
  const TwoTiles f;
  const KernelTemplate recorded = KernelTemplate::recorded(f.t.name(), f.t.space(), "a recording");
  const KernelTemplate& geometry = launch_geometry_of(recorded);
  EXPECT_FALSE(geometry.is_recorded());
  EXPECT_EQ(geometry.name(), f.t.name());
  ProposerSettings carried;
  add_warm_start_seeds({}, {f.source}, {&recorded}, f.device, &f.skinny, &carried);
  ASSERT_EQ(carried.warm_start[recorded.name()].size(), 2u);
  EXPECT_EQ(carried.warm_start[recorded.name()][0].config, f.tile(4));

  const KernelTemplate other = KernelTemplate::recorded("xgemm_recording", f.t.space(), "another kernel");
  EXPECT_EQ(&launch_geometry_of(other), &other);
  PriorSource source = f.source;
  source.template_name = other.name();
  ProposerSettings as_measured;
  add_warm_start_seeds({}, {source}, {&other}, f.device, &f.skinny, &as_measured);
  ASSERT_EQ(as_measured.warm_start[other.name()].size(), 2u);
  EXPECT_EQ(as_measured.warm_start[other.name()][0].config, f.tile(2));
  EXPECT_EQ(&launch_geometry_of(f.t), &f.t);  // a template with source is its own
}

}  // namespace
}  // namespace tilesmith
