#pragma once
// Element types, as data: one table (name, bytes, unit roundoff, the kernel's type code,
// whether it may be an output, the raw-bit codec) and the host conversions between fp32
// and each storage format. The kernel side of the same table is kernels/ts_dtype.h
// (TS_AB_DTYPE / TS_C_DTYPE take kernel_code()).
// Half types are stored as their 16 raw bits; conversions round to nearest even, keep
// NaN a NaN, and handle subnormals and overflow to infinity. The FP8 types (OCP e4m3 and
// e5m2, registry/fp8.h) are stored as their 8 raw bits and are input types only (A and B:
// an FP8 GEMM writes C in bf16, fp16 or fp32); encoding rounds to nearest even and
// saturates to the largest finite value, as FP8 GEMM inputs are cast. Thread-safe (pure
// functions).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace tilesmith {

enum class DType { kF32, kF16, kBF16, kE4M3, kE5M2 };

struct DTypeInfo {
  DType type;
  const char* name;       // "fp32", "fp16", "bf16", "e4m3", "e5m2"
  int bytes;              // storage size of one element
  int significand_bits;   // with the implicit bit: 24, 11, 8, 4, 3
  int kernel_code;        // value of TS_AB_DTYPE / TS_C_DTYPE in kernels/ts_dtype.h
  std::uint16_t nan_bits; // a quiet NaN's raw bits (half and FP8 types; 0 for fp32)
  bool output;            // may be C (and the accumulator): false for the FP8 input types
  // Matrix-unit throughput relative to the half types (0: none, the FP32 FMA peak; 1: half;
  // 2: FP8, twice the half rate on the GPUs with FP8 tensor cores).
  int matrix_rate;
  float max_finite;  // the largest finite value (what FP8 saturates to)
  // fp32 -> the nearest raw bits (saturating for FP8), and raw bits -> fp32 (exact).
  std::uint32_t (*encode)(float);
  float (*decode)(std::uint32_t);
};

const DTypeInfo& dtype_info(DType t);
// Every type of the table, in its order: what --dtype and --c-dtype offer.
std::vector<std::string> dtype_names();
const char* dtype_name(DType t);  // "fp32", "fp16", "bf16", "e4m3", "e5m2"
Result<DType> parse_dtype(const std::string& s);
int dtype_bytes(DType t);
// 2^-p for p significand bits: the relative error of one rounding to nearest.
double unit_roundoff(DType t);
bool dtype_is_fp8(DType t);
// Whether t may be C's type (and the accumulator's): false for the FP8 input types.
bool dtype_can_be_output(DType t);
// The names of the types that may be C, "fp32, fp16 or bf16": for messages.
std::string output_dtype_list();
// C's type when a problem names none: the input type, or bf16 for an input-only type
// (what FP8 GEMMs write in inference).
DType default_c_dtype(DType input);
// A 32-bit word of NaNs of type t (fp32: one, halves: two, FP8: four), to fill an output
// with: an element a kernel never writes stays NaN.
std::uint32_t nan_fill_word(DType t);

// fp32 -> the nearest value of type t (as an fp32, which holds every value of the table's
// types exactly). FP8 saturates to its largest finite value.
float round_to(DType t, float x);
// fp32 <-> the raw bits of one element of type t (in the low dtype_bytes(t) bytes).
std::uint32_t float_to_bits(DType t, float x);
float bits_to_float(DType t, std::uint32_t bits);
// fp32 <-> raw bits of one half element.
std::uint16_t float_to_half_bits(DType t, float x);  // t is kF16 or kBF16 (float_to_bits for any)
float half_bits_to_float(DType t, std::uint16_t bits);

// count fp32 values -> count elements of type t at dst (t's storage, dtype_bytes(t) each),
// and back. For kF32 a plain copy.
void encode_elements(DType t, const float* src, std::size_t count, void* dst);
void decode_elements(DType t, const void* src, std::size_t count, float* dst);

}  // namespace tilesmith
