#pragma once
// How one GemmProblem maps onto one cublasLtMatmul call: which operand comes first, the
// ops, the matrix layouts, the compute type, the reduction schemes allowed and the fused
// epilogue. Pure (no library call, no GPU), so it is tested on any machine; the backend
// (cublaslt_gemm.h) turns a plan into descriptors. Thread-safe.
//
// cuBLASLt works on column-major matrices and adds its bias per row of D. So the plan
// puts the bias dimension on D's rows: a per-row bias (one per m) computes
// D = op(A) op(B) (M x N); a per-column bias (one per n) computes D = C^T = op(B)^T op(A)^T
// (N x M), with our B as cuBLASLt's A. Without a bias, the orientation that makes D
// column-major in memory is chosen (the path every algorithm supports). Where the bias
// orientation and C's layout disagree, D is described as CUBLASLT_ORDER_ROW; whether an
// algorithm exists for that is the heuristic's answer (invalid_argument when none). On
// cuBLASLt 13.1 (H200) it answers CUBLAS_STATUS_NOT_SUPPORTED, so bias_row is fused into a
// column-major C and bias_col into a row-major C, and the other two are not.

#include <cublasLt.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "registry/problem.h"

namespace tilesmith::cuda {

// One matrix as cuBLASLt is told about it (before its op is applied).
struct LtMatrix {
  cudaDataType type = CUDA_R_32F;
  std::uint64_t rows = 0, cols = 0;
  std::int64_t ld = 0;  // stride between columns (ORDER_COL) or rows (ORDER_ROW), in elements
  cublasLtOrder_t order = CUBLASLT_ORDER_COL;
};

struct LtPlan {
  // true: cuBLASLt computes C^T = op(B)^T op(A)^T; its A is our B, its rows are our N.
  bool swap_operands = false;
  cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  LtMatrix a, b, d;  // cuBLASLt's A, B and C = D (one buffer, one layout)
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType scale_type = CUDA_R_32F;  // alpha and beta are floats
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  bool has_bias = false;
  cudaDataType bias_type = CUDA_R_32F;  // C's type, as the bias buffer holds
  std::uint32_t reduction_schemes = CUBLASLT_REDUCTION_SCHEME_MASK;
  // FP8 inputs with per-tensor scales: D = alpha * (sa A)(sb B) = (alpha sa sb) A B, so the
  // scales ride on alpha (the run multiplies p.alpha by this) instead of scale pointers.
  double alpha_scale = 1.0;
  // FP8 block scaling (Scaling::kBlock): cuBLASLt's A and B take their scale tensors by pointer,
  // our A's 1 x 128 vectors as VEC128_32F and our B's 128 x 128 blocks as BLK128x128_32F, swapped
  // with the operands (lt_block_scale_arrays lays them out).
  bool block_scaled = false;
  cublasLtMatmulMatrixScale_t a_scale_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  cublasLtMatmulMatrixScale_t b_scale_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;

  // "D=C^T 4096x2048 col, A=B^T(op N) ..., epilogue BIAS": for messages and logs.
  std::string describe() const;
};

cudaDataType cuda_data_type(DType t);
const char* compute_type_name(cublasComputeType_t c);  // "CUBLAS_COMPUTE_32F", ...

// The plan for `p`, or invalid_argument where cuBLASLt has no fused form of the
// problem's epilogue (leaky_relu) or the inputs differ in type. FP8 inputs (e4m3, e5m2; not
// both e5m2) are planned where cuBLASLt's FP8 kernels take them: both operands K-major (its
// A op T, its B op N, D column-major in memory: our NT, the framework's Y = X W^T, with C
// in either layout), unscaled, per-tensor scaled (on alpha) or block scaled (cuBLASLt 12.9's
// VEC128_32F / BLK128x128_32F modes, M a multiple of 4); anything else is unimplemented, with the
// reason.
Result<LtPlan> plan_cublaslt(const GemmProblem& p);

// A block-scaled plan's scale tensors, in cuBLASLt's A and B order (swapped with the operands), made
// from the problem's grids as ProblemData holds them (scale_a: M x ceil(K/128), scale_b:
// ceil(K/128) x ceil(N/128), both row-major). cuBLASLt reads VEC128_32F as [k block][m] (M
// contiguous) and BLK128x128_32F as [n block][k block] with the k blocks padded to a multiple of 4
// (the padding is 1, never read). Sources: NVIDIA's cuBLASLt samples (Common/helpers.h) and the
// frameworks that call it (PyTorch's scaled_mm); the cuBLAS documentation's "scaling factors
// layouts" section was not at hand.
struct LtScaleArrays {
  std::vector<float> a, b;
};
// invalid_argument where the grids' sizes do not fit the problem.
Result<LtScaleArrays> lt_block_scale_arrays(const GemmProblem& p, const LtPlan& plan,
                                            const std::vector<float>& scale_a, const std::vector<float>& scale_b);

}  // namespace tilesmith::cuda
