// gemm_wgmma_half: fp16/bf16 GEMM with fp32 accumulation on Hopper's warpgroup tensor-core
// instruction (wgmma.mma_async m64nNk16, sm_90a), both operands read by the tensor cores
// from shared memory through matrix descriptors; C in fp32, fp16 or bf16, every layout.
//
// Block tile BLOCK_M x BLOCK_N, K in 64-deep slices (64 half values = 128 bytes, one row of
// the 128-byte swizzle). WARPGROUPS warpgroups (4 warps each) split the block's rows: each
// owns WG_M_TILES 64-row tiles and multiplies them by the whole BLOCK_N width, one
// m64nBLOCK_Nk16 wgmma per tile per 16-deep step, fp32 accumulators in registers
// (BLOCK_N / 2 floats per thread per tile).
//
// Shared memory. Each stage holds A's tile then B's, each in one of the two layouts wgmma
// reads for 16-bit types with the 128-byte swizzle, whichever matches the operand's global
// orientation, so that every global -> shared copy is 16 contiguous bytes and no operand is
// transposed by the kernel:
//  - K-major (A row-major, B column-major): row r of the tile (one M or N index) holds its
//    64 K values in 128 bytes; descriptor stride between 8-row groups (SBO) 1024 bytes.
//  - MN-major (A column-major, B row-major; wgmma's transpose bit): the tile is cut into
//    64-wide M/N blocks; block j is 64 rows (one per K index) of 128 bytes (64 M/N values),
//    8 KiB per block. SBO (between 8-row groups of K) 1024 bytes, LBO (between 64-wide
//    blocks) 8192 bytes.
// In both, 16-byte chunk c of a 128-byte row r lies at chunk c ^ (r % 8), the pattern the
// tensor cores apply from the address bits (hence the 1024-byte alignment of the tiles).
// A 64-row tile of A is 8 KiB at 8192 * tile either way. A 16-deep step moves a K-major
// descriptor 32 bytes along its rows and an MN-major one 16 rows (2048 bytes) down.
//
// Pipeline (no warp specialisation): all threads copy with cp.async (16 bytes; narrower where
// a leading dimension is not a multiple of 8, VEC; zero-filled past the matrix edges) into
// STAGES slots. Slice t: wait for its copies, proxy fence (cp.async writes are generic-proxy,
// wgmma reads through the async proxy), barrier; wgmma over its 4 steps, one commit group,
// and the copies of slice t + STAGES - 1 - MMA_PENDING (before the wgmma with LOADS_FIRST,
// after them without); then wgmma.wait_group MMA_PENDING.
// With MMA_PENDING 1 one slice's wgmma stays in flight across the next barrier, so the slot
// reloaded at slice t is the one of slice t - 2 (every warpgroup finished it before the
// barrier of slice t); with 0 it is the slot of slice t - 1.
//
// Epilogue straight from the accumulator fragments (row 16 * warp + lane / 4 (+8), columns
// 8 j + 2 (lane % 4) (+1) of each 64-row tile) with ts_store_c's arithmetic (two
// neighbouring columns per store for a row-major C); split-K through ts_tile.h's
// deterministic workspace protocol; grouped tile order.
//
// AMD CDNA (gfx908, gfx90a, gfx94x) has no wgmma: the same blocks, copies and shared layouts,
// each wavefront multiplying its warpgroup's rows by a quarter of BLOCK_N on
// v_mfma_f32_16x16x16 f16/bf16 (two 16x16x8 bf16 on gfx908) with element reads from the
// swizzled tiles. That path is compile-checked only and not tuned.
#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif
#ifndef WARPGROUPS
#define WARPGROUPS 2
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef MMA_PENDING
#define MMA_PENDING 0
#endif
#ifndef VEC
#define VEC 8
#endif
#ifndef LOADS_FIRST
#define LOADS_FIRST 0
#endif
#ifndef TS_AB_DTYPE
#define TS_AB_DTYPE 2
#endif
// GROUP_M and SPLIT_K take their defaults (8, 1) from ts_tile.h.
#include "ts_gemm_common.h"

