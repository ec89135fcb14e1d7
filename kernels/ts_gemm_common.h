// Shared by the GEMM templates: the problem macros' defaults, the epilogue and C's
// indexing. Included by name ("ts_gemm_common.h"); tilesmith hands every *.h in the
// kernels folder to the run-time compiler.
#pragma once

#ifndef TS_WARP_SIZE
#define TS_WARP_SIZE 32
#endif
#ifndef TS_A_ROW_MAJOR
#define TS_A_ROW_MAJOR 1
#endif
#ifndef TS_B_ROW_MAJOR
#define TS_B_ROW_MAJOR 1
#endif
#ifndef TS_C_ROW_MAJOR
#define TS_C_ROW_MAJOR 1
#endif
#ifndef TS_HAS_BETA
#define TS_HAS_BETA 0
#endif
#ifndef TS_EPILOGUE
#define TS_EPILOGUE 0
#endif
#include "ts_dtype.h"

// Byte offset of 16-byte chunk c of row r in a tile of 128-byte rows with the 128-byte swizzle
// (the layout of TMA's and wgmma's 128-byte swizzle mode): chunk c stored at chunk c ^ (r % 8).
__device__ __forceinline__ int ts_swizzle128_offset(int r, int c) { return r * 128 + ((c ^ (r % 8)) << 4); }

// Applied in fp32 to alpha*AB + beta*C before the store (and its rounding to C's type).
// m, n index the bias, which has C's element type.
__device__ __forceinline__ float ts_epilogue(float v, int m, int n, const ts_c_t* __restrict__ bias, float slope) {
#if TS_EPILOGUE == 1
  v += ts_c_to_float(bias[m]);
#elif TS_EPILOGUE == 2
  v += ts_c_to_float(bias[n]);
#elif TS_EPILOGUE == 3
  v = v > 0.0f ? v : 0.0f;
#elif TS_EPILOGUE == 4
  v = v > 0.0f ? v : v * slope;
#elif TS_EPILOGUE == 5
  v = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
#endif
  (void)m;
  (void)n;
  (void)bias;
  (void)slope;
  return v;
}

__device__ __forceinline__ long long ts_c_index(int m, int n, int ldc) {
#if TS_C_ROW_MAJOR
  return (long long)m * ldc + n;
#else
  return (long long)n * ldc + m;
#endif
}

// C[m, n] = epilogue(alpha * acc + beta * C[m, n]), in fp32, rounded once to C's type.
__device__ __forceinline__ void ts_store_c(ts_c_t* __restrict__ C, int m, int n, int ldc, float acc, float alpha,
                                           float beta, const ts_c_t* __restrict__ bias, float slope) {
  const long long idx = ts_c_index(m, n, ldc);
  float v = alpha * acc;
#if TS_HAS_BETA
  v += beta * ts_c_to_float(C[idx]);
#endif
  (void)beta;
  C[idx] = ts_c_from_float(ts_epilogue(v, m, n, bias, slope));
}
