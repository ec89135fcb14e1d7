// Block-level pieces shared by the GEMM templates: which output tile and which share of K
// a block computes (grouped tile order, split-K), and how a block's results reach C
// (direct store, or a deterministic split-K reduction), walking the accumulators of its MMA
// fragments. The including template defines BLOCK_M, BLOCK_N, BLOCK_K and THREADS first, and
// GROUP_M and SPLIT_K where its defaults are not the ones below; a template whose C is
// written by only some of its threads (warp-specialised) also defines TS_TILE_THREADS (how
// many) and TS_TILE_SYNC() (a barrier over just those).
#pragma once
#include "ts_gemm_common.h"
#include "ts_split_k.h"

// The parameters of the tile order and the split, with the defaults a template that defines
// neither gets (its JSON declares them like its own): GROUP_M tile rows per group, SPLIT_K
// shares of K (1: no split).
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef SPLIT_K
#define SPLIT_K 1
#endif

#ifndef TS_TILE_THREADS
#define TS_TILE_THREADS THREADS
#endif
#ifndef TS_TILE_SYNC
#define TS_TILE_SYNC() __syncthreads()
#endif
// A template whose blocks sum their tile's splits before they store (gemm_tma_half) defines
// TS_SPLITS_GATHERED 1: the block that reaches ts_finish_tile holds the whole sum and stores it.
#ifndef TS_SPLITS_GATHERED
#define TS_SPLITS_GATHERED 0
#endif
#define TS_STORES_PARTIALS (SPLIT_K > 1 && !TS_SPLITS_GATHERED)

struct TsTile {
  int tile_m, tile_n, tiles_n;
  int block_m, block_n;  // first row and column of C
  int k_begin, k_end;    // this block's share of K
  int split;             // which share (0..SPLIT_K-1)
};

// The part-th of `parts` shares of K, in whole BLOCK_K steps (the last share may be shorter,
// or empty: then end <= begin).
__device__ __forceinline__ void ts_k_share(int K, int part, int parts, int& begin, int& end) {
  const int per = ((K + parts - 1) / parts + BLOCK_K - 1) / BLOCK_K * BLOCK_K;
  begin = part * per;
  end = min(K, begin + per);
}

// The BLOCK_K-deep steps of a tile's share of K (none for an empty share).
__device__ __forceinline__ int ts_k_steps(const TsTile& t) {
  return t.k_end > t.k_begin ? (t.k_end - t.k_begin + BLOCK_K - 1) / BLOCK_K : 0;
}

// Tile order: groups of GROUP_M tile rows, column by column inside a group, so that
// blocks running together share B (and A) in L2. blockIdx.y is the split-K index; each
// split gets whole BLOCK_K steps.
// ts_tile_at is the same for the pid-th tile and a given split (persistent kernels). With
// cluster_m > 1 the order is over cluster_m tiles stacked along M (a thread-block cluster's
// tiles, which share B), and block cluster_rank of the cluster takes the cluster_rank-th; with
// cluster_n > 1 likewise over tiles side by side along N (which share A).
__device__ __forceinline__ TsTile ts_tile_at(int pid, int split, int M, int N, int K, int cluster_rank = 0,
                                             int cluster_m = 1, int cluster_n = 1) {
  TsTile t;
  const int tiles_m = (M + BLOCK_M * cluster_m - 1) / (BLOCK_M * cluster_m);
  t.tiles_n = (N + BLOCK_N - 1) / BLOCK_N;
  const int groups_n = (N + BLOCK_N * cluster_n - 1) / (BLOCK_N * cluster_n);
  const int group_size = GROUP_M * groups_n;
  const int first_m = (pid / group_size) * GROUP_M;
  const int rows_in_group = min(tiles_m - first_m, GROUP_M);
  t.tile_m = (first_m + (pid % group_size) % rows_in_group) * cluster_m + (cluster_n > 1 ? 0 : cluster_rank);
  t.tile_n = (pid % group_size) / rows_in_group * cluster_n + (cluster_n > 1 ? cluster_rank : 0);
  t.block_m = t.tile_m * BLOCK_M;
  t.block_n = t.tile_n * BLOCK_N;
  t.split = split;
  ts_k_share(K, split, SPLIT_K, t.k_begin, t.k_end);
  return t;
}
__device__ __forceinline__ TsTile ts_tile(int M, int N, int K) { return ts_tile_at(blockIdx.x, blockIdx.y, M, N, K); }

