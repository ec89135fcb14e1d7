#pragma once
// hipblasGemmEx for the vendor baseline in half precision: which exported symbol to call,
// how its enum arguments are encoded in the hipBLAS that was loaded, and the column-major
// call for one GemmProblem. Pure (no HIP header, no library call), so it is tested on any
// machine. Thread-safe.
//
// hipBLAS changed the function under one name: up to hipBLAS 1 (ROCm 5) hipblasGemmEx
// takes hipblasDatatype_t for the types and the compute type (HIPBLAS_R_16F = 150, ...);
// hipBLAS 2 (ROCm 6) keeps that and adds hipblasGemmEx_v2, taking hipDataType
// (HIP_R_16F = 2, ...) and hipblasComputeType_t (HIPBLAS_COMPUTE_32F = 2); hipBLAS 3
// (ROCm 7) drops _v2 and gives hipblasGemmEx the new types. Every argument is an int in
// the C ABI, so one function pointer serves both; only the numbers differ.

#include <string>

#include "base/status.h"
#include "registry/problem.h"

namespace tilesmith::hip {

enum class GemmExAbi {
  kHipblasDatatype,  // hipblasDatatype_t for types and compute type
  kHipDataType,      // hipDataType for types, hipblasComputeType_t for compute
};

struct GemmExSymbol {
  const char* name;  // "hipblasGemmEx_v2" or "hipblasGemmEx"
  GemmExAbi abi;
};

// What to call, given whether the library exports hipblasGemmEx_v2 and the major version
// of its file name (libhipblas.so.N; -1 when unknown, read as hipBLAS before 3).
GemmExSymbol choose_gemm_ex(bool has_v2, int soname_major);

// N of ".../libhipblas.so.N[.x.y]"; -1 when the name carries no version.
int soname_major(const std::string& file);

// hipBLAS enum values that both encodings share.
inline constexpr int kHipblasOpN = 111;
inline constexpr int kHipblasOpT = 112;
inline constexpr int kHipblasGemmDefault = 160;

// One column-major hipblasGemmEx call: C = alpha*op(first)*op(second) + beta*C. A
// column-major C is computed directly; a row-major C as C^T = B^T A^T (first = our B).
struct GemmExArgs {
  int trans_a = kHipblasOpN, trans_b = kHipblasOpN;
  int m = 0, n = 0, k = 0;
  bool swap_operands = false;  // first operand is our B
  int lda = 0, ldb = 0, ldc = 0;
  int a_type = 0, b_type = 0, c_type = 0, compute_type = 0;  // encoded for the ABI
};

// invalid_argument for an epilogue (hipBLAS fuses none), A and B of different types, or a
// non-fp32 accumulator.
Result<GemmExArgs> plan_gemm_ex(const GemmProblem& p, GemmExAbi abi);

}  // namespace tilesmith::hip
