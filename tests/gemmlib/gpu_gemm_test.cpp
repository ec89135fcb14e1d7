// ts_gemm on a real GPU (label gpu): a package of real cubins compiled for this device,
// run on device pointers from the driver's primary context (what cudaMalloc gives), the
// result of every path (exact, nearest, vendor, corrupt binary -> compiled fallback)
// checked against the CPU reference, and concurrent calls from several threads on
// their own streams. Skips, saying why, without a GPU or NVRTC.

#include <gtest/gtest.h>

#include <thread>

#include "runtime/backend.h"
#include "runtime/cpu_reference.h"
#include "runtime/cuda/cuda_api.h"
#include "tests/gemmlib/package_fixture.h"
#include "tilesmith/gemm.h"

namespace tilesmith {
namespace {

using testing::fp32_problem;
using testing::tiled_config;

ts_gemm_problem to_c(const GemmProblem& p) {
  ts_gemm_problem c;
  ts_gemm_problem_init(&c, p.m, p.n, p.k, TS_DTYPE_FP32);
  c.a_layout = p.a_layout == Layout::kRowMajor ? TS_ROW_MAJOR : TS_COL_MAJOR;
  c.b_layout = p.b_layout == Layout::kRowMajor ? TS_ROW_MAJOR : TS_COL_MAJOR;
  c.c_layout = p.c_layout == Layout::kRowMajor ? TS_ROW_MAJOR : TS_COL_MAJOR;
  c.alpha = p.alpha;
  c.beta = p.beta;
  c.epilogue = static_cast<ts_epilogue>(p.epilogue);
  c.epilogue_slope = p.epilogue_slope;
  return c;
}

GemmProblem with_beta_and_bias(GemmProblem p) {
  p.beta = 0.5;
  p.epilogue = Epilogue::kBiasRow;
  return p;
}

class GemmlibGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backend = make_backend("cuda");
    auto devices = (*backend)->devices();
    if (!devices.ok()) GTEST_SKIP() << "no GPU: " << devices.status().message();
    auto compiler = (*backend)->compiler();
    if (!compiler.ok()) GTEST_SKIP() << "no NVRTC: " << compiler.status().message();
    device_ = (*devices)[0];
    compiler_ = *compiler;
    api_ = *cuda::driver_api();
    ASSERT_EQ(api_->cuDeviceGet(&dev_, 0), CUDA_SUCCESS);
    // The context a CUDA runtime program allocates in.
    ASSERT_EQ(api_->cuDevicePrimaryCtxRetain(&ctx_, dev_), CUDA_SUCCESS);
    ASSERT_EQ(api_->cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
  }
  void TearDown() override {
    if (handle_) ts_gemm_destroy(handle_);
    if (ctx_) api_->cuDevicePrimaryCtxRelease(dev_);
  }

  std::filesystem::path write(const std::vector<testing::TunedEntry>& entries) {
    auto dir = testing::fresh_dir("pkg");
    testing::write_package(dir, entries, device_, compiler_.get());
    return dir;
  }

  void open(const std::filesystem::path& pkg) {
    ts_gemm_options o;
    ts_gemm_options_init(&o);
    cache_ = testing::fresh_dir("cache");
    o.cache_dir = cache_.c_str();
    o.log = [](void* user, int, const char* line) { *static_cast<std::string*>(user) += std::string(line) + "\n"; };
    o.log_user = &log_;
    ASSERT_EQ(ts_gemm_create(&handle_, pkg.c_str(), 0, &o), TS_OK) << ts_last_error();
  }

  CUdeviceptr upload(const std::vector<float>& v) {
    if (v.empty()) return 0;
    CUdeviceptr p = 0;
    EXPECT_EQ(api_->cuMemAlloc(&p, v.size() * 4), CUDA_SUCCESS);
    EXPECT_EQ(api_->cuMemcpyHtoD(p, v.data(), v.size() * 4), CUDA_SUCCESS);
    return p;
  }

  // Runs the problem through ts_gemm on `stream` `times` times and checks C.
  void run_and_check(const GemmProblem& p, CUstream stream = nullptr, int times = 1) {
    SCOPED_TRACE(p.describe());
    ProblemData data = make_problem_data(p, 7);
    Reference ref = compute_reference(p, data);
    CUdeviceptr a = upload(data.a), b = upload(data.b), bias = upload(data.bias);
    std::vector<float> c0 = p.beta != 0 ? data.c0 : std::vector<float>(std::size_t(p.m * p.n), 0.0f);
    CUdeviceptr c = upload(c0);
    const ts_gemm_problem cp = to_c(p);
    ASSERT_TRUE(p.beta == 0 || times == 1) << "with beta, each run changes C";
    for (int i = 0; i < times; ++i) {
      ASSERT_EQ(ts_gemm(handle_, &cp, reinterpret_cast<void*>(a), reinterpret_cast<void*>(b),
                        reinterpret_cast<void*>(c), reinterpret_cast<void*>(bias), stream),
                TS_OK)
          << ts_last_error();
    }
    ASSERT_EQ(api_->cuStreamSynchronize(stream), CUDA_SUCCESS);
    std::vector<float> out(std::size_t(p.m * p.n));
    ASSERT_EQ(api_->cuMemcpyDtoH(out.data(), c, out.size() * 4), CUDA_SUCCESS);
    AccuracyStats acc = compare_with_reference(ref, out.data(), out.size());
    EXPECT_TRUE(accuracy_passes(acc)) << "max abs error " << acc.max_abs_error << ", norm " << acc.rel_error_norm
                                      << ", over tolerance " << acc.over_tolerance << ", non-finite " << acc.non_finite;
    for (CUdeviceptr ptr : {a, b, c, bias})
      if (ptr) api_->cuMemFree(ptr);
  }

