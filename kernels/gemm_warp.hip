// gemm_warp: the fast fp32 GEMM family.
//
// Block tile BLOCK_M x BLOCK_N, stepping BLOCK_K along K. Warps split the block tile
// into WARP_M x WARP_N warp tiles; inside a warp tile each thread owns WMITER x WNITER
// sub-tiles of THREAD_M x THREAD_N, so the threads of a warp read consecutive shared-
// memory vectors (no bank conflicts) and reuse every value they load. Global loads are
// VEC-wide (16 bytes at VEC 4) and double-buffered through registers: the next K slice
// is in flight while the current one is multiplied. SMEM_PAD pads shared rows against
// bank conflicts on transposed stores. GROUP_M orders the tiles in groups of GROUP_M
// rows so that neighbouring blocks share A and B in L2. SPLIT_K > 1 divides K among
// blocks for problems whose M x N alone cannot fill the GPU; the partial tiles are summed
// by the last block to finish a tile, in a fixed order (deterministic results).
//
// Any M, N, K: out-of-range loads read zero and out-of-range stores are skipped. The
// space's constraints guarantee that leading dimensions are multiples of VEC, so a
// vector is either wholly inside the matrix or wholly outside.
// The warp tile (BLOCK_*, WARP_*, THREAD_*, WNITER, SMEM_PAD) takes its defaults from
// ts_warp_tile.h, GROUP_M and SPLIT_K from ts_tile.h.
#ifndef VEC
#define VEC 4
#endif
#include "ts_warp_tile.h"

#define LOADS_A (BLOCK_M * BLOCK_K / VEC / THREADS)
#define LOADS_B (BLOCK_N * BLOCK_K / VEC / THREADS)

#if VEC == 4
typedef float4 vec_t;
#elif VEC == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

__device__ __forceinline__ float vget(const vec_t& v, int i) {
#if VEC == 1
  (void)i;
  return v;
#else
  return reinterpret_cast<const float*>(&v)[i];
#endif
}

__device__ __forceinline__ vec_t vzero() {
#if VEC == 4
  return make_float4(0.f, 0.f, 0.f, 0.f);
#elif VEC == 2
  return make_float2(0.f, 0.f);
#else
  return 0.f;
#endif
}

// Where load i of this thread's share of one operand's slice sits in the tile: VEC consecutive
// elements along the dimension the operand is stored contiguously in, consecutive threads on
// consecutive vectors. An operand is A (MN = M) or B (MN = N); kKContig: stored along K (A
// row-major, B column-major: element (mn, k) at X[mn * ld + k]), else along MN (X[k * ld + mn]).
template <bool kKContig, int kMN>
__device__ __forceinline__ void operand_at(int tid, int i, int& mn, int& k) {
  const int idx = tid + i * THREADS;
  if (kKContig) {
    mn = idx / (BLOCK_K / VEC);
    k = (idx % (BLOCK_K / VEC)) * VEC;
  } else {
    k = idx / (kMN / VEC);
    mn = (idx % (kMN / VEC)) * VEC;
  }
}

// Global -> registers: this thread's share of one operand's slice starting at k0 (zeros outside
// the matrix).
template <bool kKContig, int kMN, int kLoads>
__device__ __forceinline__ void load_operand(const float* __restrict__ X, int ld, int limit, int k_end, int block_mn,
                                             int k0, int tid, vec_t (&r)[kLoads]) {
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    int mn, kk;
    operand_at<kKContig, kMN>(tid, i, mn, kk);
    const int gmn = block_mn + mn, gk = k0 + kk;
    vec_t v = vzero();
    if (gmn < limit && gk < k_end)
      v = *reinterpret_cast<const vec_t*>(kKContig ? X + (long long)gmn * ld + gk : X + (long long)gk * ld + gmn);
    r[i] = v;
  }
}

// Registers -> shared, as Xs[k][mn] (As[k][m], Bs[k][n]) so that the inner product reads
// contiguous vectors along M and N: an operand stored along K is transposed element by element.
template <bool kKContig, int kMN, int kLds, int kLoads>
__device__ __forceinline__ void store_operand(float* __restrict__ Xs, int tid, const vec_t (&r)[kLoads]) {
#pragma unroll
  for (int i = 0; i < kLoads; ++i) {
    int mn, kk;
    operand_at<kKContig, kMN>(tid, i, mn, kk);
    if (kKContig) {
#pragma unroll
      for (int v = 0; v < VEC; ++v) Xs[(kk + v) * kLds + mn] = vget(r[i], v);
    } else {
      *reinterpret_cast<vec_t*>(Xs + kk * kLds + mn) = r[i];
    }
  }
}

// Global -> registers: this thread's share of the A and B slices starting at k0.
__device__ __forceinline__ void load_tiles(const float* __restrict__ A, const float* __restrict__ B, int M, int N,
                                           int k_end, int lda, int ldb, int block_m, int block_n, int k0, int tid,
                                           vec_t (&ra)[LOADS_A], vec_t (&rb)[LOADS_B]) {
  load_operand<TS_A_ROW_MAJOR, BLOCK_M>(A, lda, M, k_end, block_m, k0, tid, ra);
  load_operand<!TS_B_ROW_MAJOR, BLOCK_N>(B, ldb, N, k_end, block_n, k0, tid, rb);
}

// Registers -> shared: A stored K-major (As[k][m]) and B as Bs[k][n].
__device__ __forceinline__ void store_tiles(float* __restrict__ As, float* __restrict__ Bs, int tid,
                                            const vec_t (&ra)[LOADS_A], const vec_t (&rb)[LOADS_B]) {
  store_operand<TS_A_ROW_MAJOR, BLOCK_M, LDS_A>(As, tid, ra);
  store_operand<!TS_B_ROW_MAJOR, BLOCK_N, LDS_B>(Bs, tid, rb);
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
gemm_warp(TS_GEMM_PARAMS(float, float)) {
  extern __shared__ __attribute__((aligned(16))) float smem[];
  const int tid = threadIdx.x;
  const TsTile tile = ts_tile(M, N, K);
  const TsThread th = ts_thread(tid);

  float acc[ACC_M][ACC_N];
#pragma unroll
  for (int i = 0; i < ACC_M; ++i)
#pragma unroll
    for (int j = 0; j < ACC_N; ++j) acc[i][j] = 0.0f;

  vec_t ra[LOADS_A], rb[LOADS_B];
  int stage = 0;
  if (tile.k_begin < tile.k_end) {
    load_tiles(A, B, M, N, tile.k_end, lda, ldb, tile.block_m, tile.block_n, tile.k_begin, tid, ra, rb);
    store_tiles(smem, smem + BLOCK_K * LDS_A, tid, ra, rb);
  }
  __syncthreads();

  for (int k0 = tile.k_begin; k0 < tile.k_end; k0 += BLOCK_K) {
    const bool more = k0 + BLOCK_K < tile.k_end;
    // Issue the next slice's loads before the math so their latency is hidden.
    if (more) load_tiles(A, B, M, N, tile.k_end, lda, ldb, tile.block_m, tile.block_n, k0 + BLOCK_K, tid, ra, rb);
    const float* As = smem + stage * STAGE_FLOATS;
    ts_multiply_stage(As, As + BLOCK_K * LDS_A, th, acc);
    if (more) {
      stage ^= 1;
      float* next = smem + stage * STAGE_FLOATS;
      store_tiles(next, next + BLOCK_K * LDS_A, tid, ra, rb);
    }
    __syncthreads();
  }
  ts_finish(acc, tile, th, tid, C, bias, workspace, M, N, ldc, alpha, beta, epilogue_slope);
}
