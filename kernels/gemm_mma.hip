// gemm_mma: fp32 GEMM on the matrix units, with fp32 accuracy.
//
// NVIDIA (sm_80+): tensor cores multiply TF32 inputs (10-bit mantissa), too coarse for an
// fp32 result on their own. Each operand element x is split into big = tf32(x) and
// small = tf32(x - big), which together carry 22 of fp32's 24 significand bits, and
//   a*b ~= a_small*b_big + a_big*b_small + a_big*b_big
// is accumulated in fp32 (a_small*b_small lies below fp32 rounding of the product), each
// chain of CHAIN 8-deep steps added to the accumulators with an fp32 add (see multiply_stage). That is
// three mma.sync per product, still well above the FFMA rate. The CPU reference checks
// every candidate with the same tolerance as the FFMA templates.
// AMD CDNA (gfx908, gfx90a, gfx94x): the matrix cores have a true fp32 MFMA
// (v_mfma_f32_16x16x4f32), one per product; no splitting.
//
// Each warp (wavefront) computes WARP_M x WARP_N of the block tile as 16 x MMA_N tiles.
// Shared memory keeps each operand in its global orientation (A row-major: As[m][k],
// column-major: As[k][m]; B likewise), so every global -> shared copy is VEC floats wide
// (cp.async on NVIDIA, STAGES slices in flight), and rows are padded so that the
// fragment reads of a warp hit 32 different banks.
#ifndef BLOCK_K
#define BLOCK_K 16
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef CHAIN
#define CHAIN 1
#endif
// BLOCK_M, BLOCK_N, WARP_M and WARP_N take their defaults (128, 128, 64, 32) from
// ts_warp_grid.h, GROUP_M and SPLIT_K (8, 1) from ts_tile.h.
#include "ts_gemm_common.h"
#include "ts_warp_grid.h"

// The k of one instruction: v_mfma_f32_16x16x4f32 (AMD), mma.sync.m16n8k8 tf32 (NVIDIA); its n
// is the instruction header's TS_MMA_N.
#if defined(TS_VENDOR_AMD)
#define MMA_K 4
#else
#define MMA_K 8
#endif
#define TILES_M (WARP_M / 16)
#define TILES_N (WARP_N / TS_MMA_N)
// Rows along K get 4 floats of padding, rows along M or N get 8: with 32 banks, a warp's
// fragment read (8 rows x 4 columns, or 4 rows x 8 columns) then touches 32 banks.
#define LDS_A (TS_A_ROW_MAJOR ? BLOCK_K + 4 : BLOCK_M + 8)
#define LDS_B (TS_B_ROW_MAJOR ? BLOCK_N + 8 : BLOCK_K + 4)
#define A_STAGE_FLOATS (TS_A_ROW_MAJOR ? BLOCK_M * LDS_A : BLOCK_K * LDS_A)
#define B_STAGE_FLOATS (TS_B_ROW_MAJOR ? BLOCK_K * LDS_B : BLOCK_N * LDS_B)
#define STAGE_FLOATS (A_STAGE_FLOATS + B_STAGE_FLOATS)

#include "ts_async_copy.h"
#include "ts_mfma.h"
#include "ts_mma_sm80.h"
#include "ts_tile.h"

__device__ __forceinline__ float a_at(const float* __restrict__ As, int m, int k) {
  return TS_A_ROW_MAJOR ? As[m * LDS_A + k] : As[k * LDS_A + m];
}
__device__ __forceinline__ float b_at(const float* __restrict__ Bs, int k, int n) {
  return TS_B_ROW_MAJOR ? Bs[k * LDS_B + n] : Bs[n * LDS_B + k];
}

