// gemm_hmma: fp16/bf16 GEMM on the matrix units with fp32 accumulation; C in fp32, fp16 or
// bf16, every layout, the shared epilogues.
//
// NVIDIA (sm_80+): mma.sync.m16n8k16 (bf16 or f16 inputs, fp32 accumulators), fragments read
// from shared memory with ldmatrix.x4 (.trans where the operand's orientation needs it), fed
// by a cp.async pipeline of STAGES slices (CUTLASS's multistage schedule: one barrier per
// slice, the copies of slice t+STAGES-1 issued while slice t is multiplied, the fragments of
// the next 16-deep step loaded into a second register set while the current one is
// multiplied, across slice boundaries too). Shared memory keeps each operand in its global
// orientation (A row-major: As[m][k], column-major: As[k][m]; B likewise) so every global ->
// shared copy is 16 bytes along the contiguous dimension, and 16-byte chunks of each row
// are XOR-swizzled so that the 8 rows an ldmatrix reads (and the rows a warp's copies write)
// fall in 8 different bank groups with no padding. Each lane's ldmatrix addresses are
// computed once; inside the loop they are a register plus a constant.
// AMD CDNA (gfx908, gfx90a, gfx94x): the same blocks on v_mfma_f32_16x16x16{f16,bf16_1k}
// (two v_mfma_f32_16x16x8bf16 on gfx908), operands read from the same swizzled LDS with
// plain loads (8-byte ones where the four k values of a lane are contiguous).
//
// Grouped tile order and deterministic split-K come from ts_tile.h; alpha, beta, the epilogue
// and the one rounding to C's type are ts_store_c's (a row-major C without split-K stores
// two neighbouring columns at once, with the same arithmetic).
#ifndef BLOCK_K
#define BLOCK_K 32
#endif
#ifndef WARP_N
#define WARP_N 64
#endif
#ifndef VEC
#define VEC 8
#endif
#ifndef GROUP_M
#define GROUP_M 4
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef TS_AB_DTYPE
#define TS_AB_DTYPE 2
#endif
// BLOCK_M, BLOCK_N and WARP_M take their defaults (128, 128, 64) from ts_warp_grid.h, SPLIT_K
// (1) from ts_tile.h.
#include "ts_gemm_common.h"
#include "ts_warp_grid.h"

#define TILES_M (WARP_M / 16)
#define TILES_N (WARP_N / TS_MMA_N)  // v_mfma_f32_16x16x16 (AMD), mma.sync.m16n8k16 (NVIDIA)
#define KSTEPS (BLOCK_K / 16)
// Shared rows: A row-major keeps BLOCK_M rows of BLOCK_K elements, column-major BLOCK_K rows
// of BLOCK_M; B row-major BLOCK_K rows of BLOCK_N, column-major BLOCK_N rows of BLOCK_K.
#define A_ROW_LEN (TS_A_ROW_MAJOR ? BLOCK_K : BLOCK_M)
#define B_ROW_LEN (TS_B_ROW_MAJOR ? BLOCK_N : BLOCK_K)
#define A_STAGE (BLOCK_M * BLOCK_K)
#define B_STAGE (BLOCK_N * BLOCK_K)
#define STAGE_ELEMS (A_STAGE + B_STAGE)
#define PIECE 8  // elements per copy (16 bytes of shared memory)
#define COPIES_A (BLOCK_M * BLOCK_K / PIECE / THREADS)
#define COPIES_B (BLOCK_N * BLOCK_K / PIECE / THREADS)

#include "ts_async_copy.h"
#include "ts_ldmatrix.h"
#include "ts_mfma.h"
#include "ts_mma_sm80.h"
#include "ts_tile.h"

static_assert(COPIES_A * PIECE * THREADS == A_STAGE && COPIES_B * PIECE * THREADS == B_STAGE,
              "every thread copies the same number of 8-element pieces of each operand");
static_assert(VEC == 8 || VEC == 2 || VEC == 1, "copy widths: 16, 4 or 2 bytes");
static_assert(BLOCK_K % 16 == 0 && WARP_M % 16 == 0 && WARP_N % 16 == 0, "16-deep, 16-row and 16-column MMA tiles");

