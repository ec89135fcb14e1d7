// hipblasGemmEx without an AMD GPU: which symbol and enum encoding each hipBLAS takes,
// and the column-major call for every layout, checked by emulating BLAS gemm semantics on
// integer data against our definition of C.

#include <gtest/gtest.h>

#include <vector>

#include "runtime/hip/hipblas_gemm_ex.h"

namespace tilesmith::hip {
namespace {

TEST(HipblasGemmEx, SymbolAndEncodingByVersion) {
  // hipBLAS 2 (ROCm 6): the _v2 entry point with hipDataType.
  EXPECT_STREQ(choose_gemm_ex(true, 2).name, "hipblasGemmEx_v2");
  EXPECT_EQ(choose_gemm_ex(true, 2).abi, GemmExAbi::kHipDataType);
  // hipBLAS 3 (ROCm 7): _v2 is gone and hipblasGemmEx takes the new types.
  EXPECT_STREQ(choose_gemm_ex(false, 3).name, "hipblasGemmEx");
  EXPECT_EQ(choose_gemm_ex(false, 3).abi, GemmExAbi::kHipDataType);
  // hipBLAS 0/1 (ROCm 5, Debian): hipblasGemmEx with hipblasDatatype_t.
  EXPECT_EQ(choose_gemm_ex(false, 0).abi, GemmExAbi::kHipblasDatatype);
  EXPECT_EQ(choose_gemm_ex(false, 1).abi, GemmExAbi::kHipblasDatatype);
  EXPECT_EQ(choose_gemm_ex(false, -1).abi, GemmExAbi::kHipblasDatatype);
}

TEST(HipblasGemmEx, SonameMajor) {
  EXPECT_EQ(soname_major("libhipblas.so.2"), 2);
  EXPECT_EQ(soname_major("/opt/rocm-6.2.0/lib/libhipblas.so.2.2.60200"), 2);
  EXPECT_EQ(soname_major("/usr/lib/x86_64-linux-gnu/libhipblas.so.0.1"), 0);
  EXPECT_EQ(soname_major("libhipblas.so.13"), 13);
  EXPECT_EQ(soname_major("/opt/rocm/lib/libhipblas.so"), -1);
  EXPECT_EQ(soname_major("libhipblas.so."), -1);
}

GemmProblem problem(const char* code, Layout c_layout, DType ab, DType c) {
  GemmProblem p;
  p.m = 5, p.n = 3, p.k = 7;
  p.a_type = p.b_type = ab;
  p.c_type = c;
  EXPECT_TRUE(apply_layout_code(code, p).ok());
  p.c_layout = c_layout;
  return p;
}

TEST(HipblasGemmEx, TypeCodes) {
  auto legacy = plan_gemm_ex(problem("NN", Layout::kRowMajor, DType::kBF16, DType::kF32),
                             GemmExAbi::kHipblasDatatype);
  ASSERT_TRUE(legacy.ok());
  EXPECT_EQ(legacy->a_type, 168);        // HIPBLAS_R_16B
  EXPECT_EQ(legacy->c_type, 151);        // HIPBLAS_R_32F
  EXPECT_EQ(legacy->compute_type, 151);  // HIPBLAS_R_32F
  auto v2 = plan_gemm_ex(problem("NN", Layout::kRowMajor, DType::kBF16, DType::kBF16),
                         GemmExAbi::kHipDataType);
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->a_type, 14);  // HIP_R_16BF
  EXPECT_EQ(v2->c_type, 14);
  EXPECT_EQ(v2->compute_type, 2);  // HIPBLAS_COMPUTE_32F
  auto f16 = plan_gemm_ex(problem("TT", Layout::kColMajor, DType::kF16, DType::kF32),
                          GemmExAbi::kHipDataType);
  ASSERT_TRUE(f16.ok());
  EXPECT_EQ(f16->b_type, 2);  // HIP_R_16F
  EXPECT_EQ(f16->c_type, 0);  // HIP_R_32F
  auto f16_legacy = plan_gemm_ex(problem("TT", Layout::kColMajor, DType::kF16, DType::kF16),
                                 GemmExAbi::kHipblasDatatype);
  ASSERT_TRUE(f16_legacy.ok());
  EXPECT_EQ(f16_legacy->a_type, 150);  // HIPBLAS_R_16F
}

TEST(HipblasGemmEx, NoFusedEpilogue) {
  GemmProblem p = problem("NN", Layout::kRowMajor, DType::kF16, DType::kF16);
  for (Epilogue e : {Epilogue::kBiasRow, Epilogue::kBiasCol, Epilogue::kRelu, Epilogue::kLeakyRelu,
                     Epilogue::kGelu}) {
    p.epilogue = e;
    auto r = plan_gemm_ex(p, GemmExAbi::kHipDataType);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(std::string("no fused ") + epilogue_name(e)),
              std::string::npos)
        << r.status().message();
  }
}

// C = op(first) op(second) as column-major BLAS defines it.
std::vector<double> gemm_col(const GemmExArgs& x, const std::vector<double>& a,
                             const std::vector<double>& b, std::size_t c_size) {
  auto op_at = [](const std::vector<double>& mem, int ld, int op, int r, int c) {
    return op == kHipblasOpT ? mem.at(std::size_t(c) + std::size_t(r) * ld)
                             : mem.at(std::size_t(r) + std::size_t(c) * ld);
  };
  std::vector<double> c(c_size, -1e30);
  for (int i = 0; i < x.m; ++i)
    for (int j = 0; j < x.n; ++j) {
      double s = 0;
      for (int l = 0; l < x.k; ++l)
        s += op_at(a, x.lda, x.trans_a, i, l) * op_at(b, x.ldb, x.trans_b, l, j);
      c.at(std::size_t(i) + std::size_t(j) * x.ldc) = s;
    }
  return c;
}

TEST(HipblasGemmEx, EveryLayoutComputesOurC) {
  for (const char* code : {"NN", "NT", "TN", "TT"})
    for (Layout cl : {Layout::kRowMajor, Layout::kColMajor}) {
      const GemmProblem p = problem(code, cl, DType::kBF16, DType::kBF16);
      SCOPED_TRACE(p.describe());
      auto x = plan_gemm_ex(p, GemmExAbi::kHipDataType);
      ASSERT_TRUE(x.ok());
      std::vector<double> a(std::size_t(p.m * p.k)), b(std::size_t(p.k * p.n));
      for (std::size_t i = 0; i < a.size(); ++i) a[i] = double(int(i * 3 % 7) - 3);
      for (std::size_t i = 0; i < b.size(); ++i) b[i] = double(int(i * 5 % 7) - 3);
      std::vector<double> want(std::size_t(p.m * p.n));
      for (std::int64_t m = 0; m < p.m; ++m)
        for (std::int64_t n = 0; n < p.n; ++n) {
          double s = 0;
          for (std::int64_t k = 0; k < p.k; ++k)
            s += (p.a_layout == Layout::kRowMajor ? a[m * p.k + k] : a[k * p.m + m]) *
                 (p.b_layout == Layout::kRowMajor ? b[k * p.n + n] : b[n * p.k + k]);
          want[cl == Layout::kRowMajor ? m * p.n + n : n * p.m + m] = s;
        }
      EXPECT_EQ(gemm_col(*x, x->swap_operands ? b : a, x->swap_operands ? a : b, want.size()),
                want);
    }
}

}  // namespace
}  // namespace tilesmith::hip
