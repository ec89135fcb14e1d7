#include "runtime/hip/hipblas_gemm_ex.h"

#include <cctype>

namespace tilesmith::hip {
namespace {

// Declared here because hipBLAS's headers are optional (Debian ships none); the values
// are hipBLAS's and HIP's own.
int hipblas_datatype(DType t) {  // hipblasDatatype_t
  switch (t) {
    case DType::kF16:
      return 150;  // HIPBLAS_R_16F
    case DType::kBF16:
      return 168;  // HIPBLAS_R_16B
    case DType::kE4M3:
    case DType::kE5M2:
      return -1;  // refused by plan_gemm_ex before any call
    case DType::kF32:
      break;
  }
  return 151;  // HIPBLAS_R_32F
}
int hip_data_type(DType t) {  // hipDataType
  switch (t) {
    case DType::kF16:
      return 2;  // HIP_R_16F
    case DType::kBF16:
      return 14;  // HIP_R_16BF
    case DType::kE4M3:
    case DType::kE5M2:
      return -1;  // refused by plan_gemm_ex before any call
    case DType::kF32:
      break;
  }
  return 0;  // HIP_R_32F
}
constexpr int kHipblasComputeF32 = 2;  // hipblasComputeType_t HIPBLAS_COMPUTE_32F

int encode(DType t, GemmExAbi abi) {
  return abi == GemmExAbi::kHipblasDatatype ? hipblas_datatype(t) : hip_data_type(t);
}

}  // namespace

GemmExSymbol choose_gemm_ex(bool has_v2, int major) {
  if (has_v2) return {"hipblasGemmEx_v2", GemmExAbi::kHipDataType};
  return {"hipblasGemmEx", major >= 3 ? GemmExAbi::kHipDataType : GemmExAbi::kHipblasDatatype};
}

int soname_major(const std::string& file) {
  const std::string::size_type at = file.rfind(".so.");
  if (at == std::string::npos) return -1;
  std::string::size_type i = at + 4;
  int major = 0;
  bool any = false;
  for (; i < file.size() && std::isdigit(static_cast<unsigned char>(file[i])); ++i, any = true)
    major = major * 10 + (file[i] - '0');
  return any ? major : -1;
}

Result<GemmExArgs> plan_gemm_ex(const GemmProblem& p, GemmExAbi abi) {
  // hipblasGemmEx has no scale arguments, and MI300's FP8 is the FNUZ variant, not these.
  if (dtype_is_fp8(p.a_type))
    return Status(StatusCode::kUnimplemented, std::string("hipblasGemmEx has no vendor baseline for ") +
                                                   dtype_name(p.a_type) + " inputs (OCP FP8 with scales)");
  if (p.epilogue != Epilogue::kNone)
    return Status::invalid(
        std::string("the vendor library (hipBLAS, hipblasGemmEx) has no fused ") +
        epilogue_name(p.epilogue) + " epilogue");
  if (p.a_type != p.b_type)
    return Status::invalid(std::string("hipblasGemmEx needs A and B of one type (") +
                           dtype_name(p.a_type) + " and " + dtype_name(p.b_type) + ")");
  if (p.accumulate != DType::kF32)
    return Status::invalid(std::string("the vendor baseline accumulates in fp32, not ") +
                           dtype_name(p.accumulate));
  GemmExArgs x;
  const bool a_row = p.a_layout == Layout::kRowMajor, b_row = p.b_layout == Layout::kRowMajor;
  // Column-major library: a row-major operand read column-major is already transposed.
  x.swap_operands = p.c_layout == Layout::kRowMajor;
  if (!x.swap_operands) {  // C = op(A) op(B)
    x.trans_a = a_row ? kHipblasOpT : kHipblasOpN;
    x.trans_b = b_row ? kHipblasOpT : kHipblasOpN;
    x.m = int(p.m), x.n = int(p.n);
    x.lda = int(p.lda()), x.ldb = int(p.ldb());
  } else {  // C^T = op(B)^T op(A)^T
    x.trans_a = b_row ? kHipblasOpN : kHipblasOpT;
    x.trans_b = a_row ? kHipblasOpN : kHipblasOpT;
    x.m = int(p.n), x.n = int(p.m);
    x.lda = int(p.ldb()), x.ldb = int(p.lda());
  }
  x.k = int(p.k);
  x.ldc = int(p.ldc());
  x.a_type = encode(p.a_type, abi);
  x.b_type = encode(p.b_type, abi);
  x.c_type = encode(p.c_type, abi);
  // fp32 accumulation always; the old ABI names it with a data type, the new with a compute type.
  x.compute_type =
      abi == GemmExAbi::kHipblasDatatype ? hipblas_datatype(DType::kF32) : kHipblasComputeF32;
  return x;
}

}  // namespace tilesmith::hip