// Starts the copies of the K slice at k0 into one stage, 16-byte pieces along each operand's
// contiguous dimension. A thread's copies sit at the same places of every stage; only k0 moves.
__device__ __forceinline__ void load_stage(ts_ab_t* __restrict__ As, ts_ab_t* __restrict__ Bs,
                                           const ts_ab_t* __restrict__ A, const ts_ab_t* __restrict__ B, int M, int N,
                                           int k_end, int lda, int ldb, int block_m, int block_n, int k0, int tid) {
  ts_copy_tile<TS_A_ROW_MAJOR, BLOCK_M, BLOCK_K, PIECE, THREADS, TsCopyPiece<VEC>>(
      [&](int m, int k) { return As + (TS_A_ROW_MAJOR ? swz<A_ROW_LEN>(m, k) : swz<A_ROW_LEN>(k, m)); }, A, lda,
      block_m, M, k0, k_end, tid);
  ts_copy_tile<TS_B_ROW_MAJOR, BLOCK_K, BLOCK_N, PIECE, THREADS, TsCopyPiece<VEC>>(
      [&](int k, int n) { return Bs + (TS_B_ROW_MAJOR ? swz<B_ROW_LEN>(k, n) : swz<B_ROW_LEN>(n, k)); }, B, ldb, k0,
      k_end, block_n, N, tid);
}

#if defined(TS_VENDOR_AMD)
typedef TsMfma16x16Acc Acc;

// acc += As^T Bs over one slice. Lane l supplies A[l % 16][k0 + 4 (l / 16) .. +3] and
// B[k0 + 4 (l / 16) .. +3][l % 16] and holds D rows 4 (l / 16) .. +3 of column l % 16.
__device__ __forceinline__ void multiply_stage(const ts_ab_t* __restrict__ As, const ts_ab_t* __restrict__ Bs,
                                               int warp_m0, int warp_n0, int lane,
                                               float (&acc)[TILES_M][TILES_N][4]) {
  const int r = lane % 16, q = (lane / 16) * 4;
#pragma unroll
  for (int k0 = 0; k0 < BLOCK_K; k0 += 16) {
    ts_mfma_in a[TILES_M], b[TILES_N];
#pragma unroll
    for (int mt = 0; mt < TILES_M; ++mt) {
#if TS_A_ROW_MAJOR
      a[mt] = mfma_k4_contig(As + swz<A_ROW_LEN>(warp_m0 + mt * 16 + r, k0 + q));
#else
#pragma unroll
      for (int j = 0; j < 4; ++j)
        a[mt][j] = mfma_elem(As[swz<A_ROW_LEN>(k0 + q + j, warp_m0 + mt * 16 + r)]);
#endif
    }
#pragma unroll
    for (int nt = 0; nt < TILES_N; ++nt) {
#if TS_B_ROW_MAJOR
#pragma unroll
      for (int j = 0; j < 4; ++j)
        b[nt][j] = mfma_elem(Bs[swz<B_ROW_LEN>(k0 + q + j, warp_n0 + nt * 16 + r)]);
#else
      b[nt] = mfma_k4_contig(Bs + swz<B_ROW_LEN>(warp_n0 + nt * 16 + r, k0 + q));
#endif
    }
#pragma unroll
    for (int mt = 0; mt < TILES_M; ++mt)
#pragma unroll
      for (int nt = 0; nt < TILES_N; ++nt) mfma_16x16x16(acc[mt][nt], a[mt], b[nt]);
  }
}

#else  // NVIDIA tensor cores

typedef TsMma16x8Acc Acc;

// Byte offsets, inside a stage, of the rows this lane hands to ldmatrix. Lane l addresses row
// l % 8 of matrix j = l / 8.
// A fragment of rows m0..m0+15, k0..k0+15: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7),
// (rows 0-7, k 8-15), (rows 8-15, k 8-15). Row-major A is stored [m][k]: a plain ldmatrix gives
// lane (g, c) the pair (m g, k 2c..2c+1); column-major A is stored [k][m] and the transposing
// ldmatrix gives the same pair. Row-major: one offset per 16-deep step, the 16-row tiles a
// constant apart; column-major: one per 16-row tile, the steps a constant apart.
// B fragments of two 8-column tiles n0..n0+15, k0..k0+15: matrices (k 0-7, n 0-7),
// (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15): b[0], b[1] for columns n0.., b[2], b[3]
// for n0+8... Column-major B is stored [n][k] (plain ldmatrix), row-major [k][n] (transposing).
#if TS_A_ROW_MAJOR
#define A_OFFS KSTEPS
#define A_OFF(o, mt, kk) ((o)[kk] + (mt) * (16 * A_ROW_LEN * 2))
#else
#define A_OFFS TILES_M
#define A_OFF(o, mt, kk) ((o)[mt] + (kk) * (16 * A_ROW_LEN * 2))
#endif
#if TS_B_ROW_MAJOR
#define B_OFFS (TILES_N / 2)
#define B_OFF(o, np, kk) ((o)[np] + (kk) * (16 * B_ROW_LEN * 2))
#else
#define B_OFFS KSTEPS
#define B_OFF(o, np, kk) ((o)[kk] + (np) * (16 * B_ROW_LEN * 2))
#endif

