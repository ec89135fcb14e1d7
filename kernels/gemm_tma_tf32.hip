// gemm_tma_tf32: fp32 GEMM with fp32 accuracy (3xTF32) on Hopper's pipeline (sm_90a): operands
// brought into shared memory by the tensor memory accelerator (TMA), a warp-specialised
// pipeline on mbarriers (ts_tma.h, as gemm_tma_half), an optional persistent grid, and
// gemm_wgmma's split-precision product (ts_wgmma_tf32.h): C^T = B^T A^T, B through registers,
// A's big and small parts read by the tensor cores from shared memory.
//
// Roles. The block is CONSUMERS + 1 warpgroups. Warpgroup 0 gives most of its registers back
// (setmaxnreg.dec) and does the block's side work:
//  - its first thread issues, for each 32-deep K slice, the TMA copies of A's and B's tiles
//    into a free stage ("empty" mbarrier), announcing their bytes on the stage's "full" one;
//  - its other three warps split each landed A tile into big (TF32, masked) and small parts
//    in the K-major layout the tensor cores read, then make a proxy fence (the tensor cores
//    read through the async proxy) and arrive on the stage's "ready" mbarrier.
// The consumer warpgroups take registers (setmaxnreg.inc), each owns 64 columns of the block
// tile (BLOCK_N = 64 * CONSUMERS) across its BLOCK_M rows, waits for a stage to be ready,
// multiplies it (three wgmma per 8-deep step, chains of CHAIN steps added in fp32) and hands
// the stage back on its "empty" mbarrier. No thread waits on a block-wide barrier in the K
// loop, and the split no longer stops the consumers (in gemm_wgmma every thread splits each
// slice between two __syncthreads).
//
// Tensor maps (launch.tensor_maps in the JSON, 128-byte swizzle, 32 floats wide): a row-major
// (K-major) A as one box of 32 K x BLOCK_M rows, which lands exactly in the layout the wgmma
// descriptors describe and is split in place; a column-major A as BLOCK_M / 32 boxes of 32 M x
// 32 K rows into a staging tile, which the split writes transposed into that layout (the
// tensor cores take TF32 operands K-major only). B row-major as BLOCK_N / 32 boxes of 32 N x
// 32 K rows (box j: columns 32j.. of the tile, row k of 128 bytes), B column-major as one box
// of 32 K x BLOCK_N rows. Reads outside the matrix are zero-filled (zeros split into zeros), so
// M, N and K need not be multiples of the tile; leading dimensions must be multiples of 4
// floats (16-byte strides: gemm_wgmma serves the others).
//
// Tiles. Units are (output tile, K split) pairs in grouped order (ts_tile.h). PERSISTENT 1
// launches min(SMs, units) blocks that walk the units with a stride of the grid, so the
// producer loads the next tile while the consumers finish this one; PERSISTENT 0 launches
// one block per unit. C is written from the accumulators by ts_finish_tile (split-K partials
// summed in a fixed order by the last block of a tile: deterministic).
#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef CONSUMERS
#define CONSUMERS 2
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef PERSISTENT
#define PERSISTENT 1
#endif
#ifndef CHAIN
#define CHAIN 4
#endif
// GROUP_M and SPLIT_K take their defaults (8, 1) from ts_tile.h.
#include "ts_gemm_common.h"

#define BLOCK_K 32  // one 128-byte swizzle row of floats
#define WARPGROUP_THREADS 128
#define BLOCK_N (64 * CONSUMERS)
#define THREADS ((CONSUMERS + 1) * WARPGROUP_THREADS)
#define ACC (BLOCK_M / 2)  // accumulator floats per thread (wgmma m64nBLOCK_Mk8)
// A stage: A's big part (as landed, for a row-major A), A's small part, B as landed, then a
// column-major A's staging tile; every part a multiple of 1024 bytes, where the swizzle
// pattern repeats.
#define A_TILE_BYTES (BLOCK_M * 128)
#define B_TILE_BYTES (BLOCK_N * 128)
#define B_OFFSET (2 * A_TILE_BYTES)
#define A_STAGING_OFFSET (B_OFFSET + B_TILE_BYTES)
#define STAGE_BYTES (A_STAGING_OFFSET + (TS_A_ROW_MAJOR ? 0 : A_TILE_BYTES))
#define LOADED_BYTES (A_TILE_BYTES + B_TILE_BYTES)  // what the TMA copies of one slice deliver
// Registers: the side warpgroup keeps what issuing copies and splitting need (more for the
// transposing split of a column-major A: four 16-byte loads in flight); the consumers share
// the rest of the SM's 64 Ki (a multiple of 8, at most 240).
#define SIDE_REGS (TS_A_ROW_MAJOR ? 40 : 56)
#define CONSUMER_REGS_FIT ((65536 / WARPGROUP_THREADS - SIDE_REGS) / CONSUMERS / 8 * 8)
#define CONSUMER_REGS (CONSUMER_REGS_FIT > 240 ? 240 : CONSUMER_REGS_FIT)
#define SPLIT_THREADS (WARPGROUP_THREADS - TS_WARP_SIZE)  // warps 1-3 of warpgroup 0
// Only the consumers write C: split-K's reduction runs on them, with a named barrier.
#define TS_TILE_THREADS (CONSUMERS * WARPGROUP_THREADS)
#define TS_TILE_SYNC() asm volatile("bar.sync 1, %0;\n" ::"n"(CONSUMERS * WARPGROUP_THREADS) : "memory")

