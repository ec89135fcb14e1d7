// Writes the package the Python package's tests open (tests/python/test_runtime.py): the
// fixture's gemm_tiled package at $TILESMITH_PYTHON_PACKAGE_DIR (else a temporary folder),
// checked by the library's own reader, so the Python tests start from a package that is
// known to be valid and can show what tampering with it does.
#include <gtest/gtest.h>

#include <cstdlib>

#include "gemmlib/package.h"
#include "tests/gemmlib/package_fixture.h"

namespace tilesmith::testing {
namespace {

TEST(PythonPackageFixture, WritesAPackageTheLibraryReads) {
  const char* where = std::getenv("TILESMITH_PYTHON_PACKAGE_DIR");
  const auto dir = where ? std::filesystem::path(where) : fresh_dir("pkg");
  std::filesystem::remove_all(dir);
  // Two nn.Linear problems (Y = X W^T: B column-major), one with a bias.
  auto linear = [](std::int64_t n, std::int64_t k, Epilogue e) {
    GemmProblem p = fp32_problem(16, n, k);
    p.b_layout = Layout::kColMajor;
    p.epilogue = e;
    return p;
  };
  write_package(dir, {{"q_m16", linear(64, 64, Epilogue::kNone), tiled_config(16, 16, 2)},
                      {"up_m16", linear(256, 64, Epilogue::kBiasCol), tiled_config(16, 64, 2)}});
  auto pkg = gemmlib::read_package(dir);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  EXPECT_EQ(pkg->problems.size(), 2u);
  if (!where) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tilesmith::testing
