// The wgmma pieces of the fp16/bf16 templates that read both operands from shared memory
// (gemm_wgmma_half, gemm_tma_half): the two operand layouts and their descriptors, the
// multiply of one 64-deep slice, where each accumulator sits in C, and the store of a
// warpgroup's accumulators. The instruction itself is ts_wgmma.h's.
//
// The including template defines BLOCK_N, BLOCK_K (64), WG_M_TILES (64-row tiles per
// warpgroup), ACC_N (BLOCK_N / 2), A_K_MAJOR, B_K_MAJOR, SPLIT_K and THREADS, and includes
// ts_tile.h first. Shared-memory layout of an operand tile (what the descriptors describe):
//  - K-major: row r (an M or N index) holds its 64 K values in 128 bytes; 8-row groups 1024
//    bytes apart.
//  - MN-major: 64-wide M/N blocks of 8 KiB, each 64 rows (one per K index) of 128 bytes.
// In both, 16-byte chunk c of 128-byte row r lies at chunk c ^ (r % 8) (the 128-byte swizzle,
// anchored to 1024-byte boundaries), and a 64-row tile of A is 8 KiB at 8192 * tile.
#pragma once
#if !defined(TS_VENDOR_AMD)
#include "ts_wgmma.h"

// wgmma's transpose bits: 0 reads the operand K-major, 1 MN-major (16-bit types only).
#define TRANS_A (A_K_MAJOR ? 0 : 1)
#define TRANS_B (B_K_MAJOR ? 0 : 1)

// K-major: the leading offset is unused with this swizzle (a 16-deep step stays inside the
// 128-byte rows); 8-row groups 1024 bytes apart. MN-major: 64-wide blocks 8192 bytes apart,
// 8-row groups of K 1024 bytes apart.
#define DESC_LBO(k_major) ((k_major) ? 16u : 8192u)
#define DESC_SBO 1024u
// Descriptor advance (16-byte units) for one 16-deep step.
#define K16_STEP(k_major) ((k_major) ? 2 : 128)

// Issues the wgmma of one slice for this warpgroup: 4 16-deep steps, each over its
// WG_M_TILES tiles (B's descriptor shared by the tiles of a step). desc_a / desc_b address
// the slice's stage (A at this warpgroup's first tile).
__device__ __forceinline__ void multiply_stage(float (&acc)[WG_M_TILES][ACC_N], unsigned long long desc_a,
                                               unsigned long long desc_b) {
#pragma unroll
  for (int s = 0; s < BLOCK_K / 16; ++s)
#pragma unroll
    for (int t = 0; t < WG_M_TILES; ++t)
      wgmma_k16<BLOCK_N, TRANS_A, TRANS_B>(acc[t],
                                           desc_a + (unsigned long long)(t * (8192 >> 4) + s * K16_STEP(A_K_MAJOR)),
                                           desc_b + (unsigned long long)(s * K16_STEP(B_K_MAJOR)), 1);
}

// Row and column, inside the block tile, of accumulator i of tile t of a thread (warpgroup
// wg, warp w of it, lane): row 16 w + lane / 4 (+8), column 8 j + 2 (lane % 4) (+1).
__device__ __forceinline__ int acc_row(int wg, int w, int lane, int t, int i) {
  return (wg * WG_M_TILES + t) * 64 + 16 * w + lane / 4 + 8 * ((i % 4) / 2);
}
__device__ __forceinline__ int acc_col(int lane, int i) { return 8 * (i / 4) + 2 * (lane % 4) + i % 2; }

// Hands ts_finish_tile every accumulator inside C with its row and column.
struct AccWalk {
  const float (&acc)[WG_M_TILES][ACC_N];
  const TsTile& tile;
  int wg, w, lane, M, N;
  template <typename F>
  __device__ __forceinline__ void operator()(F f) const {
#pragma unroll
    for (int t = 0; t < WG_M_TILES; ++t)
#pragma unroll
      for (int i = 0; i < ACC_N; ++i) {
        const int gm = tile.block_m + acc_row(wg, w, lane, t, i), gn = tile.block_n + acc_col(lane, i);
        if (gm < M && gn < N) f(gm, gn, acc[t][i]);
      }
  }
};

// Writes a warpgroup's accumulators (warp w of warpgroup wg) to C: two neighbouring columns
// per store (ts_store_c_pair) where C is row-major with an even leading dimension, else
// through ts_finish_tile (which also runs the split-K reduction; tid counts the threads that
// write C).
__device__ __forceinline__ void wgmma_store_tile(const float (&acc)[WG_M_TILES][ACC_N], const TsTile& tile, int wg,
                                                 int w, int lane, int tid, ts_c_t* __restrict__ C,
                                                 const ts_c_t* __restrict__ bias, float* __restrict__ workspace,
                                                 int M, int N, int ldc, float alpha, float beta, float slope) {
#if !TS_STORES_PARTIALS && TS_C_ROW_MAJOR
  const bool pairs = (ldc % 2 == 0) && (reinterpret_cast<unsigned long long>(C) % (2 * sizeof(ts_c_t)) == 0);
  if (pairs) {
#pragma unroll
    for (int t = 0; t < WG_M_TILES; ++t)
#pragma unroll
      for (int i = 0; i < ACC_N; i += 2) {
        const int gm = tile.block_m + acc_row(wg, w, lane, t, i);
        const int gn = tile.block_n + acc_col(lane, i);  // even
        if (gm >= M) continue;
        if (gn + 1 < N) {
          ts_store_c_pair(C, gm, gn, ldc, acc[t][i], acc[t][i + 1], alpha, beta, bias, slope);
        } else if (gn < N) {
          ts_store_c(C, gm, gn, ldc, acc[t][i], alpha, beta, bias, slope);
        }
      }
    return;
  }
#endif
  ts_finish_tile(AccWalk{acc, tile, wg, w, lane, M, N}, tile, tid, C, bias, workspace, M, N, ldc, alpha, beta, slope);
}
#endif  // !TS_VENDOR_AMD