#define BLOCK_K 64  // one 128-byte swizzle row of 16-bit values
#define WG_M_TILES (BLOCK_M / (64 * WARPGROUPS))
#define WARPGROUP_THREADS (4 * TS_WARP_SIZE)
#define THREADS (WARPGROUPS * WARPGROUP_THREADS)
#define ACC_N (BLOCK_N / 2)  // accumulator floats per thread per 64-row tile (wgmma m64nBLOCK_Nk16)
#define A_TILE_BYTES (BLOCK_M * BLOCK_K * 2)
#define B_TILE_BYTES (BLOCK_N * BLOCK_K * 2)
#define STAGE_BYTES (A_TILE_BYTES + B_TILE_BYTES)
#define A_K_MAJOR TS_A_ROW_MAJOR
#define B_K_MAJOR (!TS_B_ROW_MAJOR)
#define AHEAD (STAGES - 1 - MMA_PENDING)  // slices copied ahead of the one multiplied

#include "ts_async_copy.h"
#include "ts_mfma.h"
#include "ts_tile.h"

static_assert(BLOCK_M % (64 * WARPGROUPS) == 0, "each warpgroup owns whole 64-row tiles");
static_assert(BLOCK_N % 64 == 0 && BLOCK_N <= 256, "BLOCK_N: 64, 128, 192 or 256");
static_assert(AHEAD >= 1, "STAGES must leave at least one slice in flight");
static_assert((THREADS / 8) % 8 == 0, "a thread's K-major copies keep one swizzle phase");
static_assert((BLOCK_M * 8) % THREADS == 0 && (BLOCK_N * 8) % THREADS == 0, "whole copies per thread");
static_assert(VEC == 8 || VEC == 2 || VEC == 1, "copy widths: 16, 4 or 2 bytes");

// Byte offset of 16-byte chunk c (0..7) of 128-byte row r in a swizzled tile.
__device__ __forceinline__ int swz_chunk(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }

// Byte offset of element (mn, k) in an operand tile: K-major (row mn, K along the row) or
// MN-major (64-wide blocks of mn, row k inside the block).
template <bool kKMajor>
__device__ __forceinline__ int tile_offset(int mn, int k) {
  return kKMajor ? swz_chunk(mn, k >> 3) + (k & 7) * 2 : swz_chunk((mn >> 6) * 64 + k, (mn & 63) >> 3) + (mn & 7) * 2;
}

// Starts the copies of one operand's K slice at k0 into its tile: ROWS rows (M or N) of the
// block starting at block_mn, `limit` (M or N) and k_end bounding what is read. Element
// (mn, k) sits at X[mn * ld + k] when kKMajor, else at X[k * ld + mn]. Consecutive threads
// copy consecutive 16-byte pieces of global memory. `full`: the block's tile and this slice
// lie wholly inside the matrix (uniform across the block), so no copy needs a bound. The
// 16-byte copies ask L2 for whole 128-byte lines (the neighbouring threads read the rest).
// A thread's copies are a fixed stride apart in global and shared memory, so each costs an
// address add or two, not a recomputation from its index.
template <bool kKMajor, int ROWS>
__device__ __forceinline__ void load_tile(unsigned char* tile, const ts_ab_t* __restrict__ X, int ld, int limit,
                                          int k_end, int block_mn, int k0, unsigned tid, bool full) {
  constexpr int kCopies = ROWS * 8 / THREADS;
  constexpr int kPerRow = kKMajor ? 8 : ROWS / 8;  // 16-byte pieces per row of global memory
  if (kKMajor || THREADS % kPerRow == 0) {
    // Each round of THREADS copies covers kRows whole rows; a thread keeps its piece p of a
    // row and moves kRows rows down per copy.
    constexpr int kRows = THREADS / kPerRow;
    const int p = tid % kPerRow, r0 = tid / kPerRow;
    // Global: row r0 (an M/N index when K-major, a K index when MN-major), piece p.
    const int g_row = (kKMajor ? block_mn : k0) + r0;
    const int g_col = (kKMajor ? k0 : block_mn) + p * 8;
    const ts_ab_t* src = X + (long long)g_row * ld + g_col;
    const long long src_step = (long long)kRows * ld;
    // Shared: K-major rows are tile rows; MN-major K row k of piece p is row (p / 8) * 64 + k.
    const int s_row = kKMajor ? r0 : (p >> 3) * 64 + r0;
    const int col_valid = ts_inside((kKMajor ? k_end : limit) - g_col, 8);
    const int row_limit = kKMajor ? limit : k_end;
#pragma unroll
    for (int i = 0; i < kCopies; ++i) {
      const int sr = s_row + i * kRows;  // (sr & 7) is constant when kRows % 8 == 0
      unsigned char* dst = tile + sr * 128 + (((p & 7) ^ ((kRows % 8 == 0 ? s_row : sr) & 7)) << 4);
      const ts_ab_t* s = src + i * src_step;
      if (full) {
        ts_copy_full_piece<VEC, true>(dst, s);
      } else {
        const int valid = g_row + i * kRows < row_limit ? col_valid : 0;
        ts_copy_piece<VEC, true>(dst, valid ? s : X, valid);
      }
    }
  } else {
    // MN-major with a row length that does not divide THREADS (BLOCK_N 192): from the index.
#pragma unroll
    for (int i = 0; i < kCopies; ++i) {
      const unsigned idx = tid + i * THREADS;
      const int k = idx / kPerRow, p = idx % kPerRow;
      const int gk = k0 + k, gmn = block_mn + p * 8;
      unsigned char* dst = tile + swz_chunk((p >> 3) * 64 + k, p & 7);
      if (full) {
        ts_copy_full_piece<VEC, true>(dst, X + (long long)gk * ld + gmn);
      } else {
        const int valid = gk < k_end ? ts_inside(limit - gmn, 8) : 0;
        ts_copy_piece<VEC, true>(dst, valid ? X + (long long)gk * ld + gmn : X, valid);
      }
    }
  }
}