#include "ts_tile.h"
#include "ts_tma.h"
#include "ts_wgmma_tf32.h"

static_assert(CONSUMERS >= 1 && CONSUMERS <= 3, "one to three consumer warpgroups (BLOCK_N 64..192)");
static_assert(CHAIN == 1 || CHAIN == 2 || CHAIN == 4, "chains of 1, 2 or 4 steps inside a 32-deep slice");
static_assert(STAGES >= 2, "at least two stages");

// Element (k, x) of a tile landed as 32-wide boxes of 32 rows k (a row-major B, x = n; a
// column-major A's staging tile, x = m), in the TMA's 128-byte swizzle: box x / 32 (4 KiB),
// row k (128 bytes), 16-byte chunk c of the row at chunk c ^ (k % 8).
__device__ __forceinline__ const unsigned* wide_box_at(const unsigned char* tile, int k, int x) {
  return reinterpret_cast<const unsigned*>(tile + (x / 32) * 4096 + ts_swizzle128_offset(k, (x % 32) / 4) + (x % 4) * 4);
}

// B[k][n] of a landed slice (k < 32, n < BLOCK_N).
__device__ __forceinline__ float b_at(const unsigned char* bs, int k, int n) {
#if TS_B_ROW_MAJOR
  return __uint_as_float(*wide_box_at(bs, k, n));
#else
  // Row n holds the slice's 32 K values of column n.
  return *reinterpret_cast<const float*>(bs + ts_swizzle128_offset(n, k / 4) + (k % 4) * 4);
#endif
}

// The copies of one K slice (at k0) of the tile at (block_m, block_n) into a stage.
__device__ __forceinline__ void load_slice(unsigned char* stage, const TsTensorMap* map_a, const TsTensorMap* map_b,
                                           int block_m, int block_n, int k0, unsigned long long* full) {
  mbar_expect_bytes(full, LOADED_BYTES);
#if TS_A_ROW_MAJOR
  tma_load_box(stage, map_a, k0, block_m, full);
#else
#pragma unroll
  for (int j = 0; j < BLOCK_M / 32; ++j) tma_load_box(stage + A_STAGING_OFFSET + j * 4096, map_a, block_m + 32 * j, k0, full);
#endif
#if TS_B_ROW_MAJOR
#pragma unroll
  for (int j = 0; j < BLOCK_N / 32; ++j) tma_load_box(stage + B_OFFSET + j * 4096, map_b, block_n + 32 * j, k0, full);
#else
  tma_load_box(stage + B_OFFSET, map_b, k0, block_n, full);
#endif
}

// Splits one 16-byte chunk x (4 K values of row m, chunk c) into the K-major swizzled big and
// small tiles.
__device__ __forceinline__ void split_chunk(unsigned char* stage, int m, int c, uint4 x) {
  const int at = ts_swizzle128_offset(m, c);
  store_split_tf32(x, stage + at, stage + A_TILE_BYTES + at);
}

// Splits a landed A tile into its big and small K-major tiles. A row-major A is split in
// place, a 16-byte chunk per step (elementwise: the swizzle does not matter). A column-major
// one is read from its staging tile in blocks of 4 m x 4 k: four 16-byte loads (4 consecutive
// m of rows 4c..4c+3; 8 lanes cover a whole 128-byte row, so no bank conflicts), transposed in
// registers into the 4 chunks of rows m..m+3 (4 loads in flight, where element-wise loads
// left the split slower than the tensor cores).
__device__ __forceinline__ void split_a_tile(unsigned char* stage, int s) {
#if TS_A_ROW_MAJOR
  for (int idx = s; idx < BLOCK_M * 8; idx += SPLIT_THREADS) {
    const int m = idx / 8, c = (idx % 8) ^ (m % 8);  // the chunk stored at idx
    split_chunk(stage, m, c, *reinterpret_cast<const uint4*>(stage + idx * 16));
  }
#else
  const unsigned char* staging = stage + A_STAGING_OFFSET;
  for (int blk = s; blk < BLOCK_M * 2; blk += SPLIT_THREADS) {
    const int m = 4 * (blk % (BLOCK_M / 4)), c = blk / (BLOCK_M / 4);
    uint4 r[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) r[j] = *reinterpret_cast<const uint4*>(wide_box_at(staging, 4 * c + j, m));
    split_chunk(stage, m, c, make_uint4(r[0].x, r[1].x, r[2].x, r[3].x));
    split_chunk(stage, m + 1, c, make_uint4(r[0].y, r[1].y, r[2].y, r[3].y));
    split_chunk(stage, m + 2, c, make_uint4(r[0].z, r[1].z, r[2].z, r[3].z));
    split_chunk(stage, m + 3, c, make_uint4(r[0].w, r[1].w, r[2].w, r[3].w));
  }
#endif
  fence_proxy_async();
}

