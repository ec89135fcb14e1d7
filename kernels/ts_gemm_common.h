// Shared by the GEMM templates: the problem macros' defaults (layouts, beta, epilogue, warp
// size) and MIN_BLOCKS's, the element types (ts_dtype.h), the epilogue and stores of C
// (ts_epilogue.h), and the zeroing of MMA accumulators (ts_zero_tiles).
// Included by name ("ts_gemm_common.h"); tilesmith hands every *.h in the kernels folder to
// the run-time compiler.
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
// The blocks per multiprocessor that a template's __launch_bounds__ asks the register
// allocation to leave room for, where the template tunes it (its JSON declares MIN_BLOCKS).
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#include "ts_dtype.h"
#include "ts_epilogue.h"

// The arguments every GEMM kernel takes, in the order the runtime passes them (the kernel ABI of
// registry/kernel_template.h; a template with tensor maps adds its own after these): A and B of
// type AB, C and the bias of type CT.
#define TS_GEMM_PARAMS(AB, CT)                                                                            \
  const AB* __restrict__ A, const AB* __restrict__ B, CT* __restrict__ C, const CT* __restrict__ bias,      \
      float* __restrict__ workspace, int M, int N, int K, int lda, int ldb, int ldc, float alpha, float beta, \
      float epilogue_slope

// Zeroes the accumulators of a warp's MMA tiles (TM x TN tiles, n a thread) in index order,
// unrolled, so that the registers start as constants. A loop nest rather than `= {}` or a
// recursion over the array's rank: hipRTC allocates registers otherwise for those.
template <int TM, int TN, int n>
__device__ __forceinline__ void ts_zero_tiles(float (&acc)[TM][TN][n]) {
#pragma unroll
  for (int mt = 0; mt < TM; ++mt)
#pragma unroll
    for (int nt = 0; nt < TN; ++nt)
#pragma unroll
      for (int i = 0; i < n; ++i) acc[mt][nt][i] = 0.0f;
}
