// gemm_tiled: the baseline fp32 GEMM. Each block computes a BLOCK_M x BLOCK_N tile of
// C, staging BLOCK_K-deep slices of A and B in shared memory; each thread accumulates a
// THREAD_M x THREAD_N tile in registers. Any M, N, K: out-of-range loads read zero and
// out-of-range stores are skipped. Layouts, beta and the epilogue are compile-time (the
// store is ts_store_c's).
//
// Compiles on its own: every macro below has a default.
#ifndef BLOCK_M
#define BLOCK_M 64
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif
#ifndef BLOCK_K
#define BLOCK_K 8
#endif
#ifndef THREAD_M
#define THREAD_M 4
#endif
#ifndef THREAD_N
#define THREAD_N 4
#endif
#include "ts_gemm_common.h"

#define TS_THREADS ((BLOCK_M / THREAD_M) * (BLOCK_N / THREAD_N))
// One float of padding per shared row keeps the transposed A stores off a single bank.
#define TS_PAD 1

// Stages one operand's slice: the rows x cols block at (row0, col0) of X (A's BLOCK_M x BLOCK_K
// at (block_m, k0), B's BLOCK_K x BLOCK_N at (k0, block_n)), stored row-major (rows ld apart) or
// column-major, into at(r, c); zeros at or past row_end and col_end. Consecutive threads read
// consecutive addresses in whichever layout the operand has.
template <bool row_major, int rows, int cols, typename At>
__device__ __forceinline__ void stage_operand(At at, const float* __restrict__ X, int ld, int row0, int row_end,
                                              int col0, int col_end, int tid) {
  for (int i = tid; i < rows * cols; i += TS_THREADS) {
    const int r = row_major ? i / cols : i % rows, c = row_major ? i % cols : i / rows;
    const int gr = row0 + r, gc = col0 + c;
    float v = 0.0f;
    if (gr < row_end && gc < col_end) v = row_major ? X[(long long)gr * ld + gc] : X[(long long)gc * ld + gr];
    at(r, c) = v;
  }
}

extern "C" __global__ void __launch_bounds__(TS_THREADS)
gemm_tiled(TS_GEMM_PARAMS(float, float)) {
  (void)workspace;
  __shared__ float As[BLOCK_K][BLOCK_M + TS_PAD];
  __shared__ float Bs[BLOCK_K][BLOCK_N + TS_PAD];

  const int tid = threadIdx.x;
  const int tx = tid % (BLOCK_N / THREAD_N);
  const int ty = tid / (BLOCK_N / THREAD_N);
  const int block_m = blockIdx.y * BLOCK_M;
  const int block_n = blockIdx.x * BLOCK_N;

  float acc[THREAD_M][THREAD_N];
#pragma unroll
  for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
    for (int j = 0; j < THREAD_N; ++j) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BLOCK_K) {
    stage_operand<TS_A_ROW_MAJOR, BLOCK_M, BLOCK_K>([&](int m, int k) -> float& { return As[k][m]; }, A, lda,
                                                    block_m, M, k0, K, tid);
    stage_operand<TS_B_ROW_MAJOR, BLOCK_K, BLOCK_N>([&](int k, int n) -> float& { return Bs[k][n]; }, B, ldb, k0, K,
                                                    block_n, N, tid);
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < BLOCK_K; ++kk) {
      float a_frag[THREAD_M], b_frag[THREAD_N];
#pragma unroll
      for (int i = 0; i < THREAD_M; ++i) a_frag[i] = As[kk][ty * THREAD_M + i];
#pragma unroll
      for (int j = 0; j < THREAD_N; ++j) b_frag[j] = Bs[kk][tx * THREAD_N + j];
#pragma unroll
      for (int i = 0; i < THREAD_M; ++i)
#pragma unroll
        for (int j = 0; j < THREAD_N; ++j) acc[i][j] += a_frag[i] * b_frag[j];
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < THREAD_M; ++i) {
    const int gm = block_m + ty * THREAD_M + i;
#pragma unroll
    for (int j = 0; j < THREAD_N; ++j) {
      const int gn = block_n + tx * THREAD_N + j;
      if (gm < M && gn < N) {
#if TS_C_ROW_MAJOR
        const long long idx = (long long)gm * ldc + gn;
#else
        const long long idx = (long long)gn * ldc + gm;
#endif
        float v = alpha * acc[i][j];
#if TS_HAS_BETA
        v += beta * C[idx];
#endif
        C[idx] = ts_epilogue(v, gm, gn, bias, epilogue_slope);
      }
    }
  }
  (void)beta;
}
