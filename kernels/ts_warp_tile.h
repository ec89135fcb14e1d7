// Warp tiling shared by gemm_warp and gemm_async: tile order and split-K range, the
// per-thread register tile, the multiply of one shared-memory stage, and the finish
// (direct store, or a deterministic split-K reduction). The including template defines
// BLOCK_M, BLOCK_N, BLOCK_K, WARP_M, WARP_N, THREAD_M, THREAD_N, WNITER, SMEM_PAD,
// GROUP_M and SPLIT_K first. Shared memory holds A as As[k][m] and B as Bs[k][n], so a
// thread reads contiguous vectors along M and N.
#pragma once
#include "ts_gemm_common.h"

#define WARPS_M (BLOCK_M / WARP_M)
#define WARPS_N (BLOCK_N / WARP_N)
#define THREADS (WARPS_M * WARPS_N * TS_WARP_SIZE)
#define WMITER ((WARP_M * WARP_N) / (TS_WARP_SIZE * THREAD_M * THREAD_N * WNITER))
#define WSUB_M (WARP_M / WMITER)
#define WSUB_N (WARP_N / WNITER)
#define LDS_A (BLOCK_M + SMEM_PAD)
#define LDS_B (BLOCK_N + SMEM_PAD)
#define STAGE_FLOATS (BLOCK_K * (LDS_A + LDS_B))
#define ACC_M (WMITER * THREAD_M)
#define ACC_N (WNITER * THREAD_N)

struct TsTile {
  int tile_m, tile_n, tiles_n;
  int block_m, block_n;  // first row and column of C
  int k_begin, k_end;    // this block's share of K
};

// Tile order: groups of GROUP_M tile rows, column by column inside a group, so that
// blocks running together share B (and A) in L2. blockIdx.y is the split-K index; each
// split gets whole BLOCK_K steps.
__device__ __forceinline__ TsTile ts_tile(int M, int N, int K) {
  TsTile t;
  const int tiles_m = (M + BLOCK_M - 1) / BLOCK_M;
  t.tiles_n = (N + BLOCK_N - 1) / BLOCK_N;
  const int pid = blockIdx.x;
  const int group_size = GROUP_M * t.tiles_n;
  const int first_m = (pid / group_size) * GROUP_M;
  const int rows_in_group = min(tiles_m - first_m, GROUP_M);
  t.tile_m = first_m + (pid % group_size) % rows_in_group;
  t.tile_n = (pid % group_size) / rows_in_group;
  t.block_m = t.tile_m * BLOCK_M;
  t.block_n = t.tile_n * BLOCK_N;
  const int k_per_split = ((K + SPLIT_K - 1) / SPLIT_K + BLOCK_K - 1) / BLOCK_K * BLOCK_K;
  t.k_begin = blockIdx.y * k_per_split;
  t.k_end = min(K, t.k_begin + k_per_split);
  return t;
}

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

// Writes the block's results: straight to C, or (SPLIT_K > 1) as a partial tile to the
// workspace, after which the last block of the tile to finish sums the partials in
// split order 0..SPLIT_K-1 (deterministic) and stores C. The workspace holds
// SPLIT_K*M*N partial floats, then one counter per tile, zeroed before the first
// launch; the reducing block resets its counter for the next launch.
__device__ __forceinline__ void ts_finish(const float (&acc)[ACC_M][ACC_N], const TsTile& tile, const TsThread& th,
                                          int tid, float* __restrict__ C, const float* __restrict__ bias,
                                          float* __restrict__ workspace, int M, int N, int ldc, float alpha,
                                          float beta, float slope) {
#if SPLIT_K == 1
  (void)workspace;
  (void)tid;
  ts_for_each_result(acc, tile, th, M, N,
                     [&](int m, int n, float v) { ts_store_c(C, m, n, ldc, v, alpha, beta, bias, slope); });
#else
  float* partial = workspace + (long long)blockIdx.y * M * N;
  int* counters = reinterpret_cast<int*>(workspace + (long long)SPLIT_K * M * N);
  ts_for_each_result(acc, tile, th, M, N, [&](int m, int n, float v) { partial[(long long)m * N + n] = v; });
  __threadfence();
  __syncthreads();
  __shared__ int arrived;
  const int counter = tile.tile_m * tile.tiles_n + tile.tile_n;
  if (tid == 0) arrived = atomicAdd(&counters[counter], 1);
  __syncthreads();
  if (arrived != SPLIT_K - 1) return;
  __threadfence();
  // volatile: read what the other blocks wrote, not a cached copy.
  const volatile float* finished = workspace;
  for (int e = tid; e < BLOCK_M * BLOCK_N; e += THREADS) {
    const int gm = tile.block_m + e / BLOCK_N, gn = tile.block_n + e % BLOCK_N;
    if (gm >= M || gn >= N) continue;
    float sum = 0.0f;
    for (int s = 0; s < SPLIT_K; ++s) sum += finished[(long long)s * M * N + (long long)gm * N + gn];
    ts_store_c(C, gm, gn, ldc, sum, alpha, beta, bias, slope);
  }
  if (tid == 0) counters[counter] = 0;  // ready for the next launch
#endif
}
