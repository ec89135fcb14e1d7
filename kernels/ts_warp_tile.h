// Warp tiling shared by gemm_warp and gemm_async: the per-thread register tile, the
// multiply of one shared-memory stage, and the finish (ts_tile.h has the tile order,
// split-K and the reduction). Shared memory holds A as As[k][m] and B as Bs[k][n], so a
// thread reads contiguous vectors along M and N.
//
// The tile's parameters, which the including template may define first (the search does:
// each template's JSON declares them with these defaults), else the family's default tile:
// BLOCK_K deep slices; thread tiles THREAD_M x THREAD_N, WNITER of them along N per warp tile;
// SMEM_PAD floats of padding per shared row. The block and warp tiles (BLOCK_M x BLOCK_N,
// WARP_M x WARP_N) are ts_warp_grid.h's, GROUP_M and SPLIT_K ts_tile.h's.
#pragma once
#include "ts_gemm_common.h"

#ifndef BLOCK_K
#define BLOCK_K 16
#endif
#ifndef THREAD_M
#define THREAD_M 4
#endif
#ifndef THREAD_N
#define THREAD_N 4
#endif
#ifndef WNITER
#define WNITER 2
#endif
#ifndef SMEM_PAD
#define SMEM_PAD 4
#endif

#include "ts_warp_grid.h"  // BLOCK_M, BLOCK_N, WARP_M, WARP_N; WARPS_M, WARPS_N, THREADS

#define WMITER ((WARP_M * WARP_N) / (TS_WARP_SIZE * THREAD_M * THREAD_N * WNITER))
#define WSUB_M (WARP_M / WMITER)
#define WSUB_N (WARP_N / WNITER)
#define LDS_A (BLOCK_M + SMEM_PAD)
#define LDS_B (BLOCK_N + SMEM_PAD)
#define STAGE_FLOATS (BLOCK_K * (LDS_A + LDS_B))
#define ACC_M (WMITER * THREAD_M)
#define ACC_N (WNITER * THREAD_N)

#include "ts_tile.h"  // after THREADS

// Where this thread's register tile sits inside the block tile.
struct TsThread {
  int warp_row, warp_col, thread_row, thread_col;
  __device__ __forceinline__ int row(int wm, int i) const {
    return warp_row * WARP_M + wm * WSUB_M + thread_row * THREAD_M + i;
  }
  __device__ __forceinline__ int col(int wn, int j) const {
    return warp_col * WARP_N + wn * WSUB_N + thread_col * THREAD_N + j;
  }
};

__device__ __forceinline__ TsThread ts_thread(int tid) {
  const int warp = tid / TS_WARP_SIZE, lane = tid % TS_WARP_SIZE;
  TsThread t;
  t.warp_row = warp / WARPS_N;
  t.warp_col = warp % WARPS_N;
  t.thread_col = lane % (WSUB_N / THREAD_N);
  t.thread_row = lane / (WSUB_N / THREAD_N);
  return t;
}

// acc += As^T * Bs over one BLOCK_K slice.
__device__ __forceinline__ void ts_multiply_stage(const float* __restrict__ As, const float* __restrict__ Bs,
                                                  const TsThread& th, float (&acc)[ACC_M][ACC_N]) {
#pragma unroll
  for (int kk = 0; kk < BLOCK_K; ++kk) {
    float a_frag[ACC_M], b_frag[ACC_N];
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
      for (int i = 0; i < THREAD_M; ++i) a_frag[wm * THREAD_M + i] = As[kk * LDS_A + th.row(wm, i)];
#pragma unroll
    for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
      for (int j = 0; j < THREAD_N; ++j) b_frag[wn * THREAD_N + j] = Bs[kk * LDS_B + th.col(wn, j)];
#pragma unroll
    for (int i = 0; i < ACC_M; ++i)
#pragma unroll
      for (int j = 0; j < ACC_N; ++j) acc[i][j] += a_frag[i] * b_frag[j];
  }
}

// Calls f(m, n, value) for every element of this thread's register tile inside C.
template <typename F>
__device__ __forceinline__ void ts_for_each_result(const float (&acc)[ACC_M][ACC_N], const TsTile& tile,
                                                   const TsThread& th, int M, int N, F f) {
#pragma unroll
  for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
    for (int i = 0; i < THREAD_M; ++i) {
      const int gm = tile.block_m + th.row(wm, i);
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int j = 0; j < THREAD_N; ++j) {
          const int gn = tile.block_n + th.col(wn, j);
          if (gm < M && gn < N) f(gm, gn, acc[wm * THREAD_M + i][wn * THREAD_N + j]);
        }
    }
}

// The walk ts_finish_tile takes (a functor: NVRTC compiles no generic device lambdas).
struct TsRegisterTileWalk {
  const float (&acc)[ACC_M][ACC_N];
  const TsTile& tile;
  const TsThread& th;
  int M, N;
  template <typename F>
  __device__ __forceinline__ void operator()(F f) const {
    ts_for_each_result(acc, tile, th, M, N, f);
  }
};

// Writes this thread's register tile (see ts_finish_tile).
__device__ __forceinline__ void ts_finish(const float (&acc)[ACC_M][ACC_N], const TsTile& tile, const TsThread& th,
                                          int tid, float* __restrict__ C, const float* __restrict__ bias,
                                          float* __restrict__ workspace, int M, int N, int ldc, float alpha,
                                          float beta, float slope) {
  ts_finish_tile(TsRegisterTileWalk{acc, tile, th, M, N}, tile, tid, C, bias, workspace, M, N, ldc, alpha, beta,
                 slope);
}
