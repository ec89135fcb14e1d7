// The C API of libtilesmith_gemm as a program sees it (linked against the shared library):
// argument checks, package errors before any device is touched, and on a machine without
// the NVIDIA driver (or without a GPU) DEVICE_ERROR with a message instead of a crash.

#include <gtest/gtest.h>

#include <string>

#include "tests/gemmlib/package_fixture.h"
#include "tilesmith/gemm.h"
#include "tilesmith/gemm.hpp"

namespace {

using tilesmith::testing::fp32_problem;
using tilesmith::testing::fresh_dir;
using tilesmith::testing::tiled_config;

std::string write_small_package() {
  auto dir = fresh_dir("pkg");
  tilesmith::testing::write_package(dir, {{"a", fp32_problem(256, 256, 256), tiled_config(64, 64)}});
  return dir.string();
}

TEST(GemmlibCApi, InitFillsTheDocumentedDefaults) {
  ts_gemm_problem p;
  ASSERT_EQ(ts_gemm_problem_init(&p, 16, 32, 64, TS_DTYPE_BF16), TS_OK);
  EXPECT_EQ(p.m, 16);
  EXPECT_EQ(p.c_dtype, TS_DTYPE_BF16);
  EXPECT_EQ(p.accumulate, TS_DTYPE_FP32);
  EXPECT_EQ(p.alpha, 1.0);
  EXPECT_EQ(p.beta, 0.0);
  EXPECT_EQ(p.epilogue, TS_EPILOGUE_NONE);
  ts_gemm_options o;
  ASSERT_EQ(ts_gemm_options_init(&o), TS_OK);
  EXPECT_EQ(o.allow_foreign_device, 0);
  EXPECT_EQ(o.cache_dir, nullptr);
  EXPECT_STREQ(ts_status_string(TS_PACKAGE_ERROR), "TS_PACKAGE_ERROR");
  EXPECT_STREQ(ts_path_string(TS_PATH_FOREIGN_DEVICE), "foreign-device");
  EXPECT_STREQ(ts_gemm_version(), TILESMITH_VERSION);
}

TEST(GemmlibCApi, NullArgumentsAreInvalidNotCrashes) {
  EXPECT_EQ(ts_gemm_problem_init(nullptr, 1, 1, 1, TS_DTYPE_FP32), TS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ts_last_error()).find("NULL"), std::string::npos);
  ts_gemm_handle* h = reinterpret_cast<ts_gemm_handle*>(1);
  EXPECT_EQ(ts_gemm_create(&h, nullptr, 0, nullptr), TS_INVALID_ARGUMENT);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(ts_gemm_create(nullptr, "pkg", 0, nullptr), TS_INVALID_ARGUMENT);
  ts_gemm_problem p;
  ts_gemm_problem_init(&p, 1, 1, 1, TS_DTYPE_FP32);
  EXPECT_EQ(ts_gemm(nullptr, &p, nullptr, nullptr, nullptr, nullptr, nullptr), TS_INVALID_ARGUMENT);
  EXPECT_EQ(ts_gemm_explain(nullptr, &p, nullptr, nullptr, 0), TS_INVALID_ARGUMENT);
  EXPECT_EQ(ts_gemm_destroy(nullptr), TS_OK);
  EXPECT_STREQ(ts_last_error(), "");  // a success clears the thread's message
}

TEST(GemmlibCApi, PackageErrorsComeFirstAndSayWhatToDo) {
  ts_gemm_handle* h = nullptr;
  auto empty = fresh_dir("empty");
  EXPECT_EQ(ts_gemm_create(&h, empty.c_str(), 0, nullptr), TS_PACKAGE_ERROR);
  EXPECT_EQ(h, nullptr);
  EXPECT_NE(std::string(ts_last_error()).find("has no tuned.json"), std::string::npos) << ts_last_error();

  const std::string pkg = write_small_package();
  auto tuned = nlohmann::json::parse(*tilesmith::read_file(pkg + "/tuned.json"));
  tuned["kernels"][0]["binary"] = "../elsewhere.cubin";
  tilesmith::testing::rewrite_tuned(pkg, tuned);
  EXPECT_EQ(ts_gemm_create(&h, pkg.c_str(), 0, nullptr), TS_PACKAGE_ERROR);
  EXPECT_NE(std::string(ts_last_error()).find("'..'"), std::string::npos) << ts_last_error();

  // The C++ wrapper throws the same status and message.
  try {
    tilesmith::Gemm gemm(empty.string(), 0);
    ADD_FAILURE() << "no exception";
  } catch (const tilesmith::GemmError& e) {
    EXPECT_EQ(e.status(), TS_PACKAGE_ERROR);
    EXPECT_NE(std::string(e.what()).find("TS_PACKAGE_ERROR: "), std::string::npos) << e.what();
  }
}

TEST(GemmlibCApi, WithoutADriverOrGpuCreateIsADeviceError) {
  const std::string pkg = write_small_package();
  ts_gemm_handle* h = nullptr;
  std::string logged;
  ts_gemm_options o;
  ts_gemm_options_init(&o);
  o.log = [](void* user, int, const char* line) { *static_cast<std::string*>(user) += line; };
  o.log_user = &logged;
  ts_status s = ts_gemm_create(&h, pkg.c_str(), 0, &o);
  if (s == TS_OK) {
    ts_gemm_destroy(h);
    GTEST_SKIP() << "this machine has an NVIDIA GPU: the no-driver path cannot be checked here";
  }
  if (!ts_gemm_built_with_cuda()) {
    EXPECT_EQ(s, TS_NOT_SUPPORTED);
    EXPECT_NE(std::string(ts_last_error()).find("built without CUDA"), std::string::npos) << ts_last_error();
    return;
  }
  EXPECT_EQ(s, TS_DEVICE_ERROR) << ts_last_error();
  EXPECT_EQ(h, nullptr);
  EXPECT_NE(std::string(ts_last_error()).find("no usable NVIDIA GPU"), std::string::npos) << ts_last_error();
  EXPECT_NE(std::string(ts_last_error()).find("install the NVIDIA driver"), std::string::npos) << ts_last_error();
}

}  // namespace
