// gemm_decode: fp16/bf16 GEMM for decode shapes (M <= 128, large N x K; LLM inference), fp32
// accumulation, C in fp32, fp16 or bf16, every layout, the shared epilogues. The goal is to
// stream B (K x N, the big operand) from memory once at close to full bandwidth.
//
// The block computes C^T = B^T A^T: B^T feeds the 16-row side of the matrix instruction
// (mma.sync.m16n8k16 on NVIDIA, rows = columns of C) and the small M is the narrow side
// (n8 tiles on NVIDIA: M = 1..8 costs one tile). A block owns BLOCK_N columns x BLOCK_M rows of
// C and one of SPLIT_K shares of K; splitting K gives the many blocks that keep enough loads
// in flight (several waves on the multiprocessors) and shortens each block's A slice.
// B and A go global -> shared through a cp.async pipeline of STAGES slices (VEC elements per
// copy along the operand's contiguous dimension: 16 bytes where the leading dimensions allow),
// kept in their global orientation in XOR-swizzled shared memory and read with ldmatrix
// (.trans where the orientation needs it), so NN (B row-major) and NT (B column-major, a
// PyTorch Linear weight) both stream B with 16-byte copies.
//
// Split-K reduction, deterministic (partials summed in split order 0..SPLIT_K-1):
//   REDUCE 0: every block writes its partial accumulators to the float workspace in
//             fragment order (16-byte stores, coalesced), the last block of the tile to arrive
//             adds them up in its own registers' layout and stores C; it resets its counter.
//   REDUCE 1: (NVIDIA sm_90) the SPLIT_K blocks of a tile form a thread-block cluster; each
//             puts its partial into its own shared memory, and after a cluster barrier each
//             block sums 1/SPLIT_K of the tile over the cluster's shared memory (DSMEM) and
//             stores it: no workspace traffic and no single-block tail.
// AMD CDNA (gfx908, gfx90a, gfx94x): the same blocks on v_mfma_f32_16x16x16{f16,bf16_1k}
// (two v_mfma_f32_16x16x8bf16 on gfx908; ts_mfma.h), 16-wide on both sides, so BLOCK_M is a
// multiple of 16; operands read from the same swizzled LDS with plain loads; REDUCE 0 only.
#ifndef BLOCK_N
#define BLOCK_N 64
#endif
#ifndef BLOCK_M
#define BLOCK_M 16
#endif
#ifndef BLOCK_K
#define BLOCK_K 128
#endif
#ifndef WARPS_N
#define WARPS_N 4
#endif
#ifndef WARPS_M
#define WARPS_M 1
#endif
#ifndef SPLIT_K
#define SPLIT_K 2
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef VEC
#define VEC 8
#endif
#ifndef REDUCE
#define REDUCE 0
#endif
#ifndef TS_AB_DTYPE
#define TS_AB_DTYPE 2
#endif
#include "ts_gemm_common.h"
#include "ts_async_copy.h"
#include "ts_ldmatrix.h"
#include "ts_mfma.h"
#include "ts_mma_sm80.h"
#include "ts_split_k.h"

// Rows of C per tile: the instruction's n side (v_mfma_f32_16x16x16: 16; mma.sync.m16n8k16: 8).
#define MMA_M TS_MMA_N
#define WARP_N (BLOCK_N / WARPS_N)
#define WARP_M (BLOCK_M / WARPS_M)
#define THREADS (WARPS_N * WARPS_M * TS_WARP_SIZE)
#define TILES_N (WARP_N / 16)
#define TILES_M (WARP_M / MMA_M)
#define FRAGS (TILES_N * TILES_M)  // 4 accumulators each
// Shared rows: B row-major keeps BLOCK_K rows of BLOCK_N elements, column-major BLOCK_N rows
// of BLOCK_K; A row-major BLOCK_M rows of BLOCK_K, column-major BLOCK_K rows of BLOCK_M.
#define B_ROW_LEN (TS_B_ROW_MAJOR ? BLOCK_N : BLOCK_K)
#define A_ROW_LEN (TS_A_ROW_MAJOR ? BLOCK_K : BLOCK_M)
#define B_STAGE (BLOCK_N * BLOCK_K)
#define A_STAGE (BLOCK_M * BLOCK_K)
#define STAGE_ELEMS (B_STAGE + A_STAGE)