__device__ __forceinline__ void load_stage(unsigned char* stage, const ts_ab_t* __restrict__ A,
                                           const ts_ab_t* __restrict__ B, int M, int N, int k_end, int lda, int ldb,
                                           int block_m, int block_n, int k0, int tid) {
#if !defined(TS_VENDOR_AMD)
  // Under a two-blocks-per-SM register cap, NVCC would still keep every copy's address live
  // across the K loop (they do not depend on k0) and spill; an opaque thread index makes it
  // recompute them at each slice, a few integer ops per copy.
  if (MIN_BLOCKS > 1) asm volatile("" : "+r"(tid));
#endif
  const bool full = block_m + BLOCK_M <= M && block_n + BLOCK_N <= N && k0 + BLOCK_K <= k_end;
  load_tile<A_K_MAJOR, BLOCK_M>(stage, A, lda, M, k_end, block_m, k0, tid, full);
  load_tile<B_K_MAJOR, BLOCK_N>(stage + A_TILE_BYTES, B, ldb, N, k_end, block_n, k0, tid, full);
}

#if defined(TS_VENDOR_AMD)
#define TM (WG_M_TILES * 4)  // 16-row MFMA tiles of a wavefront
#define TN (BLOCK_N / 64)    // 16-column MFMA tiles of a wavefront (a quarter of BLOCK_N)

__device__ __forceinline__ ts_mfma_elem elem_at(const unsigned char* p) {
  return mfma_elem(*reinterpret_cast<const ts_bits16*>(p));
}

// acc += A B over one slice for this wavefront's rows m0.. and columns n0... Lane l supplies
// A[m0 + l % 16][k + 4 (l / 16) .. +3] and B[k + 4 (l / 16) .. +3][n0 + l % 16] and holds
// rows 4 (l / 16) .. +3 of column l % 16 of each 16x16 tile.
__device__ __forceinline__ void multiply_stage(const unsigned char* stage, int m0, int n0, int lane,
                                               float (&acc)[TM][TN][4]) {
  const unsigned char* As = stage;
  const unsigned char* Bs = stage + A_TILE_BYTES;
  const int r = lane % 16, q = (lane / 16) * 4;
#pragma unroll
  for (int k0 = 0; k0 < BLOCK_K; k0 += 16) {
    ts_mfma_in a[TM], b[TN];
#pragma unroll
    for (int mt = 0; mt < TM; ++mt)
#pragma unroll
      for (int j = 0; j < 4; ++j) a[mt][j] = elem_at(As + tile_offset<A_K_MAJOR>(m0 + mt * 16 + r, k0 + q + j));
#pragma unroll
    for (int nt = 0; nt < TN; ++nt)
#pragma unroll
      for (int j = 0; j < 4; ++j) b[nt][j] = elem_at(Bs + tile_offset<B_K_MAJOR>(n0 + nt * 16 + r, k0 + q + j));
#pragma unroll
    for (int mt = 0; mt < TM; ++mt)
#pragma unroll
      for (int nt = 0; nt < TN; ++nt) mfma_16x16x16(acc[mt][nt], a[mt], b[nt]);
  }
}

#else  // NVIDIA Hopper

