// The cuBLASLt plan without a GPU: a small emulator of cublasLtMatmul's semantics
// (column/row order, leading dimensions, ops, bias per row of D) runs each plan on
// integer data and must give exactly our C in C's layout, for every layout, C layout and
// bias; plus the choices themselves (orientation, compute type, epilogue, reductions).

#include <gtest/gtest.h>

#include <vector>

#include "runtime/cuda/cublaslt_plan.h"

namespace tilesmith::cuda {
namespace {

// One element of a matrix as cuBLASLt addresses it.
double at(const std::vector<double>& mem, const LtMatrix& x, std::uint64_t r, std::uint64_t c) {
  return x.order == CUBLASLT_ORDER_COL ? mem[r + c * x.ld] : mem[r * x.ld + c];
}
std::size_t index(const LtMatrix& x, std::uint64_t r, std::uint64_t c) {
  return x.order == CUBLASLT_ORDER_COL ? r + c * x.ld : r * x.ld + c;
}
double op_at(const std::vector<double>& mem, const LtMatrix& x, cublasOperation_t op,
             std::uint64_t r, std::uint64_t c) {
  return op == CUBLAS_OP_T ? at(mem, x, c, r) : at(mem, x, r, c);
}

// D = op(A) op(B) (+ bias per row of D), as cublasLtMatmul defines it.
std::vector<double> emulate(const LtPlan& plan, const std::vector<double>& a,
                            const std::vector<double>& b, const std::vector<double>& bias,
                            std::size_t d_size) {
  const std::uint64_t k = plan.trans_a == CUBLAS_OP_T ? plan.a.rows : plan.a.cols;
  const std::uint64_t k_b = plan.trans_b == CUBLAS_OP_T ? plan.b.cols : plan.b.rows;
  EXPECT_EQ(k, k_b);
  EXPECT_EQ(plan.trans_a == CUBLAS_OP_T ? plan.a.cols : plan.a.rows, plan.d.rows);
  EXPECT_EQ(plan.trans_b == CUBLAS_OP_T ? plan.b.rows : plan.b.cols, plan.d.cols);
  for (const LtMatrix* x : {&plan.a, &plan.b, &plan.d})
    EXPECT_GE(std::uint64_t(x->ld), x->order == CUBLASLT_ORDER_COL ? x->rows : x->cols);
  std::vector<double> d(d_size, -1e30);
  for (std::uint64_t i = 0; i < plan.d.rows; ++i)
    for (std::uint64_t j = 0; j < plan.d.cols; ++j) {
      double s = plan.has_bias ? bias.at(i) : 0.0;
      for (std::uint64_t l = 0; l < k; ++l)
        s += op_at(a, plan.a, plan.trans_a, i, l) * op_at(b, plan.b, plan.trans_b, l, j);
      d.at(index(plan.d, i, j)) = s;
    }
  return d;
}

std::vector<double> ramp(std::size_t n, int mul) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = double(int((i * mul) % 7) - 3);
  return v;
}

GemmProblem problem(const char* code, Layout c_layout, Epilogue e, DType ab = DType::kBF16,
                    DType c = DType::kBF16) {
  GemmProblem p;
  p.m = 5, p.n = 3, p.k = 7;  // all different, so a swapped dimension shows
  p.a_type = p.b_type = ab;
  p.c_type = c;
  EXPECT_TRUE(apply_layout_code(code, p).ok());
  p.c_layout = c_layout;
  p.epilogue = e;
  return p;
}

TEST(CublasLtPlan, EveryLayoutAndBiasComputesOurC) {
  for (const char* code : {"NN", "NT", "TN", "TT"})
    for (Layout cl : {Layout::kRowMajor, Layout::kColMajor})
      for (Epilogue e : {Epilogue::kNone, Epilogue::kBiasRow, Epilogue::kBiasCol}) {
        const GemmProblem p = problem(code, cl, e);
        SCOPED_TRACE(p.describe());
        auto plan = plan_cublaslt(p);
        ASSERT_TRUE(plan.ok()) << plan.status().to_string();
        const auto a = ramp(std::size_t(p.m * p.k), 3), b = ramp(std::size_t(p.k * p.n), 5);
        const auto bias = ramp(std::size_t(e == Epilogue::kBiasRow ? p.m : p.n), 2);
        // Our definition, element by element, in C's layout.
        std::vector<double> want(std::size_t(p.m * p.n));
        for (std::int64_t m = 0; m < p.m; ++m)
          for (std::int64_t n = 0; n < p.n; ++n) {
            double s = e == Epilogue::kBiasRow ? bias[m] : e == Epilogue::kBiasCol ? bias[n] : 0.0;
            for (std::int64_t k = 0; k < p.k; ++k) {
              const double av = p.a_layout == Layout::kRowMajor ? a[m * p.k + k] : a[k * p.m + m];
              const double bv = p.b_layout == Layout::kRowMajor ? b[k * p.n + n] : b[n * p.k + k];
              s += av * bv;
            }
            want[cl == Layout::kRowMajor ? m * p.n + n : n * p.m + m] = s;
          }
        const auto& first = plan->swap_operands ? b : a;
        const auto& second = plan->swap_operands ? a : b;
        EXPECT_EQ(emulate(*plan, first, second, bias, want.size()), want);
      }
}

TEST(CublasLtPlan, PlainGemmKeepsDColumnMajorAsCublasGemmExDid) {
  for (const char* code : {"NN", "NT", "TN", "TT"})
    for (Layout cl : {Layout::kRowMajor, Layout::kColMajor}) {
      const GemmProblem p = problem(code, cl, Epilogue::kNone);
      SCOPED_TRACE(p.describe());
      auto plan = plan_cublaslt(p);
      ASSERT_TRUE(plan.ok());
      EXPECT_EQ(plan->d.order, CUBLASLT_ORDER_COL);
      EXPECT_EQ(plan->epilogue, CUBLASLT_EPILOGUE_DEFAULT);
      EXPECT_FALSE(plan->has_bias);
      const bool a_row = p.a_layout == Layout::kRowMajor, b_row = p.b_layout == Layout::kRowMajor;
      // The ops the cublasGemmEx baseline used: C directly, or C^T = B^T A^T.
      if (cl == Layout::kColMajor) {
        EXPECT_FALSE(plan->swap_operands);
        EXPECT_EQ(plan->trans_a, a_row ? CUBLAS_OP_T : CUBLAS_OP_N);
        EXPECT_EQ(plan->trans_b, b_row ? CUBLAS_OP_T : CUBLAS_OP_N);
        EXPECT_EQ(plan->d.rows, std::uint64_t(p.m));
      } else {
        EXPECT_TRUE(plan->swap_operands);
        EXPECT_EQ(plan->trans_a, b_row ? CUBLAS_OP_N : CUBLAS_OP_T);
        EXPECT_EQ(plan->trans_b, a_row ? CUBLAS_OP_N : CUBLAS_OP_T);
        EXPECT_EQ(plan->d.rows, std::uint64_t(p.n));
      }
      EXPECT_EQ(plan->d.ld, p.ldc());
    }
}

TEST(CublasLtPlan, BiasGoesAlongDsRows) {
  // A bias per row of C (one per m) needs D = C; per column (one per n), D = C^T. D is
  // column-major in memory only where that matches C's layout.
  struct Want {
    Epilogue e;
    Layout c;
    bool swap;
    cublasLtOrder_t order;
  };
  for (Want w : {Want{Epilogue::kBiasRow, Layout::kColMajor, false, CUBLASLT_ORDER_COL},
                 Want{Epilogue::kBiasRow, Layout::kRowMajor, false, CUBLASLT_ORDER_ROW},
                 Want{Epilogue::kBiasCol, Layout::kRowMajor, true, CUBLASLT_ORDER_COL},
                 Want{Epilogue::kBiasCol, Layout::kColMajor, true, CUBLASLT_ORDER_ROW}}) {
    const GemmProblem p = problem("NT", w.c, w.e, DType::kF16, DType::kF32);
    SCOPED_TRACE(p.describe());
    auto plan = plan_cublaslt(p);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->swap_operands, w.swap);
    EXPECT_EQ(plan->d.order, w.order);
    EXPECT_TRUE(plan->has_bias);
    EXPECT_EQ(plan->epilogue, CUBLASLT_EPILOGUE_BIAS);
    EXPECT_EQ(plan->bias_type, CUDA_R_32F);  // C's type
    EXPECT_EQ(plan->d.rows, std::uint64_t(w.e == Epilogue::kBiasRow ? p.m : p.n));
  }
}