#if (WARP_N % 16) != 0 || (WARP_M % MMA_M) != 0 || WARP_N * WARPS_N != BLOCK_N || WARP_M * WARPS_M != BLOCK_M
#error "gemm_decode: BLOCK_N / WARPS_N must be a multiple of 16 and BLOCK_M / WARPS_M of the MMA width"
#endif
#if (BLOCK_K % 16) != 0 || (BLOCK_K % VEC) != 0 || ((BLOCK_M % VEC) != 0 && !TS_A_ROW_MAJOR)
#error "gemm_decode: BLOCK_K must be a multiple of 16 and of VEC (and BLOCK_M of VEC when A is column-major)"
#endif
#if REDUCE == 1 && (!defined(TS_VENDOR_NVIDIA) || SPLIT_K > 8)
#error "gemm_decode: REDUCE 1 (cluster reduction) needs NVIDIA sm_90 and SPLIT_K <= 8"
#endif

// Element (k, n) of B's stage and (m, k) of A's.
__device__ __forceinline__ const ts_ab_t* b_ptr(const ts_ab_t* Bs, int k, int n) {
  return Bs + (TS_B_ROW_MAJOR ? swz<B_ROW_LEN>(k, n) : swz<B_ROW_LEN>(n, k));
}
__device__ __forceinline__ const ts_ab_t* a_ptr(const ts_ab_t* As, int m, int k) {
  return As + (TS_A_ROW_MAJOR ? swz<A_ROW_LEN>(m, k) : swz<A_ROW_LEN>(k, m));
}

// Starts the copies of the K slice at k0 into one stage: B's BLOCK_K x BLOCK_N and A's
// BLOCK_M x BLOCK_K, each copy VEC elements along the operand's contiguous dimension,
// consecutive threads on consecutive vectors; what lies past an edge is zero-filled.
__device__ __forceinline__ void load_stage(ts_ab_t* __restrict__ Bs, ts_ab_t* __restrict__ As,
                                           const ts_ab_t* __restrict__ A, const ts_ab_t* __restrict__ B, int M, int N,
                                           int k_end, int lda, int ldb, int block_m, int block_n, int k0, int tid) {
  ts_copy_tile<TS_B_ROW_MAJOR, BLOCK_K, BLOCK_N, VEC, THREADS, TsCopyElems<VEC>>(
      [&](int k, int n) { return Bs + (TS_B_ROW_MAJOR ? swz<B_ROW_LEN>(k, n) : swz<B_ROW_LEN>(n, k)); }, B, ldb, k0,
      k_end, block_n, N, tid);
  ts_copy_tile<TS_A_ROW_MAJOR, BLOCK_M, BLOCK_K, VEC, THREADS, TsCopyElems<VEC>>(
      [&](int m, int k) { return As + (TS_A_ROW_MAJOR ? swz<A_ROW_LEN>(m, k) : swz<A_ROW_LEN>(k, m)); }, A, lda,
      block_m, M, k0, k_end, tid);
}

#if defined(TS_VENDOR_AMD)
typedef TsMfma16x16Acc Acc;  // the MFMA's rows are columns n of C, its columns rows m

// acc += (Bs^T As^T) over one slice. MFMA operand a is B^T (rows = columns n of C), b is A^T
// (columns = rows m of C): lane l supplies B^T[n0 + l % 16][k0 + 4 (l / 16) .. +3] and
// A^T[k0 + 4 (l / 16) .. +3][m0 + l % 16] and holds D rows n0 + 4 (l / 16) .. +3 of column
// m0 + l % 16.
__device__ __forceinline__ void multiply_stage(const ts_ab_t* __restrict__ Bs, const ts_ab_t* __restrict__ As,
                                               int warp_n0, int warp_m0, int lane,
                                               float (&acc)[TILES_N][TILES_M][4]) {
  const int r = lane % 16, q = (lane / 16) * 4;
#pragma unroll
  for (int k0 = 0; k0 < BLOCK_K; k0 += 16) {
    ts_mfma_in a[TILES_N], b[TILES_M];
#pragma unroll
    for (int nt = 0; nt < TILES_N; ++nt)
#pragma unroll
      for (int j = 0; j < 4; ++j) a[nt][j] = mfma_elem(*b_ptr(Bs, k0 + q + j, warp_n0 + nt * 16 + r));
#pragma unroll
    for (int mt = 0; mt < TILES_M; ++mt)
#pragma unroll
      for (int j = 0; j < 4; ++j) b[mt][j] = mfma_elem(*a_ptr(As, warp_m0 + mt * 16 + r, k0 + q + j));
#pragma unroll
    for (int nt = 0; nt < TILES_N; ++nt)
#pragma unroll
      for (int mt = 0; mt < TILES_M; ++mt) mfma_16x16x16(acc[nt][mt], a[nt], b[mt]);
  }
}

