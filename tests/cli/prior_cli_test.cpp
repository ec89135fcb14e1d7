// autotune-loop --prior (docs/autotune-loop.md, "Priors") end to end on replay: the picks come
// first with their origin, then the search; bad sources stop the run before it starts.
// Problem sets' picks from their neighbours' histories are checked with the set's warm start
// (autotune_loop_cli_test.cpp, CliWarmStart).

#include <gtest/gtest.h>

#include "tests/cli/history_reader.h"
#include "tests/cli/process.h"
#include "tests/test_paths.h"

namespace tilesmith::testing {
namespace {
namespace fs = std::filesystem;

// --prior: a run on the fp32 128x4096x4096 recording of gemm_wgmma starts from the fastest
// configurations of the same kernel's 4096^3 recording (both given, so that replay names them
// after their kernel), said so in the rationale; a missing or empty source stops the run first.
TEST(CliPrior, ARunStartsFromAPriorsFastestConfigurationsAndBadSourcesAreUsageErrors) {
  const fs::path recs = source_dir() / "data" / "recordings";
  const fs::path target = recs / "gemm_wgmma_fp32_128x4096x4096_H200.json.gz";
  const fs::path prior = recs / "gemm_wgmma_fp32_4096x4096x4096_H200.json.gz";
  const fs::path dir = fresh_dir("cli_prior");
  const std::string exe = autotune_loop_exe().string();
  auto r = run_process({exe, "--backend", "replay", "--replay-file", target.string(), "--replay-file", prior.string(),
                        "--m", "128", "--n", "4096", "--k", "4096", "--prior", prior.string(), "--max-evals", "16",
                        "--retime", "0", "--results", (dir / "r").string(), "--progress", "none"},
                       dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.err + r.out, "prior: 4 configuration(s) for gemm_wgmma, the first prior: fastest of"))
      << r.err;
  // All of the source's measurements go to the search's model (evolve's agreement test).
  EXPECT_TRUE(contains(r.err + r.out, "measurement(s) of gemm_wgmma for the search's model of its space")) << r.err;
  // Of the four picks, those valid at M = 128 (two: the others break its rules for this shape)
  // come first, then the search.
  auto rows = read_csv_rows(dir / "r" / "history.csv");
  ASSERT_EQ(rows.size(), 16u);
  std::size_t picks = 0;
  while (picks < rows.size() && rows[picks].at("proposer") == "warm-start") {
    EXPECT_TRUE(contains(rows[picks].at("rationale"), "warm start: prior: ")) << rows[picks].at("rationale");
    EXPECT_TRUE(contains(rows[picks].at("rationale"), "4096x4096x4096")) << rows[picks].at("rationale");
    ++picks;
  }
  EXPECT_GE(picks, 1u);
  EXPECT_LE(picks, 4u);
  for (std::size_t i = picks; i < rows.size(); ++i) EXPECT_NE(rows[i].at("proposer"), "warm-start") << i;

  auto missing = run_process({exe, "--m", "64", "--n", "64", "--k", "64", "--results", (dir / "m").string(),
                              "--prior", "/nonexistent"},
                             dir);
  EXPECT_EQ(missing.exit_code, 2) << missing.out << missing.err;
  EXPECT_TRUE(contains(missing.err, "--prior: /nonexistent: no such file or folder; give a results folder"))
      << missing.err;
  EXPECT_FALSE(fs::exists(dir / "m")) << "nothing was started";
  fs::create_directories(dir / "empty");
  auto empty = run_process({exe, "--m", "64", "--n", "64", "--k", "64", "--results", (dir / "e").string(), "--prior",
                            (dir / "empty").string()},
                           dir);
  EXPECT_EQ(empty.exit_code, 2) << empty.out << empty.err;
  EXPECT_TRUE(contains(empty.err, "is a folder without a history.csv")) << empty.err;
}

}  // namespace
}  // namespace tilesmith::testing
