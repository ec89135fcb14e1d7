#pragma once
// Element types, as data: one table (name, bytes, unit roundoff, the kernel's type code)
// and the host conversions between fp32 and each storage format. The kernel side of the
// same table is kernels/ts_dtype.h (TS_AB_DTYPE / TS_C_DTYPE take kernel_code()).
// Half types are stored as their 16 raw bits; conversions round to nearest even, keep
// NaN a NaN, and handle subnormals and overflow to infinity. Thread-safe (pure functions).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace tilesmith {

enum class DType { kF32, kF16, kBF16 };

struct DTypeInfo {
  DType type;
  const char* name;       // "fp32", "fp16", "bf16"
  int bytes;              // storage size of one element
  int significand_bits;   // with the implicit bit: 24, 11, 8
  int kernel_code;        // value of TS_AB_DTYPE / TS_C_DTYPE in kernels/ts_dtype.h
  std::uint16_t nan_bits; // a quiet NaN's 16 raw bits (half types), to poison outputs
};

const DTypeInfo& dtype_info(DType t);
// Every type of the table, in its order: what --dtype and --c-dtype offer.
std::vector<std::string> dtype_names();
const char* dtype_name(DType t);  // "fp32", "fp16", "bf16"
Result<DType> parse_dtype(const std::string& s);
int dtype_bytes(DType t);
// 2^-p for p significand bits: the relative error of one rounding to nearest.
double unit_roundoff(DType t);

// fp32 -> the nearest value of type t (as an fp32, which holds every fp16/bf16 exactly).
float round_to(DType t, float x);
// fp32 <-> raw bits of one half element.
std::uint16_t float_to_half_bits(DType t, float x);  // t is kF16 or kBF16
float half_bits_to_float(DType t, std::uint16_t bits);

// count fp32 values -> count elements of type t at dst (t's storage, dtype_bytes(t) each),
// and back. For kF32 a plain copy.
void encode_elements(DType t, const float* src, std::size_t count, void* dst);
void decode_elements(DType t, const void* src, std::size_t count, float* dst);

}  // namespace tilesmith