// Starts the copies of the K slice at k0 into one stage, VEC floats a copy along each operand's
// contiguous dimension.
__device__ __forceinline__ void load_stage(float* __restrict__ As, float* __restrict__ Bs,
                                           const float* __restrict__ A, const float* __restrict__ B, int M, int N,
                                           int k_end, int lda, int ldb, int block_m, int block_n, int k0, int tid) {
  ts_copy_tile<TS_A_ROW_MAJOR, BLOCK_M, BLOCK_K, VEC, THREADS, TsCopyElems<VEC>>(
      [&](int m, int k) { return TS_A_ROW_MAJOR ? As + m * LDS_A + k : As + k * LDS_A + m; }, A, lda, block_m, M, k0,
      k_end, tid);
  ts_copy_tile<TS_B_ROW_MAJOR, BLOCK_K, BLOCK_N, VEC, THREADS, TsCopyElems<VEC>>(
      [&](int k, int n) { return TS_B_ROW_MAJOR ? Bs + k * LDS_B + n : Bs + n * LDS_B + k; }, B, ldb, k0, k_end, block_n,
      N, tid);
}

#if defined(TS_VENDOR_AMD)
typedef TsMfma16x16Acc Acc;

// acc += As^T Bs over one slice. Lane l supplies A[l % 16][k0 + l / 16] and
// B[k0 + l / 16][l % 16] and holds D rows 4 * (l / 16) .. +3 of column l % 16.
__device__ __forceinline__ void multiply_stage(const float* __restrict__ As, const float* __restrict__ Bs,
                                               int warp_m0, int warp_n0, int lane,
                                               float (&acc)[TILES_M][TILES_N][4]) {
  const int r = lane % 16, q = lane / 16;
#pragma unroll
  for (int k0 = 0; k0 < BLOCK_K; k0 += MMA_K) {
    float a[TILES_M], b[TILES_N];
#pragma unroll
    for (int mt = 0; mt < TILES_M; ++mt) a[mt] = a_at(As, warp_m0 + mt * 16 + r, k0 + q);
#pragma unroll
    for (int nt = 0; nt < TILES_N; ++nt) b[nt] = b_at(Bs, k0 + q, warp_n0 + nt * 16 + r);
#pragma unroll
    for (int mt = 0; mt < TILES_M; ++mt)
#pragma unroll
      for (int nt = 0; nt < TILES_N; ++nt) mfma_16x16x4_f32(acc[mt][nt], a[mt], b[nt]);
  }
}

#else  // NVIDIA tensor cores, 3xTF32
typedef TsMma16x8Acc Acc;

// x = big + small + (what lies below fp32 rounding of a product), both TF32.
// The tensor cores read a TF32 operand from the top 19 bits of its register and ignore
// the low 13, so neither part needs a conversion instruction: big is x rounded to nearest
// at TF32 precision by adding half of the dropped range (the carry reaches the kept bits
// exactly when rounding up), and small, the exact remainder x - big, is truncated by the
// hardware (error below 2^-21 |x|). Three integer/fp32 operations instead of two cvt.
// Should a GPU not ignore those bits, every candidate fails validation rather than
// passing with a wrong result.
__device__ __forceinline__ void split_tf32(float x, unsigned& big, unsigned& small) {
  big = __float_as_uint(x) + 0x1000u;
  small = __float_as_uint(x - __uint_as_float(big & 0xffffe000u));
}