TEST(CublasLtPlan, TypesComputeAndReductions) {
  auto bf16 =
      plan_cublaslt(problem("NN", Layout::kRowMajor, Epilogue::kNone, DType::kBF16, DType::kBF16));
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(bf16->a.type, CUDA_R_16BF);
  EXPECT_EQ(bf16->b.type, CUDA_R_16BF);
  EXPECT_EQ(bf16->d.type, CUDA_R_16BF);
  EXPECT_EQ(bf16->compute, CUBLAS_COMPUTE_32F);
  EXPECT_EQ(bf16->scale_type, CUDA_R_32F);
  // Partial sums of a split K stay fp32 when C is half.
  EXPECT_EQ(bf16->reduction_schemes, std::uint32_t(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE));

  auto mixed =
      plan_cublaslt(problem("TN", Layout::kColMajor, Epilogue::kNone, DType::kF16, DType::kF32));
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(mixed->a.type, CUDA_R_16F);
  EXPECT_EQ(mixed->d.type, CUDA_R_32F);
  EXPECT_EQ(mixed->reduction_schemes, std::uint32_t(CUBLASLT_REDUCTION_SCHEME_MASK));

  // fp32 keeps the pedantic semantics of the cublasGemmEx baseline: no TF32.
  auto fp32 =
      plan_cublaslt(problem("NN", Layout::kRowMajor, Epilogue::kNone, DType::kF32, DType::kF32));
  ASSERT_TRUE(fp32.ok());
  EXPECT_EQ(fp32->compute, CUBLAS_COMPUTE_32F_PEDANTIC);
  EXPECT_EQ(fp32->a.type, CUDA_R_32F);

  GemmProblem odd = problem("NN", Layout::kRowMajor, Epilogue::kNone);
  odd.b_type = DType::kF16;
  EXPECT_EQ(plan_cublaslt(odd).status().code(), StatusCode::kInvalidArgument);
}