  ts_path path_of(const GemmProblem& p) {
    ts_gemm_problem cp = to_c(p);
    ts_path path = TS_PATH_VENDOR;
    char buf[512];
    EXPECT_EQ(ts_gemm_explain(handle_, &cp, &path, buf, sizeof buf), TS_OK) << ts_last_error();
    return path;
  }

  DeviceFacts device_;
  std::shared_ptr<Compiler> compiler_;
  const cuda::DriverApi* api_ = nullptr;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  ts_gemm_handle* handle_ = nullptr;
  std::filesystem::path cache_;
  std::string log_;
};

TEST_F(GemmlibGpuTest, ExactNearestAndVendorPathsComputeTheReference) {
  const GemmProblem square = fp32_problem(256, 192, 128);
  const GemmProblem fused = with_beta_and_bias(fp32_problem(96, 160, 72));
  open(write({{"square", square, tiled_config(64, 64)}, {"fused", fused, tiled_config(32, 32)}}));
  EXPECT_EQ(path_of(square), TS_PATH_EXACT);
  run_and_check(square);
  EXPECT_EQ(path_of(fused), TS_PATH_EXACT);
  run_and_check(fused);
  const GemmProblem untuned = fp32_problem(300, 200, 100);  // nearest: square's kernel, new grid
  EXPECT_EQ(path_of(untuned), TS_PATH_NEAREST);
  run_and_check(untuned);
  const GemmProblem fused_untuned = with_beta_and_bias(fp32_problem(33, 65, 17));
  EXPECT_EQ(path_of(fused_untuned), TS_PATH_NEAREST);
  run_and_check(fused_untuned);
  GemmProblem other_kind = fp32_problem(128, 64, 96);
  other_kind.c_layout = Layout::kColMajor;  // nothing of this kind in the package: cuBLASLt
  EXPECT_EQ(path_of(other_kind), TS_PATH_VENDOR);
  run_and_check(other_kind);
  // One log line per new shape.
  EXPECT_NE(log_.find("exact: tuned problem 'square'"), std::string::npos) << log_;
  EXPECT_NE(log_.find("nearest: tuned problem 'square'"), std::string::npos) << log_;
  EXPECT_NE(log_.find("vendor: "), std::string::npos) << log_;
}

// Never slower than the vendor: a tuned problem whose kernel lost to the vendor at tuning
// runs on cuBLASLt, and ts_gemm_explain says why; where cuBLASLt cannot run the problem
// (no fused leaky_relu), the tuned kernel runs instead of failing.
TEST_F(GemmlibGpuTest, TunedKernelThatLostToTheVendorGivesWayExceptWhereTheVendorCannot) {
  const GemmProblem lost = fp32_problem(256, 192, 128);
  GemmProblem leaky = fp32_problem(96, 160, 72);
  leaky.epilogue = Epilogue::kLeakyRelu;
  open(write({{"lost", lost, tiled_config(64, 64), 0.05, 0.04}, {"leaky", leaky, tiled_config(32, 32), 0.05, 0.04}}));
  ts_gemm_problem cp = to_c(lost);
  ts_path path = TS_PATH_EXACT;
  char buf[512];
  ASSERT_EQ(ts_gemm_explain(handle_, &cp, &path, buf, sizeof buf), TS_OK) << ts_last_error();
  EXPECT_EQ(path, TS_PATH_VENDOR);
  EXPECT_STREQ(buf, "vendor: tuned problem 'lost' (256x192x128 fp32 NN): tuned kernel 0.0500 ms vs vendor 0.0400 ms at "
                    "tuning: vendor faster");
  run_and_check(lost);
  EXPECT_EQ(path_of(leaky), TS_PATH_VENDOR);
  run_and_check(leaky);
  EXPECT_NE(log_.find("runs instead"), std::string::npos) << log_;
}

TEST_F(GemmlibGpuTest, CorruptBinaryIsCompiledFromTheShippedSourceAndLogged) {
  const GemmProblem square = fp32_problem(256, 192, 128);
  auto pkg = write({{"square", square, tiled_config(64, 64)}});
  for (const auto& e : std::filesystem::directory_iterator(pkg / "binaries")) testing::write_text(e.path(), "garbage");
  open(pkg);
  run_and_check(square);
  EXPECT_NE(log_.find("corrupt or was replaced"), std::string::npos) << log_;
  EXPECT_NE(log_.find("compiled from kernels/gemm_tiled.hip"), std::string::npos) << log_;
  EXPECT_FALSE(std::filesystem::is_empty(cache_));  // the compiled fallback is cached on disk
}

TEST_F(GemmlibGpuTest, ConcurrentCallsOnTheirOwnStreams) {
  const GemmProblem square = fp32_problem(256, 192, 128);
  open(write({{"square", square, tiled_config(64, 64)}}));
  std::vector<std::thread> threads;
  std::vector<CUstream> streams(4);
  for (auto& s : streams) ASSERT_EQ(api_->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      // Each thread works on its own, with the primary context current (as the CUDA runtime does).
      api_->cuCtxSetCurrent(ctx_);
      run_and_check(t % 2 ? square : fp32_problem(200, 100, 300), streams[t], 10);
    });
  for (auto& th : threads) th.join();
  for (auto& s : streams) api_->cuStreamDestroy(s);
}

}  // namespace
}  // namespace tilesmith
