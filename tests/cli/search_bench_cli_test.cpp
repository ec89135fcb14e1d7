// tilesmith_search_bench's transfer mode end to end (docs/search.md, "Transfer"): with --prior
// the fp32 128x4096x4096 recording of gemm_wgmma is searched from its 4096^3 recording's picks
// and model, the table reports the worst seed, and the prior's head start shows against cold.
// Through the loop (--loop) the proposer gets the prior's model as autotune-loop hands it over.

#include <cstdlib>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/cli/process.h"
#include "tests/test_paths.h"

namespace tilesmith::testing {
namespace {
namespace fs = std::filesystem;

// The evolve row for the 5% target: its cells, split at '|'.
std::vector<std::string> evolve_row(const std::string& out) {
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind("| evolve | 5% |", 0) == 0) {
      std::vector<std::string> cells;
      std::istringstream in(line.substr(1));
      std::string cell;
      while (std::getline(in, cell, '|')) {
        const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
        cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
      }
      return cells;
    }
  return {};
}

TEST(CliSearchBench, APriorFromTheNeighbouringShapeFindsTheTargetSoonerThanColdAndTheTableHasTheWorstSeed) {
  const fs::path recs = source_dir() / "data" / "recordings";
  const fs::path target = recs / "gemm_wgmma_fp32_128x4096x4096_H200.json.gz";
  const fs::path prior = recs / "gemm_wgmma_fp32_4096x4096x4096_H200.json.gz";
  const fs::path exe = binary_dir() / "tuner" / "bench" / "tilesmith_search_bench";
  const fs::path dir = fresh_dir("cli_search_bench");
  const std::vector<std::string> common = {exe.string(), "--proposers", "evolve", "--seeds", "4", "--cap", "120"};
  std::vector<std::string> with = common, cold = common;
  with.insert(with.end(), {"--prior", prior.string(), target.string()});
  cold.push_back(target.string());
  const auto a = run_process(with, dir), b = run_process(cold, dir);
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  EXPECT_NE(a.out.find("prior: 4 picks from gemm_wgmma, 4096x4096x4096"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("| median | q1 | q3 | worst | mean | cap hits |"), std::string::npos) << a.out;
  // proposer, target, median, q1, q3, worst, mean, cap hits, ...
  const auto p = evolve_row(a.out), c = evolve_row(b.out);
  ASSERT_GE(p.size(), 8u) << a.out;
  ASSERT_GE(c.size(), 8u) << b.out;
  EXPECT_EQ(p[7], "0/4");
  EXPECT_EQ(c[7], "0/4");
  // The 4096^3 shape's fastest configurations carry over to the skinny one (docs/search.md:
  // 3 evaluations with the prior against a median of 40 cold over 20 seeds).
  EXPECT_LE(std::atof(p[5].c_str()), 10.0) << a.out;
  EXPECT_LT(std::atof(p[2].c_str()), std::atof(c[2].c_str())) << a.out << b.out;
  // A prior that is not there is a usage error.
  auto missing = run_process({exe.string(), "--prior", (dir / "nothing.csv").string(), target.string()}, dir);
  EXPECT_EQ(missing.exit_code, 2) << missing.out << missing.err;
  EXPECT_NE(missing.err.find("--prior:"), std::string::npos) << missing.err;
}

// Through the whole loop the prior's measurements reach the proposer with its picks, as
// autotune-loop --prior gives them (tuner/assembly/proposer_factory.cpp), and not only the picks:
// on the bf16 pair whose picks alone leave the search in its cold design (seeds 1-4: 38, 38, 38
// and 47 evaluations to 5%), the model's agreement with them shortens it (17 on each).
TEST(CliSearchBench, ThroughTheLoopThePriorsModelComesWithItsPicks) {
  const fs::path recs = source_dir() / "data" / "recordings";
  const fs::path exe = binary_dir() / "tuner" / "bench" / "tilesmith_search_bench";
  const fs::path dir = fresh_dir("cli_search_bench_loop");
  const auto a = run_process({exe.string(), "--proposers", "evolve", "--seeds", "4", "--cap", "40", "--loop", "--prior",
                              (recs / "gemm_wgmma_half_bf16_128x4096x4096_H200.json.gz").string(),
                              (recs / "gemm_wgmma_half_bf16_4096x4096x4096_H200.json.gz").string()},
                             dir, {{"TMPDIR", dir.string()}});
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  const auto p = evolve_row(a.out);
  ASSERT_GE(p.size(), 8u) << a.out;
  EXPECT_EQ(p[7], "0/4") << a.out;
  EXPECT_LE(std::atof(p[5].c_str()), 25.0) << a.out;  // the worst seed
}

}  // namespace
}  // namespace tilesmith::testing
