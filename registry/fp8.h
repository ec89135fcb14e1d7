#pragma once
// The two 8-bit floating-point formats of the OCP 8-bit Floating Point specification
// (OFP8, v1.0), as Hopper's tensor cores and cuBLASLt take them, converted exactly on the host
// (the CPU reference and input preparation of FP8 GEMMs):
//
//   E4M3 ("e4m3fn"): 1 sign, 4 exponent bits (bias 7), 3 mantissa bits. No infinities:
//          S.1111.111 is NaN, the largest finite value is 448 (S.1111.110); subnormals are
//          m x 2^-9 (smallest 2^-9), the smallest normal 2^-6.
//   E5M2:  1 sign, 5 exponent bits (bias 15), 2 mantissa bits, IEEE-like: S.11111.00 is
//          infinity, S.11111.{01,10,11} NaN; the largest finite value is 57344; subnormals
//          m x 2^-16, the smallest normal 2^-14.
//
// fp32 -> FP8 rounds to nearest, ties to even (at a subnormal or overflow boundary too). A
// value beyond the largest finite one after rounding saturates to it (kSaturate: what FP8
// GEMM inputs are cast with) or, without saturation, becomes NaN (E4M3) or infinity (E5M2);
// an infinite input likewise. Any NaN becomes 0x7F. Zero keeps its sign. This matches
// CUDA's __nv_cvt_float_to_fp8 with __NV_SATFINITE / __NV_NOSAT (tested against it where the
// CUDA headers are installed). AMD's MI300 takes the "FNUZ" variants (other bias, one zero,
// NaN 0x80), which are not these. Pure functions.

#include <cstdint>

namespace tilesmith {

enum class Fp8Format { kE4M3, kE5M2 };
enum class Fp8Overflow { kSaturate, kNonSaturating };

// Exact for all 256 patterns (NaN as a quiet fp32 NaN, E5M2's infinities as infinities).
float fp8_to_float(Fp8Format f, std::uint8_t bits);
std::uint8_t float_to_fp8(Fp8Format f, float x, Fp8Overflow overflow = Fp8Overflow::kSaturate);
// 448 or 57344.
float fp8_max_finite(Fp8Format f);
const char* fp8_format_name(Fp8Format f);  // "e4m3", "e5m2"

}  // namespace tilesmith
