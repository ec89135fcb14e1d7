// The dispatch rule without a GPU: exact, nearest (skipping configs invalid for the
// shape), vendor, the foreign-device rule with and without the opt-in, and "never slower
// than the vendor" (a tuned kernel that did not beat the vendor at tuning by more than
// the noise gives way to it, with the reason).

#include <gtest/gtest.h>

#include <cmath>

#include "gemmlib/dispatch.h"
#include "tests/gemmlib/package_fixture.h"

namespace tilesmith::gemmlib {
namespace {

using testing::fp32_problem;
using testing::fresh_dir;
using testing::package_device;
using testing::tiled_config;
using testing::TunedEntry;

class GemmlibDispatchTest : public ::testing::Test {
 protected:
  void write(const std::vector<TunedEntry>& entries) {
    auto dir = fresh_dir("pkg");
    testing::write_package(dir, entries);
    auto p = read_package(dir);
    ASSERT_TRUE(p.ok()) << p.status().message();
    pkg_ = std::move(p).value();
  }
  Decision decide_on(const GemmProblem& p, const DeviceFacts& dev = package_device(), bool allow_foreign = false) {
    auto d = decide(pkg_, dev, p, DispatchOptions{allow_foreign});
    EXPECT_TRUE(d.ok()) << d.status().message();
    return d.ok() ? *d : Decision{};
  }
  Package pkg_;
};

TEST(GemmlibDispatchRule, ShapeDistanceIsTheSumOfLogRatios) {
  EXPECT_DOUBLE_EQ(shape_distance(fp32_problem(64, 64, 64), fp32_problem(64, 64, 64)), 0.0);
  EXPECT_NEAR(shape_distance(fp32_problem(128, 32, 64), fp32_problem(64, 64, 64)), 2 * std::log(2.0), 1e-12);
  GemmProblem a = fp32_problem(64, 64, 64), b = a;
  b.beta = 0.5;
  EXPECT_FALSE(same_kind(a, b));  // beta zero or not picks TS_HAS_BETA
  b.beta = 0;
  b.alpha = 2;
  EXPECT_TRUE(same_kind(a, b));   // alpha is a kernel argument
  b.c_layout = Layout::kColMajor;
  EXPECT_FALSE(same_kind(a, b));
}

TEST_F(GemmlibDispatchTest, ExactProblemRunsItsTunedKernelWithTheStoredGeometry) {
  write({{"a", fp32_problem(256, 256, 256), tiled_config(64, 64)}, {"b", fp32_problem(64, 4096, 512), tiled_config(32, 128)}});
  Decision d = decide_on(fp32_problem(64, 4096, 512));
  EXPECT_EQ(d.path, Path::kExact);
  ASSERT_NE(d.tuned, nullptr);
  EXPECT_EQ(d.tuned->name, "b");
  EXPECT_EQ(d.launch.package_kernel, pkg_.find_kernel(d.tuned->kernel_id));
  EXPECT_EQ(d.launch.kernel_key, d.tuned->kernel_id);
  EXPECT_EQ(d.launch.grid, d.tuned->grid);
  EXPECT_EQ(d.launch.block, d.tuned->block);
  EXPECT_FALSE(d.foreign_device);
  EXPECT_NE(d.reason.find("exact: tuned problem 'b'"), std::string::npos) << d.reason;
}

TEST_F(GemmlibDispatchTest, UntunedShapeTakesTheNearestValidConfigWithItsOwnGeometry) {
  write({{"small", fp32_problem(128, 128, 128), tiled_config(64, 64)},
         {"wide", fp32_problem(64, 8192, 1024), tiled_config(32, 128)}});
  Decision d = decide_on(fp32_problem(96, 6000, 1000));
  EXPECT_EQ(d.path, Path::kNearest);
  ASSERT_NE(d.tuned, nullptr);
  EXPECT_EQ(d.tuned->name, "wide");
  EXPECT_NEAR(d.distance, shape_distance(fp32_problem(96, 6000, 1000), fp32_problem(64, 8192, 1024)), 1e-12);
  // Same binary (options have no M, N, K), geometry rendered for the new shape.
  EXPECT_EQ(d.launch.package_kernel, pkg_.find_kernel(d.tuned->kernel_id));
  EXPECT_EQ(d.launch.grid[0], 47u);  // ceil_div(6000, 128)
  EXPECT_EQ(d.launch.grid[1], 3u);   // ceil_div(96, 32)
  EXPECT_NE(d.reason.find("nearest: tuned problem 'wide'"), std::string::npos) << d.reason;

  // Alpha differs from the tuned problem: not exact, but the same kernel at distance 0.
  GemmProblem scaled = fp32_problem(128, 128, 128);
  scaled.alpha = 0.5;
  d = decide_on(scaled);
  EXPECT_EQ(d.path, Path::kNearest);
  EXPECT_EQ(d.tuned->name, "small");
  EXPECT_DOUBLE_EQ(d.distance, 0.0);
}

TEST_F(GemmlibDispatchTest, ConfigInvalidForTheShapeIsSkipped) {
  // gemm_tiled requires ceil_div(M, BLOCK_M) <= 65535: BLOCK_M = 16 cannot serve M = 2,000,000.
  write({{"near_but_small_tiles", fp32_problem(1000000, 16, 16), tiled_config(16, 16, 2)},
         {"far_big_tiles", fp32_problem(4096, 16, 16), tiled_config(128, 16)}});
  Decision d = decide_on(fp32_problem(2000000, 16, 16));
  EXPECT_EQ(d.path, Path::kNearest);
  ASSERT_NE(d.tuned, nullptr);
  EXPECT_EQ(d.tuned->name, "far_big_tiles");
  EXPECT_NE(d.reason.find("1 invalid for this shape"), std::string::npos) << d.reason;
}

TEST_F(GemmlibDispatchTest, NothingValidOrNothingOfTheKindGoesToTheVendor) {
  write({{"small_tiles", fp32_problem(1000000, 16, 16), tiled_config(16, 16, 2)}});
  Decision d = decide_on(fp32_problem(2000000, 16, 16));
  EXPECT_EQ(d.path, Path::kVendor);
  EXPECT_EQ(d.tuned, nullptr);
  EXPECT_NE(d.reason.find("none of the 1 tuned problems of this kind is valid"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("ceil_div(M, BLOCK_M) <= 65535"), std::string::npos) << d.reason;

  GemmProblem transposed = fp32_problem(1000000, 16, 16);
  transposed.a_layout = Layout::kColMajor;
  d = decide_on(transposed);
  EXPECT_EQ(d.path, Path::kVendor);
  EXPECT_NE(d.reason.find("no tuned problem with these types"), std::string::npos) << d.reason;

  GemmProblem half = fp32_problem(1000000, 16, 16);
  half.a_type = half.b_type = half.c_type = DType::kBF16;
  EXPECT_EQ(decide_on(half).path, Path::kVendor);
}

TEST_F(GemmlibDispatchTest, EqualDistanceGoesToTheFasterTunedKernel) {
  write({{"slow", fp32_problem(64, 256, 256), tiled_config(64, 64), 0.09},
         {"fast", fp32_problem(256, 64, 256), tiled_config(32, 32), 0.01}});
  Decision d = decide_on(fp32_problem(128, 128, 256));
  EXPECT_EQ(d.path, Path::kNearest);
  EXPECT_EQ(d.tuned->name, "fast");
}

TEST_F(GemmlibDispatchTest, ForeignDeviceGetsTheVendorUnlessOptedIn) {
  write({{"a", fp32_problem(256, 256, 256), tiled_config(64, 64)}});
  DeviceFacts other = nominal_facts_for_arch("sm_90");
  other.name = "NVIDIA H100 PCIe";
  other.multiprocessors = 114;
  EXPECT_EQ(device_mismatch(pkg_.device, other), "name NVIDIA H200 vs NVIDIA H100 PCIe, multiprocessors 132 vs 114");
  Decision d = decide_on(fp32_problem(256, 256, 256), other);
  EXPECT_EQ(d.path, Path::kForeignDevice);
  EXPECT_FALSE(d.runs_package_kernel());
  EXPECT_NE(d.reason.find("allow_foreign_device"), std::string::npos) << d.reason;

  // Opted in: the tuned config, rendered for this device and compiled for it.
  d = decide_on(fp32_problem(256, 256, 256), other, true);
  EXPECT_EQ(d.path, Path::kExact);
  EXPECT_TRUE(d.foreign_device);
  EXPECT_EQ(d.launch.package_kernel, nullptr);
  EXPECT_EQ(d.launch.kernel_key.rfind("compiled-", 0), 0u) << d.launch.kernel_key;
  EXPECT_NE(d.reason.find("another device by opt-in"), std::string::npos) << d.reason;

  // The same device by identity: everything else in the facts may differ.
  DeviceFacts same = package_device();
  same.driver_version = "CUDA 13.1";
  EXPECT_EQ(decide_on(fp32_problem(256, 256, 256), same).path, Path::kExact);
}

// ---------------------------------------------------------------- never slower than the vendor

TEST_F(GemmlibDispatchTest, TunedKernelSlowerThanItsVendorTimeGoesToTheVendorWithTheReason) {
  write({{"slow", fp32_problem(256, 256, 256), tiled_config(64, 64), 0.0231, 0.0210}});
  Decision d = decide_on(fp32_problem(256, 256, 256));
  EXPECT_EQ(d.path, Path::kVendor);
  EXPECT_FALSE(d.runs_package_kernel());
  ASSERT_NE(d.tuned, nullptr);
  EXPECT_EQ(d.tuned->name, "slow");
  EXPECT_EQ(d.vs_vendor.verdict, analysis::VendorVerdict::kVendorFaster);
  EXPECT_EQ(d.reason,
            "vendor: tuned problem 'slow' (256x256x256 fp32 NN): tuned kernel 0.0231 ms vs vendor 0.0210 ms at "
            "tuning: vendor faster");
  // The kernel it replaces is kept, for a vendor library that cannot run the problem.
  EXPECT_TRUE(d.vendor_by_rule());
  EXPECT_EQ(d.launch.package_kernel, pkg_.find_kernel(d.tuned->kernel_id));
  EXPECT_STREQ(path_name(d.path), "vendor");
}

TEST_F(GemmlibDispatchTest, TunedKernelFasterOnlyWithinTheNoiseGoesToTheVendorWithTheReason) {
  // 1.4% faster, but the tuned median's p20-p80 band is 2% wide: within the noise.
  write({{"close", fp32_problem(256, 256, 256), tiled_config(64, 64), 0.0212, 0.0215, 0.02, 0.004}});
  Decision d = decide_on(fp32_problem(256, 256, 256));
  EXPECT_EQ(d.path, Path::kVendor);
  ASSERT_NE(d.tuned, nullptr);
  EXPECT_EQ(d.vs_vendor.verdict, analysis::VendorVerdict::kWithinNoise);
  EXPECT_EQ(d.reason,
            "vendor: tuned problem 'close' (256x256x256 fp32 NN): tuned kernel 0.0212 ms vs vendor 0.0215 ms at "
            "tuning: within noise (1.4% <= 2.0%)");

  // The vendor's spread counts the same; a tie (0%) is within the noise as well.
  write({{"tie", fp32_problem(256, 256, 256), tiled_config(64, 64), 0.02, 0.02}});
  d = decide_on(fp32_problem(256, 256, 256));
  EXPECT_EQ(d.path, Path::kVendor);
  EXPECT_NE(d.reason.find("within noise (0.0% <= 1.0%)"), std::string::npos) << d.reason;
  write({{"noisy_vendor", fp32_problem(256, 256, 256), tiled_config(64, 64), 0.020, 0.0206, 0, 0.05}});
  d = decide_on(fp32_problem(256, 256, 256));
  EXPECT_EQ(d.path, Path::kVendor);
  EXPECT_NE(d.reason.find("within noise (3.0% <= 5.0%)"), std::string::npos) << d.reason;
}

TEST_F(GemmlibDispatchTest, TunedKernelFasterBeyondTheNoiseRunsItsKernel) {
  // 1.4% faster and nothing recorded of the spread: the 1% floor is the noise.
  write({{"fast", fp32_problem(256, 256, 256), tiled_config(64, 64), 0.0212, 0.0215},
         {"clear", fp32_problem(64, 4096, 512), tiled_config(32, 128), 0.0200, 0.0250, 0.01, 0.01}});
  Decision d = decide_on(fp32_problem(256, 256, 256));
  EXPECT_EQ(d.path, Path::kExact);
  EXPECT_TRUE(d.runs_package_kernel());
  EXPECT_EQ(d.vs_vendor.verdict, analysis::VendorVerdict::kTunedFaster);
  EXPECT_NE(d.reason.find("tuned kernel 0.0212 ms vs vendor 0.0215 ms at tuning: 1.4% faster (> noise 1.0%)"),
            std::string::npos) << d.reason;
  d = decide_on(fp32_problem(64, 4096, 512));
  EXPECT_EQ(d.path, Path::kExact);
  EXPECT_EQ(d.tuned->name, "clear");
  EXPECT_NE(d.reason.find("25.0% faster (> noise 1.0%)"), std::string::npos) << d.reason;
}

TEST_F(GemmlibDispatchTest, WithoutAVendorTimeTheTunedKernelRunsAsBefore) {
  // "vendor": {"median_ms": null}: not measured (--no-vendor).
  write({{"unmeasured", fp32_problem(256, 256, 256), tiled_config(64, 64), 0.05, -1.0}});
  Decision d = decide_on(fp32_problem(256, 256, 256));
  EXPECT_EQ(d.path, Path::kExact);
  EXPECT_EQ(d.vs_vendor.verdict, analysis::VendorVerdict::kNoVendorTime);
  EXPECT_NE(d.reason.find("; no vendor time recorded"), std::string::npos) << d.reason;

  // A package of an earlier export with no "vendor" object at all, and one with a vendor
  // median but no spreads (every package before the spreads were recorded): both load;
  // the first runs its kernel, the second is judged against the 1% floor.
  auto dir = fresh_dir("old");
  nlohmann::json tuned = testing::write_package(
      dir, {{"old", fp32_problem(256, 256, 256), tiled_config(64, 64), 0.05}, {"old_slow", fp32_problem(64, 64, 64),
                                                                               tiled_config(32, 32), 0.05, 0.049}});
  tuned["problems"][0].erase("vendor");
  testing::rewrite_tuned(dir, tuned);
  auto pkg = read_package(dir);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  EXPECT_FALSE(pkg->problems[0].vendor_median_ms.has_value());
  EXPECT_FALSE(pkg->problems[1].vendor_p20_ms.has_value());
  pkg_ = std::move(pkg).value();
  d = decide_on(fp32_problem(256, 256, 256));
  EXPECT_EQ(d.path, Path::kExact);
  EXPECT_NE(d.reason.find("no vendor time recorded"), std::string::npos) << d.reason;
  d = decide_on(fp32_problem(64, 64, 64));
  EXPECT_EQ(d.path, Path::kVendor);
  EXPECT_NE(d.reason.find("vendor faster"), std::string::npos) << d.reason;
}

TEST_F(GemmlibDispatchTest, NearestEntryThatLostToTheVendorAtItsOwnShapeSendsTheShapeToTheVendor) {
  write({{"lost_near", fp32_problem(128, 128, 128), tiled_config(64, 64), 0.030, 0.025},
         {"won_far", fp32_problem(2048, 2048, 2048), tiled_config(64, 64), 0.5, 0.8}});
  Decision d = decide_on(fp32_problem(160, 128, 128));
  EXPECT_EQ(d.path, Path::kVendor);
  ASSERT_NE(d.tuned, nullptr);
  EXPECT_EQ(d.tuned->name, "lost_near");
  EXPECT_NE(d.reason.find("vendor: the nearest tuned problem 'lost_near' (128x128x128) at distance"),
            std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("at its own shape: tuned kernel 0.0300 ms vs vendor 0.0250 ms at tuning: vendor faster"),
            std::string::npos) << d.reason;

  // Nearer to the entry that won: its kernel, with its own comparison in the reason.
  d = decide_on(fp32_problem(1500, 2048, 2048));
  EXPECT_EQ(d.path, Path::kNearest);
  EXPECT_EQ(d.tuned->name, "won_far");
  EXPECT_NE(d.reason.find("at its own shape: tuned kernel 0.5000 ms vs vendor 0.8000 ms at tuning: 60.0% faster"),
            std::string::npos) << d.reason;
}

TEST_F(GemmlibDispatchTest, OnAnotherDeviceByOptInTheRuleStillApplies) {
  write({{"slow", fp32_problem(256, 256, 256), tiled_config(64, 64), 0.0231, 0.0210}});
  DeviceFacts other = nominal_facts_for_arch("sm_90");
  other.name = "NVIDIA H100 PCIe";
  other.multiprocessors = 114;
  Decision d = decide_on(fp32_problem(256, 256, 256), other, true);
  EXPECT_EQ(d.path, Path::kVendor);
  EXPECT_FALSE(d.foreign_device);
  EXPECT_NE(d.reason.find("vendor faster (on another device by opt-in"), std::string::npos) << d.reason;
}

TEST_F(GemmlibDispatchTest, InvalidProblemIsAnError) {
  write({{"a", fp32_problem(256, 256, 256), tiled_config(64, 64)}});
  auto d = decide(pkg_, package_device(), fp32_problem(0, 256, 256), {});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tilesmith::gemmlib
