// How autotune-loop tells that a launcher started it as several ranks (tuner/assembly/scale_out.h):
// the build without MPI refuses such a launch on this, so R copies never tune into one
// results folder.

#include <cstdlib>

#include <gtest/gtest.h>

#include "tuner/assembly/scale_out.h"

namespace tilesmith {
namespace {

class LaunchEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVars) ::unsetenv(v);
  }
  void TearDown() override {
    for (const char* v : kVars) ::unsetenv(v);
  }
  static constexpr const char* kVars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS",
                                          "OMPI_COMM_WORLD_RANK", "PMI_RANK",  "SLURM_PROCID"};
};

TEST_F(LaunchEnv, NoLauncherIsOneRank) {
  const LaunchInfo l = launched_ranks();
  EXPECT_EQ(l.ranks, 1);
  EXPECT_EQ(l.launcher, "");
}

TEST_F(LaunchEnv, OpenMpiMpichAndSlurmAreRecognised) {
  ::setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  EXPECT_EQ(launched_ranks().ranks, 3);
  EXPECT_EQ(launched_ranks().launcher, "OMPI_COMM_WORLD_SIZE");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::setenv("PMI_SIZE", "4", 1);
  EXPECT_EQ(launched_ranks().ranks, 4);
  ::unsetenv("PMI_SIZE");
  ::setenv("SLURM_STEP_NUM_TASKS", "2", 1);
  EXPECT_EQ(launched_ranks().ranks, 2);
  EXPECT_EQ(launched_ranks().launcher, "SLURM_STEP_NUM_TASKS");
}

TEST_F(LaunchEnv, EachLaunchersRankIsReadBesideItsSize) {
  ::setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  EXPECT_EQ(launched_ranks().rank, -1) << "no rank variable";
  ::setenv("PMI_RANK", "1", 1);
  EXPECT_EQ(launched_ranks().rank, -1) << "another launcher's rank is not this one's";
  ::setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  EXPECT_EQ(launched_ranks().rank, 2);
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::setenv("SLURM_STEP_NUM_TASKS", "4", 1);
  ::setenv("SLURM_PROCID", "0", 1);
  EXPECT_EQ(launched_ranks().rank, 0);
}

TEST_F(LaunchEnv, GarbageIsNotALaunch) {
  ::setenv("OMPI_COMM_WORLD_SIZE", "two", 1);
  EXPECT_EQ(launched_ranks().ranks, 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "0", 1);
  EXPECT_EQ(launched_ranks().ranks, 1);
}

TEST_F(LaunchEnv, OneRankIsASingleHostRunAndLocalRankIsGpuZero) {
  ::setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
  EvaluatorSettings flags;
  flags.devices = "local-rank";
  auto s = join_scale_out(&flags);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->get(), nullptr) << "one rank needs no MPI";
  EXPECT_EQ(flags.devices, "0");
}

}  // namespace
}  // namespace tilesmith
