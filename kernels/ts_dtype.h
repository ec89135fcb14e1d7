// Element types of the GEMM operands, chosen by the problem: TS_AB_DTYPE for A and B,
// TS_C_DTYPE for C and the bias (0 fp32, 1 fp16, 2 bf16; registry/dtype.h is the host's
// side of the same table). Half types are carried as their 16 raw bits (unsigned short),
// so no vendor half header is needed under NVRTC or hipRTC; the conversions below are
// the only place that knows their encodings. Accumulation is always fp32.
#pragma once

#ifndef TS_AB_DTYPE
#define TS_AB_DTYPE 0
#endif
#ifndef TS_C_DTYPE
#define TS_C_DTYPE 0
#endif
// B's type where it differs from A's: e4m3 with e5m2 (a template that says "mixed_fp8"). Both
// are stored in 8 bits, so ts_ab_t holds either; only the tensor cores tell them apart.
#ifndef TS_B_DTYPE
#define TS_B_DTYPE TS_AB_DTYPE
#endif

#define TS_DTYPE_F32 0
#define TS_DTYPE_F16 1
#define TS_DTYPE_BF16 2
// The OCP FP8 input types (registry/fp8.h): carried as their 8 raw bits; only the tensor cores read
// them (no conversion here), so a template that claims them needs no codec.
#define TS_DTYPE_E4M3 3
#define TS_DTYPE_E5M2 4
#define TS_AB_IS_FP8 (TS_AB_DTYPE == TS_DTYPE_E4M3 || TS_AB_DTYPE == TS_DTYPE_E5M2)

typedef unsigned short ts_bits16;

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
// fp32 -> fp16/bf16 raw bits, rounded to nearest even (NaN stays NaN). sm_80 and later convert
// to bf16 in one instruction; by hand it is about ten integer instructions a value, which made
// the conversion most of a Hopper epilogue's instructions (ncu, run 171).
#if !defined(TS_VENDOR_AMD) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TS_HW_BF16_CVT 1
#else
#define TS_HW_BF16_CVT 0
#endif
__device__ __forceinline__ ts_bits16 ts_float_to_bf16(float f) {
#if TS_HW_BF16_CVT
  ts_bits16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ts_bits16)0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (ts_bits16)(u >> 16);
#endif
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
template <> struct ts_storage_of<TS_DTYPE_E4M3> { typedef unsigned char type; };
template <> struct ts_storage_of<TS_DTYPE_E5M2> { typedef unsigned char type; };

template <int Code> __device__ __forceinline__ float ts_to_float(typename ts_storage_of<Code>::type x);
template <> __device__ __forceinline__ float ts_to_float<TS_DTYPE_F32>(float x) { return x; }
template <> __device__ __forceinline__ float ts_to_float<TS_DTYPE_F16>(ts_bits16 x) { return ts_f16_to_float(x); }
template <> __device__ __forceinline__ float ts_to_float<TS_DTYPE_BF16>(ts_bits16 x) { return ts_bf16_to_float(x); }

template <int Code> __device__ __forceinline__ typename ts_storage_of<Code>::type ts_from_float(float x);
template <> __device__ __forceinline__ float ts_from_float<TS_DTYPE_F32>(float x) { return x; }
template <> __device__ __forceinline__ ts_bits16 ts_from_float<TS_DTYPE_F16>(float x) { return ts_float_to_f16(x); }
template <> __device__ __forceinline__ ts_bits16 ts_from_float<TS_DTYPE_BF16>(float x) { return ts_float_to_bf16(x); }

// The problem's types: A and B elements (ts_ab_t), C and bias elements (ts_c_t).
typedef TS_STORAGE_T(TS_AB_DTYPE) ts_ab_t;
typedef TS_STORAGE_T(TS_C_DTYPE) ts_c_t;
#if !TS_AB_IS_FP8  // FP8 inputs are read by the tensor cores only: no decoder here
__device__ __forceinline__ float ts_ab_to_float(ts_ab_t x) { return ts_to_float<TS_AB_DTYPE>(x); }
#endif
__device__ __forceinline__ float ts_c_to_float(ts_c_t x) { return ts_to_float<TS_C_DTYPE>(x); }
__device__ __forceinline__ ts_c_t ts_c_from_float(float x) { return ts_from_float<TS_C_DTYPE>(x); }
// Two neighbouring 16-bit C values (TS_C_DTYPE fp16 or bf16) packed into one word, lo in the low
// half: one instruction on sm_80 and later (cvt's packed form puts its first source high).
#if TS_C_DTYPE != TS_DTYPE_F32
__device__ __forceinline__ unsigned ts_c_pack2(float lo, float hi) {
#if TS_HW_BF16_CVT
  unsigned w;
#if TS_C_DTYPE == TS_DTYPE_BF16
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
#else
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
#endif
  return w;
#else
  return (unsigned)ts_c_from_float(lo) | ((unsigned)ts_c_from_float(hi) << 16);
#endif
}
#endif