// Writes the block's results, handed over by walk(f), which calls f(m, n, value) for
// every element this thread holds inside C: straight to C, or (SPLIT_K > 1) as a partial
// tile to the workspace, after which the last block of the tile to finish sums the
// partials in split order 0..SPLIT_K-1 (deterministic) and stores C. The workspace holds
// SPLIT_K*M*N partial floats, then one counter per tile, zeroed before the first launch;
// the reducing block resets its counter for the next launch.
template <typename Walk>
__device__ __forceinline__ void ts_finish_tile(Walk walk, const TsTile& tile, int tid, ts_c_t* __restrict__ C,
                                               const ts_c_t* __restrict__ bias, float* __restrict__ workspace,
                                               int M, int N, int ldc, float alpha, float beta, float slope) {
#if !TS_STORES_PARTIALS
  (void)workspace;
  (void)tid;
  (void)tile;
  walk([&](int m, int n, float v) { ts_store_c(C, m, n, ldc, v, alpha, beta, bias, slope); });
#else
  float* partial = workspace + (long long)tile.split * M * N;
  int* counters = reinterpret_cast<int*>(workspace + (long long)SPLIT_K * M * N);
  walk([&](int m, int n, float v) { partial[(long long)m * N + n] = v; });
  __threadfence();
  TS_TILE_SYNC();
  __shared__ int arrived;
  const int counter = tile.tile_m * tile.tiles_n + tile.tile_n;
  if (tid == 0) arrived = atomicAdd(&counters[counter], 1);
  TS_TILE_SYNC();
  if (arrived != SPLIT_K - 1) return;
  __threadfence();
  // Four neighbouring columns per element group, each split's partial read straight from
  // L2 (written by other blocks: no cached copy may be used). This block alone sums the
  // whole tile while most of the GPU may be idle (a small problem is one wave), so the sum
  // is latency-bound: each thread first issues the loads of several groups, 16 float4 in
  // flight, and only then adds them up.
  constexpr int kStride = TS_TILE_THREADS * 4;
  constexpr int kBatch = SPLIT_K >= 16 ? 1 : 16 / SPLIT_K;
  if (N % 4 == 0) {  // every group is 16-byte aligned and lies wholly inside C or outside
    for (int e0 = tid * 4; e0 < BLOCK_M * BLOCK_N; e0 += kStride * kBatch) {
      float4 part[kBatch][SPLIT_K];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int e = e0 + b * kStride;
        const int gm = tile.block_m + e / BLOCK_N, gn = tile.block_n + e % BLOCK_N;
        if (e < BLOCK_M * BLOCK_N && gm < M && gn < N) {
#pragma unroll
          for (int s = 0; s < SPLIT_K; ++s)
            part[b][s] = ts_load_l2_4(workspace + (long long)s * M * N + (long long)gm * N + gn);
        }
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int e = e0 + b * kStride;
        const int gm = tile.block_m + e / BLOCK_N, gn = tile.block_n + e % BLOCK_N;
        if (e >= BLOCK_M * BLOCK_N || gm >= M || gn >= N) continue;
        float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int s = 0; s < SPLIT_K; ++s) {  // split order 0..SPLIT_K-1: deterministic
          sum.x += part[b][s].x;
          sum.y += part[b][s].y;
          sum.z += part[b][s].z;
          sum.w += part[b][s].w;
        }
        ts_store_c(C, gm, gn, ldc, sum.x, alpha, beta, bias, slope);
        ts_store_c(C, gm, gn + 1, ldc, sum.y, alpha, beta, bias, slope);
        ts_store_c(C, gm, gn + 2, ldc, sum.z, alpha, beta, bias, slope);
        ts_store_c(C, gm, gn + 3, ldc, sum.w, alpha, beta, bias, slope);
      }
    }
  } else {
    for (int e = tid * 4; e < BLOCK_M * BLOCK_N; e += kStride) {
      const int gm = tile.block_m + e / BLOCK_N, gn = tile.block_n + e % BLOCK_N;
      if (gm >= M || gn >= N) continue;
      const long long at = (long long)gm * N + gn;
      for (int j = 0; j < 4 && gn + j < N; ++j) {
        float sum = 0.0f;
#pragma unroll
        for (int s = 0; s < SPLIT_K; ++s) sum += ts_load_l2(workspace + (long long)s * M * N + at + j);
        ts_store_c(C, gm, gn + j, ldc, sum, alpha, beta, bias, slope);
      }
    }
  }
  if (tid == 0) counters[counter] = 0;  // ready for the next launch
#endif
}

// Hands ts_finish_tile every accumulator of a warp's MMA tiles inside C: TM x TN tiles of 4
// accumulators a thread, placed as Acc says (TsMma16x8Acc of ts_mma_sm80.h, TsMfma16x16Acc of
// ts_mfma.h), the warp's tiles starting at row m0, column n0 of the block tile.
template <int TM, int TN, typename Acc>
struct TsFragWalk {
  const float (&acc)[TM][TN][4];
  const TsTile& tile;
  int lane, m0, n0, M, N;
  template <typename F>
  __device__ __forceinline__ void operator()(F f) const {
#pragma unroll
    for (int mt = 0; mt < TM; ++mt)
#pragma unroll
      for (int nt = 0; nt < TN; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int gm = tile.block_m + m0 + Acc::row(lane, mt, i);
          const int gn = tile.block_n + n0 + Acc::col(lane, nt, i);
          if (gm < M && gn < N) f(gm, gn, acc[mt][nt][i]);
        }
  }
};
