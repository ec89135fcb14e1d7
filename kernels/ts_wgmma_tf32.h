// Hopper 3xTF32 pieces shared by the fp32 wgmma templates (gemm_wgmma, gemm_tma_tf32; the
// instruction and its protocol are ts_wgmma.h's), which both compute C^T = B^T A^T: the
// wgmma "M" side (64 per warpgroup) is our N, its operand (B^T) comes from registers, and the
// wgmma "N" side is our BLOCK_M rows of A, read by the tensor cores from shared memory in the
// 128-byte swizzled K-major layout (one 32-float K slice per 128-byte row, 16-byte chunk c of
// row r at chunk c ^ (r % 8), 8-row groups 1024 bytes apart). The including template defines BLOCK_M (64 or 128), ACC (BLOCK_M / 2),
// BLOCK_K (32) and CHAIN, and includes ts_tile.h first.
//
// fp32 accuracy: each element x is split into big = x rounded to TF32 and masked to it, and
// small = x - big (exact), and a*b ~= a_small*b_big + a_big*b_small + a_big*b_big. Both bigs
// are masked explicitly, so the result does not depend on how the tensor cores treat the
// low 13 bits of an operand; smalls keep them (truncated or not, below 2^-21 |x|).
#pragma once
#include "ts_wgmma.h"

// big = x rounded to nearest at TF32 precision and masked to it; small = x - big, exact.
__device__ __forceinline__ void split_tf32(float x, unsigned& big, unsigned& small) {
  big = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
  small = __float_as_uint(x - __uint_as_float(big));
}

// Splits the 4 floats of x and stores their big parts at big and their small parts at small.
__device__ __forceinline__ void store_split_tf32(uint4 x, unsigned char* big, unsigned char* small) {
  uint4 b, s;
  split_tf32(__uint_as_float(x.x), b.x, s.x);
  split_tf32(__uint_as_float(x.y), b.y, s.y);
  split_tf32(__uint_as_float(x.z), b.z, s.z);
  split_tf32(__uint_as_float(x.w), b.w, s.w);
  *reinterpret_cast<uint4*>(big) = b;
  *reinterpret_cast<uint4*>(small) = s;
}

// Shared-memory matrix descriptor of a K-major, 128-byte swizzled operand: the leading byte
// offset is unused with this swizzle (16: one unit), 8-row groups 1024 bytes apart.
__device__ __forceinline__ unsigned long long tf32_descriptor(const void* p) { return smem_descriptor(p, 16u, 1024u); }

// acc += (B^T A^T) over one BLOCK_K-deep slice for this warpgroup's 64 columns n0.. of B^T,
// b_at(k, n) reading B[k][n] of the slice from shared memory in the template's layout. Warp
// w of the warpgroup, lane (g = lane / 4, t = lane % 4), supplies B^T[n0 + 16w + g (+8)][k +
// t (+4)] of each 8-deep step; the tensor cores read A's big and small parts from shared
// memory (big_desc, small_desc), 32 bytes further along each 128-byte row per step. The
// tensor cores round their accumulation toward zero, so each chain of CHAIN steps starts
// from zero in d and is added to acc with an fp32 add: the bias stays that of a CHAIN*8-deep
// sum whatever K is. Returns with every wgmma done (the slice may be refilled).
template <typename BAt>
__device__ __forceinline__ void multiply_slice_3xtf32(BAt b_at, unsigned long long big_desc,
                                                      unsigned long long small_desc, int n0, int lane,
                                                      float (&acc)[ACC]) {
  const int n = n0 + lane / 4, t = lane % 4;
#pragma unroll
  for (int k0 = 0; k0 < BLOCK_K; k0 += 8 * CHAIN) {
    unsigned b_big[CHAIN][4], b_small[CHAIN][4];
#pragma unroll
    for (int c = 0; c < CHAIN; ++c) {
      const int k = k0 + 8 * c + t;
      split_tf32(b_at(k, n), b_big[c][0], b_small[c][0]);
      split_tf32(b_at(k, n + 8), b_big[c][1], b_small[c][1]);
      split_tf32(b_at(k + 4, n), b_big[c][2], b_small[c][2]);
      split_tf32(b_at(k + 4, n + 8), b_big[c][3], b_small[c][3]);
    }
    float d[ACC];
    wgmma_fence();
#pragma unroll
    for (int c = 0; c < CHAIN; ++c) {
      // Descriptor start addresses are in 16-byte units: 8 floats further is +2.
      const unsigned long long step = (unsigned long long)((k0 + 8 * c) * 4 / 16);
      wgmma_k8_tf32<BLOCK_M>(d, b_small[c], big_desc + step, c > 0);
      wgmma_k8_tf32<BLOCK_M>(d, b_big[c], small_desc + step, 1);
      wgmma_k8_tf32<BLOCK_M>(d, b_big[c], big_desc + step, 1);
    }
    wgmma_commit();
    wgmma_wait_all(d);
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] += d[i];
  }
}

// Hands ts_finish_tile every accumulator inside C with its row and column. Element
// 4j + q of a thread of warp w (lane g, t) is B^T row 16w + g + 8(q / 2), A row
// 8j + 2t + q % 2, i.e. C[block_m + 8j + 2t + q % 2][block_n + n0 + 16w + g + 8(q / 2)].
struct AccWalk {
  const float (&acc)[ACC];
  const TsTile& tile;
  int lane, n0, M, N;
  template <typename F>
  __device__ __forceinline__ void operator()(F f) const {
#pragma unroll
    for (int j = 0; j < ACC; ++j) {
      const int gm = tile.block_m + 8 * (j / 4) + 2 * (lane % 4) + j % 2;
      const int gn = tile.block_n + n0 + lane / 4 + 8 * ((j % 4) / 2);
      if (gm < M && gn < N) f(gm, gn, acc[j]);
    }
  }
};
