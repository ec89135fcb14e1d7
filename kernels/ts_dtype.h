// Element types of the GEMM operands, chosen by the problem: TS_AB_DTYPE for A and B,
// TS_C_DTYPE for C and the bias (0 fp32, 1 fp16, 2 bf16; for A and B also 3 e4m3 and 4 e5m2,
// the OCP FP8 input types; registry/dtype.h is the host's side of the same table). Half types
// are carried as their 16 raw bits (unsigned short) and FP8 as its 8 (unsigned char), so no
// vendor half or FP8 header is needed under NVRTC or hipRTC; the conversions below are the
// only place that knows their encodings. Accumulation is always fp32.
#pragma once

#ifndef TS_AB_DTYPE
#define TS_AB_DTYPE 0
#endif
#ifndef TS_C_DTYPE
#define TS_C_DTYPE 0
#endif

#define TS_DTYPE_F32 0
#define TS_DTYPE_F16 1
#define TS_DTYPE_BF16 2
#define TS_DTYPE_E4M3 3
#define TS_DTYPE_E5M2 4

// FP8 is an input type: the host refuses an FP8 C (GemmProblem::validate), and so does this.
#if TS_C_DTYPE == TS_DTYPE_E4M3 || TS_C_DTYPE == TS_DTYPE_E5M2
#error "TS_C_DTYPE: e4m3 and e5m2 are input types only; C is fp32, fp16 or bf16"
#endif

typedef unsigned short ts_bits16;
typedef unsigned char ts_bits8;

// fp16/bf16 raw bits -> fp32 (exact).
__device__ __forceinline__ float ts_bf16_to_float(ts_bits16 x) { return __uint_as_float(((unsigned)x) << 16); }
__device__ __forceinline__ float ts_f16_to_float(ts_bits16 x) {
#if defined(TS_VENDOR_AMD)
  return (float)__builtin_bit_cast(_Float16, x);
#else
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
  return f;
#endif
}
// OCP FP8 raw bits -> fp32 (exact; registry/fp8.h is the host's codec). Both formats widen
// into an fp32 by moving the exponent and mantissa fields; subnormals are m * 2^(1 - bias - mbits).
// E4M3 has no infinities (S.1111.111 is NaN); E5M2 is IEEE-like (exponent 31: inf or NaN).
// Kernels on the matrix units feed the raw bytes to the instructions (wgmma .e4m3/.e5m2) and
// need no conversion; this is for the CUDA-core paths and epilogue-side reads.
__device__ __forceinline__ float ts_fp8_to_float(ts_bits8 x, int mbits, int bias, bool ieee_specials) {
  const unsigned sign = ((unsigned)x & 0x80u) << 24;
  const int ebits = 7 - mbits;
  const int e = ((int)x >> mbits) & ((1 << ebits) - 1);
  const unsigned m = (unsigned)x & ((1u << mbits) - 1u);
  if (ieee_specials ? e == (1 << ebits) - 1 : (e == (1 << ebits) - 1 && m == (1u << mbits) - 1u))
    return __uint_as_float(sign | 0x7f800000u | (ieee_specials && m == 0 ? 0u : 0x400000u));
  if (e == 0) {  // subnormal: m * 2^(1 - bias - mbits), exact in fp32
    const float v = (float)m * __uint_as_float((unsigned)(127 + 1 - bias - mbits) << 23);
    return sign ? -v : v;
  }
  return __uint_as_float(sign | ((unsigned)(e - bias + 127) << 23) | (m << (23 - mbits)));
}
__device__ __forceinline__ float ts_e4m3_to_float(ts_bits8 x) { return ts_fp8_to_float(x, 3, 7, false); }
__device__ __forceinline__ float ts_e5m2_to_float(ts_bits8 x) { return ts_fp8_to_float(x, 2, 15, true); }

// fp32 -> fp16/bf16 raw bits, rounded to nearest even (NaN stays NaN).
__device__ __forceinline__ ts_bits16 ts_float_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ts_bits16)0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (ts_bits16)(u >> 16);
}
__device__ __forceinline__ ts_bits16 ts_float_to_f16(float f) {
#if defined(TS_VENDOR_AMD)
  return __builtin_bit_cast(ts_bits16, (_Float16)f);
#else
  ts_bits16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#endif
}

// The storage type of one dtype code, and its conversions to and from fp32.
#define TS_STORAGE_T(code) ts_storage_of<code>::type
template <int Code> struct ts_storage_of { typedef ts_bits16 type; };
template <> struct ts_storage_of<TS_DTYPE_F32> { typedef float type; };
template <> struct ts_storage_of<TS_DTYPE_E4M3> { typedef ts_bits8 type; };
template <> struct ts_storage_of<TS_DTYPE_E5M2> { typedef ts_bits8 type; };

template <int Code> __device__ __forceinline__ float ts_to_float(typename ts_storage_of<Code>::type x);
template <> __device__ __forceinline__ float ts_to_float<TS_DTYPE_F32>(float x) { return x; }
template <> __device__ __forceinline__ float ts_to_float<TS_DTYPE_F16>(ts_bits16 x) { return ts_f16_to_float(x); }
template <> __device__ __forceinline__ float ts_to_float<TS_DTYPE_BF16>(ts_bits16 x) { return ts_bf16_to_float(x); }
template <> __device__ __forceinline__ float ts_to_float<TS_DTYPE_E4M3>(ts_bits8 x) { return ts_e4m3_to_float(x); }
template <> __device__ __forceinline__ float ts_to_float<TS_DTYPE_E5M2>(ts_bits8 x) { return ts_e5m2_to_float(x); }

template <int Code> __device__ __forceinline__ typename ts_storage_of<Code>::type ts_from_float(float x);
template <> __device__ __forceinline__ float ts_from_float<TS_DTYPE_F32>(float x) { return x; }
template <> __device__ __forceinline__ ts_bits16 ts_from_float<TS_DTYPE_F16>(float x) { return ts_float_to_f16(x); }
template <> __device__ __forceinline__ ts_bits16 ts_from_float<TS_DTYPE_BF16>(float x) { return ts_float_to_bf16(x); }

// The problem's types: A and B elements (ts_ab_t), C and bias elements (ts_c_t).
typedef TS_STORAGE_T(TS_AB_DTYPE) ts_ab_t;
typedef TS_STORAGE_T(TS_C_DTYPE) ts_c_t;
__device__ __forceinline__ float ts_ab_to_float(ts_ab_t x) { return ts_to_float<TS_AB_DTYPE>(x); }
__device__ __forceinline__ float ts_c_to_float(ts_c_t x) { return ts_to_float<TS_C_DTYPE>(x); }
__device__ __forceinline__ ts_c_t ts_c_from_float(float x) { return ts_from_float<TS_C_DTYPE>(x); }