// acc += As^T Bs over one slice. Lane (g = lane / 4, t = lane % 4) supplies
// A[g, t], A[g+8, t], A[g, t+4], A[g+8, t+4] and B[t, g], B[t+4, g] of each 16x8x8 step.
// The tensor cores round their fp32 accumulation toward zero, so accumulating a whole K
// range in them adds a bias that grows with the chain's length (measured: relative error
// 2.9e-5 at K = 4096, twenty times the FFMA kernels'). A chain of CHAIN 8-deep steps
// therefore starts from zero and is added to the accumulators with an ordinary
// (round-to-nearest) fp32 add: the bias stays that of a CHAIN*8-deep sum whatever K is.
// A longer chain means fewer fp32 adds (which compete with the mma.sync for issue slots)
// but keeps the A fragments of the whole chain in registers: the column tiles are the
// outer loop, so each B fragment is split once and each chain needs one small partial.
__device__ __forceinline__ void multiply_stage(const float* __restrict__ As, const float* __restrict__ Bs,
                                               int warp_m0, int warp_n0, int lane,
                                               float (&acc)[TILES_M][TILES_N][4]) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int k0 = 0; k0 < BLOCK_K; k0 += CHAIN * MMA_K) {
    unsigned a_big[CHAIN][TILES_M][4], a_small[CHAIN][TILES_M][4];
#pragma unroll
    for (int c = 0; c < CHAIN; ++c)
#pragma unroll
      for (int mt = 0; mt < TILES_M; ++mt) {
        const int m = warp_m0 + mt * 16 + g, k = k0 + c * MMA_K + t;
        split_tf32(a_at(As, m, k), a_big[c][mt][0], a_small[c][mt][0]);
        split_tf32(a_at(As, m + 8, k), a_big[c][mt][1], a_small[c][mt][1]);
        split_tf32(a_at(As, m, k + 4), a_big[c][mt][2], a_small[c][mt][2]);
        split_tf32(a_at(As, m + 8, k + 4), a_big[c][mt][3], a_small[c][mt][3]);
      }
#pragma unroll
    for (int nt = 0; nt < TILES_N; ++nt) {
      unsigned b_big[CHAIN][2], b_small[CHAIN][2];
      const int n = warp_n0 + nt * 8 + g;
#pragma unroll
      for (int c = 0; c < CHAIN; ++c) {
        split_tf32(b_at(Bs, k0 + c * MMA_K + t, n), b_big[c][0], b_small[c][0]);
        split_tf32(b_at(Bs, k0 + c * MMA_K + t + 4, n), b_big[c][1], b_small[c][1]);
      }
#pragma unroll
      for (int mt = 0; mt < TILES_M; ++mt) {
        float d[4];
        mma_tf32_first(d, a_small[0][mt], b_big[0]);
        mma_tf32(d, a_big[0][mt], b_small[0]);
        mma_tf32(d, a_big[0][mt], b_big[0]);
#pragma unroll
        for (int c = 1; c < CHAIN; ++c) {
          mma_tf32(d, a_small[c][mt], b_big[c]);
          mma_tf32(d, a_big[c][mt], b_small[c]);
          mma_tf32(d, a_big[c][mt], b_big[c]);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[mt][nt][i] += d[i];
      }
    }
  }
}

#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
gemm_mma(TS_GEMM_PARAMS(float, float)) {
  extern __shared__ __attribute__((aligned(16))) float smem[];
  const int tid = threadIdx.x;
  const int warp = tid / TS_WARP_SIZE, lane = tid % TS_WARP_SIZE;
  const int warp_m0 = (warp / WARPS_N) * WARP_M, warp_n0 = (warp % WARPS_N) * WARP_N;
  const TsTile tile = ts_tile(M, N, K);

  float acc[TILES_M][TILES_N][4];
  ts_zero_tiles(acc);

  const int steps = ts_k_steps(tile);
  ts_pipeline<STAGES>(
      steps,
      [&](int slot, int step) {
        float* As = smem + slot * STAGE_FLOATS;
        load_stage(As, As + A_STAGE_FLOATS, A, B, M, N, tile.k_end, lda, ldb, tile.block_m, tile.block_n,
                   tile.k_begin + step * BLOCK_K, tid);
      },
      [&](int slot, int) {
        const float* As = smem + slot * STAGE_FLOATS;
        multiply_stage(As, As + A_STAGE_FLOATS, warp_m0, warp_n0, lane, acc);
      });

  ts_finish_tile(TsFragWalk<TILES_M, TILES_N, Acc>{acc, tile, lane, warp_m0, warp_n0, M, N}, tile, tid, C, bias,
                 workspace, M, N, ldc, alpha, beta, epilogue_slope);
}