#include "ts_wgmma_half.h"
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
gemm_wgmma_half(TS_GEMM_PARAMS(ts_ab_t, ts_c_t)) {
  extern __shared__ __attribute__((aligned(16))) unsigned char smem_raw[];
#if defined(TS_VENDOR_AMD)
  unsigned char* smem = smem_raw;  // the swizzle is the kernel's own layout there: any alignment
#else
  // The tensor cores anchor the swizzle pattern to 1024-byte boundaries of the shared address
  // space (SHARED_BYTES has 1024 bytes of slack for this).
  const unsigned raw_addr = static_cast<unsigned>(__cvta_generic_to_shared(smem_raw));
  unsigned char* smem = smem_raw + (((raw_addr + 1023u) & ~1023u) - raw_addr);
#endif
  const int tid = threadIdx.x;
  const int warp = tid / TS_WARP_SIZE, lane = tid % TS_WARP_SIZE;
  const int wg = warp / 4;  // warpgroup
  const TsTile tile = ts_tile(M, N, K);

#if defined(TS_VENDOR_AMD)
  const int m0 = wg * WG_M_TILES * 64, n0 = (warp % 4) * (BLOCK_N / 4);
  float acc[TM][TN][4];
  ts_zero_tiles(acc);
#else
  float acc[WG_M_TILES][ACC_N];
#pragma unroll
  for (int t = 0; t < WG_M_TILES; ++t)
#pragma unroll
    for (int i = 0; i < ACC_N; ++i) acc[t][i] = 0.0f;
  // Descriptors of slot 0 (this warpgroup's first A tile, and B); a slot is STAGE_BYTES further.
  const unsigned long long desc_a0 =
      smem_descriptor(smem + wg * WG_M_TILES * 8192, DESC_LBO(A_K_MAJOR), DESC_SBO);
  const unsigned long long desc_b0 = smem_descriptor(smem + A_TILE_BYTES, DESC_LBO(B_K_MAJOR), DESC_SBO);
#endif

  const int steps = ts_k_steps(tile);
  auto load = [&](int slot, int step) {
    load_stage(smem + slot * STAGE_BYTES, A, B, M, N, tile.k_end, lda, ldb, tile.block_m, tile.block_n,
               tile.k_begin + step * BLOCK_K, tid);
  };
  // Slice t sits in slot t % STAGES; AHEAD slices are copied ahead. Each slice is one
  // cp.async commit group (empty ones keep the count uniform), so slice t has landed when at
  // most AHEAD - 1 groups are pending. The copies of slice t + AHEAD reuse the slot of slice
  // t - 1 - MMA_PENDING, whose wgmma every warpgroup waited for before this slice's barrier.
#pragma unroll
  for (int s = 0; s < AHEAD; ++s) {
    if (s < steps) load(s, s);
    ts_commit();
  }
  int slot = 0, load_slot = AHEAD;
  for (int t = 0; t < steps; ++t) {
    ts_wait<AHEAD - 1>();
#if !defined(TS_VENDOR_AMD)
    fence_proxy_async();
#endif
    __syncthreads();
#if LOADS_FIRST
    if (t + AHEAD < steps) load(load_slot, t + AHEAD);
    ts_commit();
#endif
#if !defined(TS_VENDOR_AMD)
    wgmma_fence();
    const unsigned long long slot_off = (unsigned long long)(slot * (STAGE_BYTES >> 4));
    multiply_stage(acc, desc_a0 + slot_off, desc_b0 + slot_off);
    wgmma_commit();
#endif
#if !LOADS_FIRST
    if (t + AHEAD < steps) load(load_slot, t + AHEAD);
    ts_commit();
#endif
#if defined(TS_VENDOR_AMD)
    multiply_stage(smem + slot * STAGE_BYTES, m0, n0, lane, acc);
#else
    wgmma_wait<MMA_PENDING>();
#endif
    slot = slot == STAGES - 1 ? 0 : slot + 1;
    load_slot = load_slot == STAGES - 1 ? 0 : load_slot + 1;
  }
  ts_wait<0>();

#if defined(TS_VENDOR_AMD)
  ts_finish_tile(TsFragWalk<TM, TN, TsMfma16x16Acc>{acc, tile, lane, m0, n0, M, N}, tile, tid, C, bias, workspace, M,
                 N, ldc, alpha, beta, epilogue_slope);
#else
  wgmma_wait_all(acc);
  wgmma_store_tile(acc, tile, wg, warp % 4, lane, tid, C, bias, workspace, M, N, ldc, alpha, beta, epilogue_slope);
#endif
}