// No FP8 vendor line yet: refused as unimplemented (not invalid_argument, which would send the
// backend on to cublasGemmEx), with the reason. The type map itself knows the FP8 types.
// FP8 goes where cuBLASLt's FP8 kernels take it: both operands K-major (its A op T, its B op N)
// and D column-major in memory, i.e. our NT (Y = X W^T) with C in either layout; per-tensor
// scales ride on alpha. Everything else is unimplemented, named.
TEST(CublasLtPlan, Fp8IsPlannedKMajorWithItsScalesOnAlphaAndRefusedElsewhereWithAReason) {
  EXPECT_EQ(cuda_data_type(DType::kE4M3), CUDA_R_8F_E4M3);
  EXPECT_EQ(cuda_data_type(DType::kE5M2), CUDA_R_8F_E5M2);
  GemmProblem p = problem("NT", Layout::kRowMajor, Epilogue::kNone, DType::kBF16, DType::kBF16);
  p.a_type = p.b_type = DType::kE4M3;
  p.scaling = Scaling::kPerTensor;
  p.scale_a = 0.5;
  p.scale_b = 3.0;
  ASSERT_TRUE(p.validate().ok()) << p.validate().message();
  auto plan = plan_cublaslt(p);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_TRUE(plan->swap_operands);
  EXPECT_EQ(plan->trans_a, CUBLAS_OP_T);
  EXPECT_EQ(plan->trans_b, CUBLAS_OP_N);
  EXPECT_EQ(plan->a.type, CUDA_R_8F_E4M3);
  EXPECT_EQ(plan->d.type, CUDA_R_16BF);
  EXPECT_EQ(plan->d.order, CUBLASLT_ORDER_COL);
  EXPECT_EQ(plan->compute, CUBLAS_COMPUTE_32F);
  EXPECT_DOUBLE_EQ(plan->alpha_scale, 1.5);
  // A column-major C is the same orientation without the swap; a bias along D's rows fits too.
  GemmProblem col = p;
  col.c_layout = Layout::kColMajor;
  auto col_plan = plan_cublaslt(col);
  ASSERT_TRUE(col_plan.ok()) << col_plan.status().to_string();
  EXPECT_FALSE(col_plan->swap_operands);
  EXPECT_EQ(col_plan->trans_a, CUBLAS_OP_T);
  EXPECT_EQ(col_plan->a.type, CUDA_R_8F_E4M3);
  GemmProblem biased = p;
  biased.epilogue = Epilogue::kBiasCol;
  ASSERT_TRUE(plan_cublaslt(biased).ok());
  // Mixed FP8 inputs pair; unscaled FP8 keeps alpha.
  GemmProblem mixed = p;
  mixed.b_type = DType::kE5M2;
  mixed.scaling = Scaling::kNone;
  mixed.scale_a = mixed.scale_b = 1.0;
  auto mixed_plan = plan_cublaslt(mixed);
  ASSERT_TRUE(mixed_plan.ok()) << mixed_plan.status().to_string();
  EXPECT_EQ(mixed_plan->b.type, CUDA_R_8F_E4M3) << "cuBLASLt's B is our A";
  EXPECT_DOUBLE_EQ(mixed_plan->alpha_scale, 1.0);

  auto refused = [](const GemmProblem& q, const char* why) {
    auto r = plan_cublaslt(q);
    ASSERT_FALSE(r.ok()) << q.describe();
    EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << "not invalid_argument: no cublasGemmEx fallback";
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  };
  for (const char* code : {"NN", "TN", "TT"}) {
    GemmProblem other = p;
    ASSERT_TRUE(apply_layout_code(code, other).ok());
    refused(other, "K-major");
  }
  GemmProblem both_e5m2 = mixed;
  both_e5m2.a_type = DType::kE5M2;
  refused(both_e5m2, "pairs e5m2 only with e4m3");
  GemmProblem block = p;
  block.scaling = Scaling::kBlock;
  block.scale_a = block.scale_b = 1.0;
  block.m = 1022;
  ASSERT_TRUE(block.validate().ok()) << block.validate().message();
  refused(block, "multiple of 4");
  GemmProblem bias_row = p;
  bias_row.epilogue = Epilogue::kBiasRow;
  refused(bias_row, "bias along the other dimension");
}

