// Hopper 3xTF32 pieces shared by the fp32 wgmma templates (gemm_wgmma, gemm_tma_tf32), which
// both compute C^T = B^T A^T: the wgmma "M" side (64 per warpgroup) is our N, its operand
// (B^T) comes from registers, and the wgmma "N" side is our BLOCK_M rows of A, read by the
// tensor cores from shared memory in the 128-byte swizzled K-major layout (one 32-float K
// slice per 128-byte row, 16-byte chunk c of row r at chunk c ^ (r % 8), 8-row groups 1024
// bytes apart). The including template defines BLOCK_M (64 or 128), ACC (BLOCK_M / 2),
// BLOCK_K (32) and CHAIN, and includes ts_tile.h first.
//
// fp32 accuracy: each element x is split into big = x rounded to TF32 and masked to it, and
// small = x - big (exact), and a*b ~= a_small*b_big + a_big*b_small + a_big*b_big. Both bigs
// are masked explicitly, so the result does not depend on how the tensor cores treat the
// low 13 bits of an operand; smalls keep them (truncated or not, below 2^-21 |x|).
#pragma once

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

// Shared-memory matrix descriptor of a K-major, 128-byte swizzled operand: start address,
// leading byte offset (unused with this swizzle: 1), stride byte offset between 8-row
// groups (1024), swizzle mode 1 (128 B) in the top bits. Addresses are in 16-byte units.
__device__ __forceinline__ unsigned long long tf32_descriptor(const void* p) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));
  return (unsigned long long)((addr & 0x3ffff) >> 4) | (1ull << 16) | ((unsigned long long)(1024 >> 4) << 32) |
         (1ull << 62);
}

#define TS_F8(d, i)                                                                                     \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])

// d = (accumulate ? d : 0) + a * B, a 64x8 TF32 fragment from registers, B 8 x BLOCK_M
// from shared memory; asynchronous until wgmma_wait.
__device__ __forceinline__ void wgmma_tf32(float (&d)[ACC], const unsigned (&a)[4], unsigned long long desc,
                                           int accumulate) {
#if BLOCK_M == 64
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,"
      "%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1;\n}\n"
      : TS_F8(d, 0), TS_F8(d, 8), TS_F8(d, 16), TS_F8(d, 24)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate));
#elif BLOCK_M == 128
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,"
      "%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,"
      "%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1;\n}\n"
      : TS_F8(d, 0), TS_F8(d, 8), TS_F8(d, 16), TS_F8(d, 24), TS_F8(d, 32), TS_F8(d, 40), TS_F8(d, 48),
        TS_F8(d, 56)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate));
#else
#error "3xTF32 wgmma: BLOCK_M must be 64 or 128"
#endif
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all(float (&d)[ACC]) {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  // The accumulators pass through an (empty) asm after the wait, so that no read of them
  // moves above it.
#pragma unroll
  for (int i = 0; i < ACC; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

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
      wgmma_tf32(d, b_small[c], big_desc + step, c > 0);
      wgmma_tf32(d, b_big[c], small_desc + step, 1);
      wgmma_tf32(d, b_big[c], big_desc + step, 1);
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
