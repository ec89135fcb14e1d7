#include "runtime/cuda/cublaslt_plan.h"

#include <utility>

namespace tilesmith::cuda {
namespace {

// A stored matrix (logically rows x cols) as a column-major library sees it: a row-major
// one reads as its transpose, with the same leading dimension.
LtMatrix column_view(DType t, std::int64_t rows, std::int64_t cols, Layout layout,
                     std::int64_t ld) {
  LtMatrix v;
  v.type = cuda_data_type(t);
  const bool row = layout == Layout::kRowMajor;
  v.rows = static_cast<std::uint64_t>(row ? cols : rows);
  v.cols = static_cast<std::uint64_t>(row ? rows : cols);
  v.ld = ld;
  return v;
}

// The op that turns a column view into the matrix wanted: the logical matrix itself
// (want_transpose = false) or its transpose. A row-major view already is the transpose.
cublasOperation_t op_for(Layout stored, bool want_transpose) {
  const bool view_is_transposed = stored == Layout::kRowMajor;
  return view_is_transposed != want_transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
}

Result<cublasLtEpilogue_t> lt_epilogue(Epilogue e) {
  switch (e) {
    case Epilogue::kNone:
      return CUBLASLT_EPILOGUE_DEFAULT;
    case Epilogue::kBiasRow:
    case Epilogue::kBiasCol:
      return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::kRelu:
      return CUBLASLT_EPILOGUE_RELU;
    // cuBLASLt's GELU is the tanh approximation, the same formula as our reference.
    case Epilogue::kGelu:
      return CUBLASLT_EPILOGUE_GELU;
    case Epilogue::kBiasGelu:
      return CUBLASLT_EPILOGUE_GELU_BIAS;
    case Epilogue::kLeakyRelu:
      break;
  }
  return Status::invalid("the vendor library (cuBLASLt) has no fused leaky_relu epilogue");
}

const char* epilogue_text(cublasLtEpilogue_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT:
      return "DEFAULT";
    case CUBLASLT_EPILOGUE_BIAS:
      return "BIAS";
    case CUBLASLT_EPILOGUE_RELU:
      return "RELU";
    case CUBLASLT_EPILOGUE_GELU:
      return "GELU";
    case CUBLASLT_EPILOGUE_GELU_BIAS:
      return "GELU_BIAS";
    default:
      return "other";
  }
}

std::string matrix_text(const char* name, const LtMatrix& m) {
  return std::string(name) + " " + std::to_string(m.rows) + "x" + std::to_string(m.cols) + " ld " +
         std::to_string(m.ld) + (m.order == CUBLASLT_ORDER_ROW ? " row" : " col");
}
const char* op_text(cublasOperation_t op) { return op == CUBLAS_OP_T ? " op T" : " op N"; }

}  // namespace

cudaDataType cuda_data_type(DType t) {
  switch (t) {
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kBF16:
      return CUDA_R_16BF;
    case DType::kE4M3:
      return CUDA_R_8F_E4M3;
    case DType::kE5M2:
      return CUDA_R_8F_E5M2;
    case DType::kF32:
      break;
  }
  return CUDA_R_32F;
}

const char* compute_type_name(cublasComputeType_t c) {
  switch (c) {
    case CUBLAS_COMPUTE_32F:
      return "CUBLAS_COMPUTE_32F";
    case CUBLAS_COMPUTE_32F_PEDANTIC:
      return "CUBLAS_COMPUTE_32F_PEDANTIC";
    default:
      return "another compute type";
  }
}

std::string LtPlan::describe() const {
  std::string s = swap_operands ? "D = C^T = op(B)^T op(A)^T: " : "D = C = op(A) op(B): ";
  s += matrix_text("A", a) + op_text(trans_a) + ", " + matrix_text("B", b) + op_text(trans_b) +
       ", " + matrix_text("D", d);
  s += std::string(", ") + compute_type_name(compute) + ", epilogue " + epilogue_text(epilogue);
  return s;
}

namespace {
// Unimplemented, not invalid_argument: the caller falls back to cublasGemmEx on the latter,
// which has no FP8.
Status no_fp8_plan(const GemmProblem& p, const std::string& why) {
  return Status(StatusCode::kUnimplemented, std::string("no cuBLASLt baseline for ") + dtype_name(p.a_type) + " x " +
                                                dtype_name(p.b_type) + " " + scaling_name(p.scaling) + ": " + why);
}

// FP8's own rules on top of the general plan: the operand types cuBLASLt pairs, the scaling,
// and the one orientation its FP8 kernels take.
Status fit_fp8(const GemmProblem& p, LtPlan& plan) {
  if (!dtype_is_fp8(p.b_type)) return no_fp8_plan(p, "both inputs must be FP8");
  if (p.a_type == DType::kE5M2 && p.b_type == DType::kE5M2)
    return no_fp8_plan(p, "cuBLASLt pairs e5m2 only with e4m3");
  if (plan.trans_a != CUBLAS_OP_T || plan.trans_b != CUBLAS_OP_N || plan.d.order != CUBLASLT_ORDER_COL)
    return no_fp8_plan(p, "its FP8 kernels take both operands K-major with D column-major in memory: layout NT "
                          "(Y = X W^T), C in either layout, a bias only along the dimension D's rows run in; this is " +
                              p.layout_code() + " with a " +
                              (p.c_layout == Layout::kRowMajor ? "row" : "column") + "-major C" +
                              (plan.has_bias ? " and a bias along the other dimension" : ""));
  plan.alpha_scale = per_tensor_alpha_scale(p);
  if (p.scaling == Scaling::kBlock) {
    // Its 1 x 128 scale vectors are M floats per K block, read 16-byte aligned.
    if (p.m % 4 != 0)
      return no_fp8_plan(p, "block scaling needs M to be a multiple of 4 (the 1 x 128 scale vectors of A are read "
                            "as rows of M floats); M is " + std::to_string(p.m));
    plan.block_scaled = true;
    const cublasLtMatmulMatrixScale_t ours_a = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F,
                                      ours_b = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    plan.a_scale_mode = plan.swap_operands ? ours_b : ours_a;
    plan.b_scale_mode = plan.swap_operands ? ours_a : ours_b;
  }
  return {};
}
}  // namespace