// Block scaling: our A's 1 x 128 vectors go to cuBLASLt as VEC128_32F and our B's 128 x 128 blocks as
// BLK128x128_32F, swapped with the operands; the grids are laid out as cuBLASLt reads them.
TEST(CublasLtPlan, BlockScalesFollowTheirOperandsAndAreLaidOutAsCublasLtReadsThem) {
  GemmProblem p = problem("NT", Layout::kRowMajor, Epilogue::kNone, DType::kBF16, DType::kBF16);
  p.a_type = p.b_type = DType::kE4M3;
  p.scaling = Scaling::kBlock;
  p.m = 8;
  p.k = 300;  // 3 blocks of K, padded to 4 in B's layout
  p.n = 260;  // 3 blocks of N
  ASSERT_TRUE(apply_layout_code("NT", p).ok());
  ASSERT_TRUE(p.validate().ok()) << p.validate().message();
  auto swapped = plan_cublaslt(p);  // row-major C: cuBLASLt's A is our B
  ASSERT_TRUE(swapped.ok()) << swapped.status().to_string();
  EXPECT_TRUE(swapped->swap_operands);
  EXPECT_TRUE(swapped->block_scaled);
  EXPECT_EQ(swapped->a_scale_mode, CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F);
  EXPECT_EQ(swapped->b_scale_mode, CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F);
  EXPECT_DOUBLE_EQ(swapped->alpha_scale, 1.0) << "block scales are not folded into alpha";
  GemmProblem col = p;
  col.c_layout = Layout::kColMajor;
  auto straight = plan_cublaslt(col);
  ASSERT_TRUE(straight.ok()) << straight.status().to_string();
  EXPECT_FALSE(straight->swap_operands);
  EXPECT_EQ(straight->a_scale_mode, CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F);
  EXPECT_EQ(straight->b_scale_mode, CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F);

  // Our grids: A 8 x 3 (value 100 m + kb), B 3 x 3 (value 10 kb + nb), row-major.
  std::vector<float> sa(8 * 3), sb(3 * 3);
  for (int m = 0; m < 8; ++m)
    for (int k = 0; k < 3; ++k) sa[m * 3 + k] = float(100 * m + k);
  for (int k = 0; k < 3; ++k)
    for (int n = 0; n < 3; ++n) sb[k * 3 + n] = float(10 * k + n);
  auto arrays = lt_block_scale_arrays(col, *straight, sa, sb);
  ASSERT_TRUE(arrays.ok()) << arrays.status().to_string();
  ASSERT_EQ(arrays->a.size(), 3u * 8u) << "VEC128: one float per row of A per K block";
  for (int m = 0; m < 8; ++m)
    for (int k = 0; k < 3; ++k) EXPECT_EQ(arrays->a[k * 8 + m], 100.0f * m + k) << "M contiguous";
  ASSERT_EQ(arrays->b.size(), 3u * 4u) << "BLK128x128: K blocks padded to 4 per N block";
  for (int n = 0; n < 3; ++n) {
    for (int k = 0; k < 3; ++k) EXPECT_EQ(arrays->b[n * 4 + k], 10.0f * k + n) << "K blocks contiguous";
    EXPECT_EQ(arrays->b[n * 4 + 3], 1.0f) << "the padding";
  }
  auto swapped_arrays = lt_block_scale_arrays(p, *swapped, sa, sb);
  ASSERT_TRUE(swapped_arrays.ok());
  EXPECT_EQ(swapped_arrays->a, arrays->b) << "cuBLASLt's A is our B: its scales go with it";
  EXPECT_EQ(swapped_arrays->b, arrays->a);
  sa.pop_back();
  EXPECT_FALSE(lt_block_scale_arrays(col, *straight, sa, sb).ok()) << "grids that do not fit the problem";
}

