// gemm_async: the warp-tiled fp32 GEMM of gemm_warp, fed by asynchronous copies.
//
// Global -> shared copies go straight into shared memory (cp.async on NVIDIA sm_80+),
// so no registers are spent staging them and STAGES slices can be in flight at once:
// while slice t is multiplied, slices t+1 .. t+STAGES-1 are loading. An operand stored
// contiguously along M (A column-major) or N (B row-major) is copied VEC elements at a
// time; one stored contiguously along K is transposed element by element on the way in,
// since shared memory holds As[k][m] and Bs[k][n]. Elsewhere (AMD, older NVIDIA) the
// same schedule runs with ordinary loads and stores.
// The warp tile (BLOCK_*, WARP_*, THREAD_*, WNITER, SMEM_PAD) takes its defaults from
// ts_warp_tile.h, GROUP_M and SPLIT_K from ts_tile.h.
#ifndef VEC
#define VEC 4
#endif
#ifndef STAGES
#define STAGES 3
#endif
#include "ts_warp_tile.h"
#include "ts_async_copy.h"

// Elements per copy for each operand: VEC along M/N, 1 when transposing along K.
#define VEC_A (TS_A_ROW_MAJOR ? 1 : VEC)
#define VEC_B (TS_B_ROW_MAJOR ? VEC : 1)
#define COPIES_A (BLOCK_M * BLOCK_K / VEC_A / THREADS)
#define COPIES_B (BLOCK_N * BLOCK_K / VEC_B / THREADS)

// Starts the copies of the K slice at k0 into one stage of shared memory.
__device__ __forceinline__ void load_stage(float* __restrict__ As, float* __restrict__ Bs,
                                           const float* __restrict__ A, const float* __restrict__ B, int M, int N,
                                           int k_end, int lda, int ldb, int block_m, int block_n, int k0, int tid) {
#pragma unroll
  for (int i = 0; i < COPIES_A; ++i) {
    const int idx = tid + i * THREADS;
#if TS_A_ROW_MAJOR
    const int mm = idx / BLOCK_K, kk = idx % BLOCK_K;  // neighbours read neighbours along K
    const int gm = block_m + mm, gk = k0 + kk;
    const bool ok = gm < M && gk < k_end;
    ts_copy<1>(As + kk * LDS_A + mm, ok ? A + (long long)gm * lda + gk : A, ok ? 1 : 0);
#else
    const int kk = idx / (BLOCK_M / VEC_A), mm = (idx % (BLOCK_M / VEC_A)) * VEC_A;
    const int gm = block_m + mm, gk = k0 + kk;
    const bool ok = gm < M && gk < k_end;
    ts_copy<VEC_A>(As + kk * LDS_A + mm, ok ? A + (long long)gk * lda + gm : A, ok ? VEC_A : 0);
#endif
  }
#pragma unroll
  for (int i = 0; i < COPIES_B; ++i) {
    const int idx = tid + i * THREADS;
#if TS_B_ROW_MAJOR
    const int kk = idx / (BLOCK_N / VEC_B), nn = (idx % (BLOCK_N / VEC_B)) * VEC_B;
    const int gk = k0 + kk, gn = block_n + nn;
    const bool ok = gn < N && gk < k_end;
    ts_copy<VEC_B>(Bs + kk * LDS_B + nn, ok ? B + (long long)gk * ldb + gn : B, ok ? VEC_B : 0);
#else
    const int nn = idx / BLOCK_K, kk = idx % BLOCK_K;
    const int gk = k0 + kk, gn = block_n + nn;
    const bool ok = gn < N && gk < k_end;
    ts_copy<1>(Bs + kk * LDS_B + nn, ok ? B + (long long)gn * ldb + gk : B, ok ? 1 : 0);
#endif
  }
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
gemm_async(TS_GEMM_PARAMS(float, float)) {
  extern __shared__ __attribute__((aligned(16))) float smem[];
  const int tid = threadIdx.x;
  const TsTile tile = ts_tile(M, N, K);
  const TsThread th = ts_thread(tid);

  float acc[ACC_M][ACC_N];
#pragma unroll
  for (int i = 0; i < ACC_M; ++i)
#pragma unroll
    for (int j = 0; j < ACC_N; ++j) acc[i][j] = 0.0f;

  const int steps = ts_k_steps(tile);
  ts_pipeline<STAGES>(
      steps,
      [&](int slot, int step) {
        float* As = smem + slot * STAGE_FLOATS;
        load_stage(As, As + BLOCK_K * LDS_A, A, B, M, N, tile.k_end, lda, ldb, tile.block_m, tile.block_n,
                   tile.k_begin + step * BLOCK_K, tid);
      },
      [&](int slot, int) {
        const float* As = smem + slot * STAGE_FLOATS;
        ts_multiply_stage(As, As + BLOCK_K * LDS_A, th, acc);
      });
  ts_finish(acc, tile, th, tid, C, bias, workspace, M, N, ldc, alpha, beta, epilogue_slope);
}