#else  // NVIDIA tensor cores

typedef TsMma16x8Acc Acc;  // the MMA's rows are columns n of C, its columns rows m

// The x4 fragment of a 16 x 16 block of an operand tile, rows x0..x0+15 (n of B^T, m of A^T)
// by k0..k0+15, as ldmatrix hands it to mma.sync: lane l addresses row l % 8 of matrix
// j = l / 8. kXFirst: matrix j's rows are x0 + 8 (j & 1).., its k k0 + 8 (j >> 1) (B^T, the
// MMA's A operand: matrices (x 0-7, k 0-7), (x 8-15, k 0-7), (x 0-7, k 8-15), (x 8-15, k 8-15));
// else the other way round (A^T, the MMA's B operand: b[0], b[1] for x0.., b[2], b[3] for
// x0+8..). kKContig: the tile is stored [x][k] (plain ldmatrix gives lane (g, c) the pair
// (x g, k 2c..2c+1)), else [k][x] (the transposing ldmatrix gives the same).
template <bool kXFirst, bool kKContig, int kRowLen>
__device__ __forceinline__ void load_frag16(unsigned (&f)[4], const ts_ab_t* Xs, int x0, int k0, int lane) {
  const int j = lane / 8, r = lane % 8;
  const int dx = (kXFirst ? (j & 1) : (j >> 1)) * 8, dk = (kXFirst ? (j >> 1) : (j & 1)) * 8;
  if (kKContig)
    ldsm_x4(f, smem_addr(Xs + swz<kRowLen>(x0 + dx + r, k0 + dk)));
  else
    ldsm_x4_trans(f, smem_addr(Xs + swz<kRowLen>(k0 + dk + r, x0 + dx)));
}
// The MMA's A operand: B^T rows n0..n0+15 (columns of C), k0..k0+15.
__device__ __forceinline__ void load_bt_frag(unsigned (&a)[4], const ts_ab_t* Bs, int n0, int k0, int lane) {
  load_frag16<true, !TS_B_ROW_MAJOR, B_ROW_LEN>(a, Bs, n0, k0, lane);
}
// The MMA's B operand: A^T k0..k0+15 x rows m0..m0+15 of A (two 8-wide tiles).
__device__ __forceinline__ void load_at_frags(unsigned (&b)[4], const ts_ab_t* As, int m0, int k0, int lane) {
  load_frag16<false, TS_A_ROW_MAJOR, A_ROW_LEN>(b, As, m0, k0, lane);
}
// One 8-wide tile of A^T (lanes 0-15 give the addresses; the others repeat them).
__device__ __forceinline__ void load_at_frag8(unsigned& b0, unsigned& b1, const ts_ab_t* As, int m0, int k0, int lane) {
  const int j = (lane / 8) & 1, r = lane % 8;
  const int dk = j * 8;
#if TS_A_ROW_MAJOR
  ldsm_x2(b0, b1, smem_addr(As + swz<A_ROW_LEN>(m0 + r, k0 + dk)));
#else
  ldsm_x2_trans(b0, b1, smem_addr(As + swz<A_ROW_LEN>(k0 + dk + r, m0)));
#endif
}