Result<LtPlan> plan_cublaslt(const GemmProblem& p) {
  const bool fp8 = dtype_is_fp8(p.a_type) || dtype_is_fp8(p.b_type);
  if (p.a_type != p.b_type && !fp8)
    return Status::invalid(std::string("cuBLASLt needs A and B of one type (") +
                           dtype_name(p.a_type) + " and " + dtype_name(p.b_type) + ")");
  if (p.accumulate != DType::kF32)
    return Status::invalid(std::string("the vendor baseline accumulates in fp32, not ") +
                           dtype_name(p.accumulate));
  TS_ASSIGN_OR_RETURN(cublasLtEpilogue_t epilogue, lt_epilogue(p.epilogue));

  LtPlan plan;
  plan.epilogue = epilogue;
  plan.has_bias = epilogue_has_bias(p.epilogue);
  plan.bias_type = cuda_data_type(p.c_type);
  // D's rows carry the bias; otherwise make D column-major in memory.
  plan.swap_operands =
      plan.has_bias ? epilogue_bias_per_column(p.epilogue) : p.c_layout == Layout::kRowMajor;

  const LtMatrix a = column_view(p.a_type, p.m, p.k, p.a_layout, p.lda());
  const LtMatrix b = column_view(p.b_type, p.k, p.n, p.b_layout, p.ldb());
  if (!plan.swap_operands) {  // D = op(A) op(B)
    plan.a = a;
    plan.trans_a = op_for(p.a_layout, false);
    plan.b = b;
    plan.trans_b = op_for(p.b_layout, false);
  } else {  // D = op(B)^T op(A)^T
    plan.a = b;
    plan.trans_a = op_for(p.b_layout, true);
    plan.b = a;
    plan.trans_b = op_for(p.a_layout, true);
  }
  plan.d.type = cuda_data_type(p.c_type);
  plan.d.rows = static_cast<std::uint64_t>(plan.swap_operands ? p.n : p.m);
  plan.d.cols = static_cast<std::uint64_t>(plan.swap_operands ? p.m : p.n);
  plan.d.ld = p.ldc();
  // Memory is column-major for D when C's layout matches the orientation.
  const bool d_col_in_memory = (p.c_layout == Layout::kColMajor) != plan.swap_operands;
  plan.d.order = d_col_in_memory ? CUBLASLT_ORDER_COL : CUBLASLT_ORDER_ROW;

  // fp32 stays pedantic (no TF32 or other reduced-precision shortcut); half inputs use
  // the tensor cores with fp32 accumulation, as the templates do.
  plan.compute = p.a_type == DType::kF32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
  // A split-K reduction in a half C's type (in place, or through the workspace in the
  // output type) would round partial sums to 16 bits: allow only fp32 partial sums.
  if (p.c_type != DType::kF32) plan.reduction_schemes = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  if (fp8) TS_RETURN_IF_ERROR(fit_fp8(p, plan));
  return plan;
}

Result<LtScaleArrays> lt_block_scale_arrays(const GemmProblem& p, const LtPlan& plan,
                                            const std::vector<float>& scale_a, const std::vector<float>& scale_b) {
  const std::int64_t kb = (p.k + kScaleBlock - 1) / kScaleBlock, nb = (p.n + kScaleBlock - 1) / kScaleBlock;
  const std::int64_t kb4 = (kb + 3) / 4 * 4;
  if (std::int64_t(scale_a.size()) != p.m * kb || std::int64_t(scale_b.size()) != kb * nb)
    return Status::invalid("block scales of " + std::to_string(scale_a.size()) + " and " +
                           std::to_string(scale_b.size()) + " values for " + p.describe() + ", which has " +
                           std::to_string(p.m * kb) + " and " + std::to_string(kb * nb));
  LtScaleArrays ours;
  ours.a.resize(std::size_t(kb * p.m));
  for (std::int64_t m = 0; m < p.m; ++m)
    for (std::int64_t k = 0; k < kb; ++k) ours.a[std::size_t(k * p.m + m)] = scale_a[std::size_t(m * kb + k)];
  ours.b.assign(std::size_t(nb * kb4), 1.0f);
  for (std::int64_t k = 0; k < kb; ++k)
    for (std::int64_t n = 0; n < nb; ++n) ours.b[std::size_t(n * kb4 + k)] = scale_b[std::size_t(k * nb + n)];
  if (plan.swap_operands) std::swap(ours.a, ours.b);
  return ours;
}

}  // namespace tilesmith::cuda