TEST(CublasLtPlan, Epilogues) {
  auto relu = plan_cublaslt(problem("NN", Layout::kRowMajor, Epilogue::kRelu));
  ASSERT_TRUE(relu.ok());
  EXPECT_EQ(relu->epilogue, CUBLASLT_EPILOGUE_RELU);
  EXPECT_FALSE(relu->has_bias);
  auto gelu = plan_cublaslt(problem("TT", Layout::kColMajor, Epilogue::kGelu));
  ASSERT_TRUE(gelu.ok());
  EXPECT_EQ(gelu->epilogue, CUBLASLT_EPILOGUE_GELU);
  EXPECT_EQ(gelu->d.order, CUBLASLT_ORDER_COL);
  // bias + GELU: the bias per column of C, so D is C transposed, as for bias_col.
  auto bias_gelu = plan_cublaslt(problem("NT", Layout::kRowMajor, Epilogue::kBiasGelu));
  ASSERT_TRUE(bias_gelu.ok());
  EXPECT_EQ(bias_gelu->epilogue, CUBLASLT_EPILOGUE_GELU_BIAS);
  EXPECT_TRUE(bias_gelu->has_bias);
  EXPECT_EQ(bias_gelu->swap_operands, plan_cublaslt(problem("NT", Layout::kRowMajor, Epilogue::kBiasCol))->swap_operands);

  auto leaky = plan_cublaslt(problem("NN", Layout::kRowMajor, Epilogue::kLeakyRelu));
  ASSERT_FALSE(leaky.ok());
  EXPECT_EQ(leaky.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(leaky.status().message().find("no fused leaky_relu"), std::string::npos)
      << leaky.status().message();
}

TEST(CublasLtPlan, DescribeNamesTheOrientation) {
  auto plan = plan_cublaslt(problem("NN", Layout::kRowMajor, Epilogue::kBiasRow));
  ASSERT_TRUE(plan.ok());
  const std::string d = plan->describe();
  EXPECT_NE(d.find("D = C = op(A) op(B)"), std::string::npos) << d;
  EXPECT_NE(d.find("D 5x3 ld 3 row"), std::string::npos) << d;
  EXPECT_NE(d.find("BIAS"), std::string::npos) << d;
}

}  // namespace
}  // namespace tilesmith::cuda