__device__ __forceinline__ void frag_offsets(unsigned (&ao)[A_OFFS], unsigned (&bo)[B_OFFS], int warp_m0, int warp_n0,
                                             int lane) {
  const int j = lane / 8, r = lane % 8;
  const int lo = (j & 1) * 8, hi = (j >> 1) * 8;
#if TS_A_ROW_MAJOR
#pragma unroll
  for (int kk = 0; kk < KSTEPS; ++kk) ao[kk] = swz<A_ROW_LEN>(warp_m0 + lo + r, kk * 16 + hi) * 2;
#else
#pragma unroll
  for (int mt = 0; mt < TILES_M; ++mt) ao[mt] = swz<A_ROW_LEN>(hi + r, warp_m0 + mt * 16 + lo) * 2;
#endif
#if TS_B_ROW_MAJOR
#pragma unroll
  for (int np = 0; np < TILES_N / 2; ++np) bo[np] = swz<B_ROW_LEN>(lo + r, warp_n0 + np * 16 + hi) * 2;
#else
#pragma unroll
  for (int kk = 0; kk < KSTEPS; ++kk) bo[kk] = swz<B_ROW_LEN>(warp_n0 + hi + r, kk * 16 + lo) * 2;
#endif
}

// The fragments of 16-deep step kk of the stage whose A tile starts at shared address sa.
__device__ __forceinline__ void load_frags(unsigned (&a)[TILES_M][4], unsigned (&b)[TILES_N / 2][4], unsigned sa,
                                           const unsigned (&ao)[A_OFFS], const unsigned (&bo)[B_OFFS], int kk) {
  const unsigned sb = sa + A_STAGE * 2;
#pragma unroll
  for (int mt = 0; mt < TILES_M; ++mt) {
#if TS_A_ROW_MAJOR
    ldsm_x4(a[mt], sa + A_OFF(ao, mt, kk));
#else
    ldsm_x4_trans(a[mt], sa + A_OFF(ao, mt, kk));
#endif
  }
#pragma unroll
  for (int np = 0; np < TILES_N / 2; ++np) {
#if TS_B_ROW_MAJOR
    ldsm_x4_trans(b[np], sb + B_OFF(bo, np, kk));
#else
    ldsm_x4(b[np], sb + B_OFF(bo, np, kk));
#endif
  }
}

__device__ __forceinline__ void mma_frags(float (&acc)[TILES_M][TILES_N][4], const unsigned (&a)[TILES_M][4],
                                          const unsigned (&b)[TILES_N / 2][4]) {
#pragma unroll
  for (int mt = 0; mt < TILES_M; ++mt)
#pragma unroll
    for (int n = 0; n < TILES_N; ++n) {
      const int nt = (mt & 1) ? TILES_N - 1 - n : n;  // serpentine: reuse B registers across mt
      mma16816(acc[mt][nt], a[mt], b[nt / 2][(nt % 2) * 2], b[nt / 2][(nt % 2) * 2 + 1]);
    }
}