__device__ __forceinline__ TsTile unit_tile(int unit, int M, int N, int K) {
  return ts_tile_at(unit / SPLIT_K, unit % SPLIT_K, M, N, K);
}

// Calls f(tile, k0, ring) for every K slice of this block's units, ring at the slice's stage:
// the walk that the copying thread and the splitting warps make in step with each other.
template <typename F>
__device__ __forceinline__ void for_each_slice(int units, int M, int N, int K, F f) {
  Ring ring;
  for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
    const TsTile tile = unit_tile(unit, M, N, K);
    for (int k0 = tile.k_begin; k0 < tile.k_end; k0 += BLOCK_K) {
      f(tile, k0, ring);
      ring.next();
    }
  }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_tma_tf32(TS_GEMM_PARAMS(float, float), const __grid_constant__ TsTensorMap map_a,
              const __grid_constant__ TsTensorMap map_b) {
  extern __shared__ __attribute__((aligned(16))) unsigned char smem_raw[];
  __shared__ __align__(8) unsigned long long full_bar[STAGES], ready_bar[STAGES], empty_bar[STAGES];
  // The 128-byte swizzle is anchored to 1024-byte boundaries (SHARED_BYTES has the slack).
  const unsigned raw_addr = smem_addr(smem_raw);
  unsigned char* smem = smem_raw + (((raw_addr + 1023u) & ~1023u) - raw_addr);
  (void)A;  // read through the tensor maps
  (void)B;
  (void)lda;
  (void)ldb;

  const int tid = threadIdx.x;
  const int wg = tid / WARPGROUP_THREADS;  // 0: copies and splits, 1..CONSUMERS: consumers
  const int lane = tid % TS_WARP_SIZE;
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full_bar[s], 1);                  // the copying thread's arrival (plus the bytes)
      mbar_init(&ready_bar[s], SPLIT_THREADS);     // every splitting thread
      mbar_init(&empty_bar[s], 4 * CONSUMERS);     // one arrival per consumer warp
    }
    mbar_init_fence();
  }
  __syncthreads();

  const int units = ((M + BLOCK_M - 1) / BLOCK_M) * ((N + BLOCK_N - 1) / BLOCK_N) * SPLIT_K;

  if (wg == 0) {
    setmaxnreg_dec<SIDE_REGS>();
    if (tid == 0) {
      prefetch_tensormap(&map_a);
      prefetch_tensormap(&map_b);
      for_each_slice(units, M, N, K, [&](const TsTile& tile, int k0, Ring ring) {
        mbar_wait(&empty_bar[ring.stage], ring.phase ^ 1u);  // the first lap finds every slot free
        load_slice(smem + ring.stage * STAGE_BYTES, &map_a, &map_b, tile.block_m, tile.block_n, k0,
                   &full_bar[ring.stage]);
      });
    } else if (tid >= TS_WARP_SIZE) {
      // A slot is refilled only after the consumers released it, which they do only after
      // this split's ready phase: the splitters never run more than a lap ahead.
      for_each_slice(units, M, N, K, [&](const TsTile&, int, Ring ring) {
        mbar_wait(&full_bar[ring.stage], ring.phase);
        split_a_tile(smem + ring.stage * STAGE_BYTES, tid - TS_WARP_SIZE);
        mbar_arrive(&ready_bar[ring.stage]);
      });
    }
    return;
  }

  setmaxnreg_inc<CONSUMER_REGS>();
  const int ctid = tid - WARPGROUP_THREADS;  // among the consumers' threads
  const int n0 = ctid / TS_WARP_SIZE * 16;   // consumer (wg - 1)'s 64 columns, this warp's 16
  Ring ring;
  float acc[ACC];
  for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
    const TsTile tile = unit_tile(unit, M, N, K);
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;
    for (int k0 = tile.k_begin; k0 < tile.k_end; k0 += BLOCK_K) {
      // Full as well as ready: B's bytes become visible through the full barrier's phase.
      mbar_wait(&full_bar[ring.stage], ring.phase);
      mbar_wait(&ready_bar[ring.stage], ring.phase);
      unsigned char* stage = smem + ring.stage * STAGE_BYTES;
      const unsigned char* bs = stage + B_OFFSET;
      multiply_slice_3xtf32([&](int k, int n) { return b_at(bs, k, n); }, tf32_descriptor(stage),
                            tf32_descriptor(stage + A_TILE_BYTES), n0, lane, acc);
      if (lane == 0) mbar_arrive(&empty_bar[ring.stage]);  // every wgmma reading it is done
      ring.next();
    }
    ts_finish_tile(AccWalk{acc, tile, lane, n0, M, N}, tile, ctid, C, bias, workspace, M, N, ldc, alpha, beta,
                   epilogue_slope);
  }
}