// acc += (Bs^T As^T) over one slice, 16 deep at a time.
__device__ __forceinline__ void multiply_stage(const ts_ab_t* __restrict__ Bs, const ts_ab_t* __restrict__ As,
                                               int warp_n0, int warp_m0, int lane,
                                               float (&acc)[TILES_N][TILES_M][4]) {
#pragma unroll
  for (int k0 = 0; k0 < BLOCK_K; k0 += 16) {
    unsigned a[TILES_N][4], b[(TILES_M + 1) / 2][4];
#pragma unroll
    for (int nt = 0; nt < TILES_N; ++nt) load_bt_frag(a[nt], Bs, warp_n0 + nt * 16, k0, lane);
#if TILES_M == 1
    load_at_frag8(b[0][0], b[0][1], As, warp_m0, k0, lane);
#else
#pragma unroll
    for (int mp = 0; mp < TILES_M / 2; ++mp) load_at_frags(b[mp], As, warp_m0 + mp * 16, k0, lane);
#endif
#pragma unroll
    for (int nt = 0; nt < TILES_N; ++nt)
#pragma unroll
      for (int mt = 0; mt < TILES_M; ++mt)
        mma16816(acc[nt][mt], a[nt], b[mt / 2][(mt % 2) * 2], b[mt / 2][(mt % 2) * 2 + 1]);
  }
}
#endif

// Stores the 4 accumulators of fragment f held by thread t of the block whose tile starts at
// (block_m, block_n): C = epilogue(alpha * v + beta * C), rounded once to C's type.
__device__ __forceinline__ void store_frag(ts_c_t* __restrict__ C, const ts_c_t* __restrict__ bias, int f, int t,
                                           const float (&v)[4], int block_m, int block_n, int M, int N, int ldc,
                                           float alpha, float beta, float slope) {
  const int warp = t / TS_WARP_SIZE, lane = t % TS_WARP_SIZE;
  const int n0 = block_n + (warp % WARPS_N) * WARP_N, m0 = block_m + (warp / WARPS_N) * WARP_M;
  const int nt = f / TILES_M, mt = f % TILES_M;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int gn = n0 + Acc::row(lane, nt, i), gm = m0 + Acc::col(lane, mt, i);
    if (gm < M && gn < N) ts_store_c(C, gm, gn, ldc, v[i], alpha, beta, bias, slope);
  }
}

#if REDUCE == 1 && SPLIT_K > 1
#include "ts_cluster.h"
#define TS_DECODE_CLUSTER __cluster_dims__(1, SPLIT_K, 1)
#else
#define TS_DECODE_CLUSTER
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS) TS_DECODE_CLUSTER
gemm_decode(TS_GEMM_PARAMS(ts_ab_t, ts_c_t)) {
  extern __shared__ __attribute__((aligned(128))) unsigned char smem_raw[];
  ts_ab_t* smem = reinterpret_cast<ts_ab_t*>(smem_raw);
  const int tid = threadIdx.x;
  const int warp = tid / TS_WARP_SIZE, lane = tid % TS_WARP_SIZE;
  const int warp_n0 = (warp % WARPS_N) * WARP_N, warp_m0 = (warp / WARPS_N) * WARP_M;
  // The row tiles of one column tile are neighbours in launch order, so that blocks reading
  // the same B columns run together and share them through L2.
  const int tiles_m = (M + BLOCK_M - 1) / BLOCK_M;
  const int tile = blockIdx.x;
  const int block_m = (tile % tiles_m) * BLOCK_M, block_n = (tile / tiles_m) * BLOCK_N;
  const int k_per_split = ((K + SPLIT_K - 1) / SPLIT_K + BLOCK_K - 1) / BLOCK_K * BLOCK_K;
  const int k_begin = blockIdx.y * k_per_split;
  const int k_end = min(K, k_begin + k_per_split);

  float acc[TILES_N][TILES_M][4];
  ts_zero_tiles(acc);

  const int steps = k_end > k_begin ? (k_end - k_begin + BLOCK_K - 1) / BLOCK_K : 0;
  ts_pipeline<STAGES>(
      steps,
      [&](int slot, int step) {
        ts_ab_t* Bs = smem + slot * STAGE_ELEMS;
        load_stage(Bs, Bs + B_STAGE, A, B, M, N, k_end, lda, ldb, block_m, block_n, k_begin + step * BLOCK_K, tid);
      },
      [&](int slot, int) {
        const ts_ab_t* Bs = smem + slot * STAGE_ELEMS;
        multiply_stage(Bs, Bs + B_STAGE, warp_n0, warp_m0, lane, acc);
      });

#if SPLIT_K == 1
  (void)workspace;
#pragma unroll
  for (int f = 0; f < FRAGS; ++f)
    store_frag(C, bias, f, tid, acc[f / TILES_M][f % TILES_M], block_m, block_n, M, N, ldc, alpha, beta,
               epilogue_slope);
#elif REDUCE == 1
  (void)workspace;
  // Each block's partial in its own shared memory, fragment-major ([f][thread] float4); after
  // the cluster barrier block r sums items r, r + SPLIT_K, ... over ranks 0..SPLIT_K-1.
  __syncthreads();  // every warp is done with the pipeline's shared memory
  float* part = reinterpret_cast<float*>(smem_raw);
#pragma unroll
  for (int f = 0; f < FRAGS; ++f)
    *reinterpret_cast<float4*>(part + (f * THREADS + tid) * 4) =
        make_float4(acc[f / TILES_M][f % TILES_M][0], acc[f / TILES_M][f % TILES_M][1],
                    acc[f / TILES_M][f % TILES_M][2], acc[f / TILES_M][f % TILES_M][3]);
  ts_cluster_sync();
  const unsigned rank = ts_cluster_rank();
  constexpr int kItems = FRAGS * THREADS;
  constexpr int kPer = (kItems + SPLIT_K - 1) / SPLIT_K;
  for (int item = rank * kPer + tid; item < min(kItems, (int)(rank + 1) * kPer); item += THREADS) {
    float4 p[SPLIT_K];
#pragma unroll
    for (int s = 0; s < SPLIT_K; ++s) p[s] = ts_ld_cluster4(part + item * 4, s);
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int s = 0; s < SPLIT_K; ++s) {  // split order: deterministic
      v[0] += p[s].x;
      v[1] += p[s].y;
      v[2] += p[s].z;
      v[3] += p[s].w;
    }
    store_frag(C, bias, item / THREADS, item % THREADS, v, block_m, block_n, M, N, ldc, alpha, beta, epilogue_slope);
  }
  ts_cluster_sync();  // no block leaves while another still reads its shared memory