#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
gemm_hmma(TS_GEMM_PARAMS(ts_ab_t, ts_c_t)) {
  extern __shared__ __attribute__((aligned(128))) unsigned char smem_raw[];
  ts_ab_t* smem = reinterpret_cast<ts_ab_t*>(smem_raw);
  const int tid = threadIdx.x;
  const int warp = tid / TS_WARP_SIZE, lane = tid % TS_WARP_SIZE;
  const int warp_m0 = (warp / WARPS_N) * WARP_M, warp_n0 = (warp % WARPS_N) * WARP_N;
  const TsTile tile = ts_tile(M, N, K);

  float acc[TILES_M][TILES_N][4];
  ts_zero_tiles(acc);

  const int steps = ts_k_steps(tile);
  auto load = [&](int slot, int step) {
    ts_ab_t* As = smem + slot * STAGE_ELEMS;
    load_stage(As, As + A_STAGE, A, B, M, N, tile.k_end, lda, ldb, tile.block_m, tile.block_n,
               tile.k_begin + step * BLOCK_K, tid);
  };
#if defined(TS_VENDOR_AMD)
  ts_pipeline<STAGES>(steps, load, [&](int slot, int) {
    const ts_ab_t* As = smem + slot * STAGE_ELEMS;
    multiply_stage(As, As + A_STAGE, warp_m0, warp_n0, lane, acc);
  });
#else
  // Slice t sits in slot t % STAGES. At the start of slice t the copies of slice t+STAGES-1
  // go into slot (t-1) % STAGES, which every warp finished reading before the barrier that
  // ended slice t-1. That barrier, before the last 16-deep step of a slice, needs slice t+1
  // landed: STAGES-1 prologue groups plus t+1 loop groups committed, at most STAGES-2 pending.
  unsigned ao[A_OFFS], bo[B_OFFS];
  frag_offsets(ao, bo, warp_m0, warp_n0, lane);
  const unsigned sbase = smem_addr(smem_raw);
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < steps) load(s, s);
    ts_commit();
  }
  ts_wait<STAGES - 2>();
  __syncthreads();
  unsigned fa[2][TILES_M][4], fb[2][TILES_N / 2][4];
  int read_slot = 0, write_slot = STAGES - 1;
  unsigned sread = sbase;
  load_frags(fa[0], fb[0], sread, ao, bo, 0);
  for (int t = 0; t < steps; ++t) {
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) {
      if (kk == 0) {  // slice t+STAGES-1 into the slot that slice t-1 left
        const int next = t + STAGES - 1;
        if (next < steps) load(write_slot, next);
        ts_commit();
        write_slot = write_slot == STAGES - 1 ? 0 : write_slot + 1;
      }
      if (kk == KSTEPS - 1) {  // slice t+1 in, everyone done with slice t-1's slot
        ts_wait<STAGES - 2>();
        __syncthreads();
        read_slot = read_slot == STAGES - 1 ? 0 : read_slot + 1;
        sread = sbase + read_slot * (STAGE_ELEMS * 2);
      }
      // The next step's fragments (after the last step: slice t+1's first, unused at the end)
      // while this step's are multiplied.
      load_frags(fa[(kk + 1) % 2], fb[(kk + 1) % 2], sread, ao, bo, (kk + 1) % KSTEPS);
      mma_frags(acc, fa[kk % 2], fb[kk % 2]);
#if KSTEPS == 1  // one step per slice: the buffers alternate by slice; bring the next one to set 0
#pragma unroll
      for (int mt = 0; mt < TILES_M; ++mt)
#pragma unroll
        for (int i = 0; i < 4; ++i) fa[0][mt][i] = fa[1][mt][i];
#pragma unroll
      for (int np = 0; np < TILES_N / 2; ++np)
#pragma unroll
        for (int i = 0; i < 4; ++i) fb[0][np][i] = fb[1][np][i];
#endif
    }
  }
  ts_wait<0>();
#endif

#if defined(TS_VENDOR_NVIDIA) && SPLIT_K == 1 && TS_C_ROW_MAJOR
  // Accumulators 2h and 2h + 1 are neighbours in a row: one 2-element store where C's rows
  // allow it (ts_store_c_pair, the arithmetic of ts_store_c).
  const bool pairs = (ldc % 2 == 0) && (reinterpret_cast<unsigned long long>(C) % (2 * sizeof(ts_c_t)) == 0);
  if (pairs) {
    (void)workspace;
#pragma unroll
    for (int mt = 0; mt < TILES_M; ++mt)
#pragma unroll
      for (int nt = 0; nt < TILES_N; ++nt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int gm = tile.block_m + warp_m0 + Acc::row(lane, mt, 2 * h);
          const int gn = tile.block_n + warp_n0 + Acc::col(lane, nt, 0);  // even
          if (gm >= M) continue;
          if (gn + 1 < N) {
            ts_store_c_pair(C, gm, gn, ldc, acc[mt][nt][2 * h], acc[mt][nt][2 * h + 1], alpha, beta, bias,
                            epilogue_slope);
          } else if (gn < N) {
            ts_store_c(C, gm, gn, ldc, acc[mt][nt][2 * h], alpha, beta, bias, epilogue_slope);
          }
        }
    return;
  }
#endif
  ts_finish_tile(TsFragWalk<TILES_M, TILES_N, Acc>{acc, tile, lane, warp_m0, warp_n0, M, N}, tile, tid, C, bias,
                 workspace, M, N, ldc, alpha, beta, epilogue_slope);
}