#else
  // Workspace: SPLIT_K x tiles partial tiles of BLOCK_M x BLOCK_N floats in fragment order
  // ([f][thread] float4), then one counter per tile (zeroed before the first launch, reset by
  // the block that reduces).
  const int tiles = tiles_m * ((N + BLOCK_N - 1) / BLOCK_N);
  float* own = workspace + ((long long)blockIdx.y * tiles + tile) * (BLOCK_M * BLOCK_N);
  int* counters = reinterpret_cast<int*>(workspace + (long long)SPLIT_K * tiles * (BLOCK_M * BLOCK_N));
#pragma unroll
  for (int f = 0; f < FRAGS; ++f)
    *reinterpret_cast<float4*>(own + (f * THREADS + tid) * 4) =
        make_float4(acc[f / TILES_M][f % TILES_M][0], acc[f / TILES_M][f % TILES_M][1],
                    acc[f / TILES_M][f % TILES_M][2], acc[f / TILES_M][f % TILES_M][3]);
  if (ts_arrive(counters, tile, tid) != SPLIT_K - 1) return;
  __threadfence();
  // The last block adds the partials in split order, its own from registers (the same values
  // it wrote), the others read from L2 (ld.global.cg: written by other blocks).
#pragma unroll
  for (int f = 0; f < FRAGS; ++f) {
    float4 p[SPLIT_K];
#pragma unroll
    for (int s = 0; s < SPLIT_K; ++s) {
      if (s == (int)blockIdx.y) continue;
      p[s] = ts_load_l2_4(workspace + ((long long)s * tiles + tile) * (BLOCK_M * BLOCK_N) + (f * THREADS + tid) * 4);
    }
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int s = 0; s < SPLIT_K; ++s) {
      if (s == (int)blockIdx.y) {
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] += acc[f / TILES_M][f % TILES_M][i];
      } else {
        v[0] += p[s].x;
        v[1] += p[s].y;
        v[2] += p[s].z;
        v[3] += p[s].w;
      }
    }
    store_frag(C, bias, f, tid, v, block_m, block_n, M, N, ldc, alpha, beta, epilogue_slope);
  }
  if (tid == 0) counters[tile] = 0;  // ready for the next launch
#endif
}
