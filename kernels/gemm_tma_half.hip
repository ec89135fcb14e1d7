// gemm_tma_half: fp16/bf16 GEMM with fp32 accumulation for Hopper (sm_90a), built the way
// the fastest published Hopper kernels are: operands brought into shared memory by the
// tensor memory accelerator (TMA), a warp-specialised pipeline on mbarriers, wgmma from
// shared memory, and an optional persistent grid. C in fp32, fp16 or bf16, every layout.
//
// Roles. The block is CONSUMERS + 1 warpgroups. Warpgroup 0 is the producer: it gives most of its
// registers back (setmaxnreg.dec) and its first warp walks the ring, one elected lane issuing, for
// each 64-deep K slice, the TMA copies of A's and B's tiles into a free stage, announcing their
// bytes on the stage's "full" mbarrier. The consumer warpgroups take registers (setmaxnreg.inc),
// each owns BLOCK_M / CONSUMERS rows of the block tile across the whole BLOCK_N width, waits for a
// stage to be full, multiplies it with wgmma (m64nBLOCK_Nk16, one group per slice, the previous
// one left in flight) and, once that previous group has finished reading its stage, hands the
// stage back on its "empty" mbarrier. No thread waits on a block-wide barrier in the K loop: the
// producer runs up to STAGES slices ahead, across tile boundaries. ptxas fits
// the consumers' code to CONSUMER_REGS, above the 168 registers __launch_bounds__ leaves a thread
// of three warpgroups, so a consumer can hold 160 or 192 accumulators (256 x 160, 256 x 192: the
// fewest operand bytes per multiply-add of any tile here; the JSON's rules say where they spill).
//
// Tensor maps. The runtime encodes one map per operand (launch.tensor_maps in the JSON:
// box 64 x 64 elements, 128-byte swizzle) and passes them after the kernel ABI's parameters.
// A box is 64 rows of 128 bytes: for a K-major operand (A row-major, B column-major) 64 M/N
// rows of one K slice, for an MN-major one 64 K rows of 64 M/N values; either way it lands
// as one 8 KiB piece of the layouts ts_wgmma_half.h describes, so BLOCK_M / 64 boxes fill A's tile
// and BLOCK_N / 64 B's. BLOCK_N 96, 160 and 224 (a K-major B only) take B in 32-row boxes of 4 KiB
// instead, and 80, 112, 144, 176, 208 and 240 in 16-row boxes of 2 KiB, which stack the same way (rows
// 128 bytes apart, 8-row groups on 1 KiB boundaries): tile widths that are not multiples of 64 let a
// shape's tile count fit the SMs (512 x 5120 is 108 tiles of 128 x 192 on 132 SMs but 128 of 128 x 160;
// 4096 x 1280 is 1.7 waves of 128 x 192, 1.94 of 128 x 160; 512 x 1280 is 80 tiles of 64 x 128 but,
// split in two along K, 128 units of 128 x 80, the vendor library's choice there; 512 x 55296 is
// 6.5 waves of 128 x 256 but 7.0 of 128 x 240, and 4096 x 7168 6.8 waves of 256 x 128 but 4.97 of
// 256 x 176). Reads outside the matrix are zero-filled by the TMA unit (and still
// count their bytes), so M, N and K need not be multiples of the tile; a leading dimension
// whose byte stride is not a multiple of 16 cannot be described and is refused before
// compiling (the JSON's constraints).
//
// Tiles. Units are (output tile, K split) pairs in grouped order (ts_tile.h). PERSISTENT 1
// launches min(SMs, units) blocks that walk the units with a stride of the grid, so one
// tile's epilogue overlaps the next tile's loads; PERSISTENT 0 launches one block per unit.
// Clusters. CLUSTER_M 2 launches pairs of blocks as thread-block clusters (__cluster_dims__)
// on two tiles stacked along M, which need the same B: each block loads its own A and every
// other box of B, multicast by the TMA unit into both blocks' shared memory (half the
// L2 -> SM traffic for B). CLUSTER_N 2 is the same for two tiles side by side along N, which
// share A. A stage is refilled only once the consumers of both blocks have released it: every
// consumer warp arrives on the empty barrier of both blocks (lane r on block r's, without a
// cluster-scope release: that would wait for the warp's earlier stores of C every time, which
// made the pair 0.6x of one block). The pair walks the same units in step; where the matrix has
// an odd number of tiles along the pair's direction the second block's tile lies outside it,
// loads zeros and stores nothing. The producer warpgroup leaves without the consumers' final
// cluster barrier (see its end).
//
// Ping-pong: PINGPONG 1 (two consumers, persistent) gives each consumer warpgroup whole tiles
// in turn instead of half of every tile: consumer 0 takes the block's 1st, 3rd, ... unit and
// consumer 1 the 2nd, 4th, ..., each skipping the other's slices in the ring. One consumer's
// epilogue (stores of C) then runs while the other multiplies, instead of both stopping the
// tensor cores at the end of every tile. Each consumer holds a whole BLOCK_M x BLOCK_N tile
// (128 x 128 or 64 x 256 in 128 accumulators a thread; 128 x 160 and 128 x 192 in the
// consumers' larger register budget, the JSON's rule on ACC_PER_THREAD). The consumers' K loops take
// turns (an mbarrier per consumer, arrived on when its loop is through): besides keeping the
// tensor cores to one tile at a time, this keeps a consumer that passed over the other's
// slices from running more than one lap of the ring ahead of the full barriers, whose parity
// waits cannot tell lap n from lap n + 2.
//
// Split-K inside a cluster: CLUSTER_K > 1 launches the CLUSTER_K blocks of one output tile as
// a cluster, block r taking the r-th share of K (for decode shapes, M <= 128, where the tiles
// alone are far too few to keep 132 multiprocessors streaming B). Each block puts its partial
// accumulators into its own shared memory (over the drained stages), and after a cluster
// barrier each sums 1/CLUSTER_K of the tile over the cluster's shared memory, in rank order
// (deterministic), and stores it: no workspace, no single block summing the whole tile.
//
// Epilogue: with EPILOGUE_SMEM (row-major C, beta 0) each consumer warp passes its 16 rows through
// 2 KiB of its own shared memory, 32 fp32 columns at a time, and finishes them from there in one
// rolled loop (alpha, bias, activation, rounding), storing C in 16-byte pieces (2: the TMA store);
// otherwise from the accumulator registers (ts_wgmma_half.h).
// Split-K: the block of a tile that finishes its multiply last adds the other shares' partials to
// its registers in a fixed order (deterministic) and stores the tile by any of these
// (ts_tma_half_epilogue.h's gather_splits).
#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef CONSUMERS
#define CONSUMERS 2
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef PERSISTENT
#define PERSISTENT 1
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 232
#endif
#ifndef EPILOGUE_SMEM
#define EPILOGUE_SMEM 1
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 1
#endif
#ifndef CLUSTER_N
#define CLUSTER_N 1
#endif
#ifndef CLUSTER_K
#define CLUSTER_K 1
#endif
#ifndef PINGPONG
#define PINGPONG 0
#endif
#ifndef TS_AB_DTYPE
#define TS_AB_DTYPE 2
#endif
#ifndef TS_BLOCK_SCALES
#define TS_BLOCK_SCALES 0
#endif
#ifndef PROMOTE_OVERLAP
#define PROMOTE_OVERLAP 0
#endif
// GROUP_M and SPLIT_K take their defaults (8, 1) from ts_tile.h.
#include "ts_gemm_common.h"

// One 128-byte swizzle row of K: 64 16-bit values or 128 FP8 ones. Every byte count below (stages,
// boxes, descriptor steps) is the same for both; only the K a slice covers and the instruction differ.
#define BLOCK_K (TS_AB_IS_FP8 ? 128 : 64)
#define WARPGROUP_THREADS 128
#define THREADS ((CONSUMERS + 1) * WARPGROUP_THREADS)
// How many consumers share a tile's rows (1 with PINGPONG: each has whole tiles), and the first
// 64-row tile of consumer c's share.
#define ROW_SHARES (PINGPONG ? 1 : CONSUMERS)
#define WG_FIRST_TILE(c) ((PINGPONG ? 0 : (c)) * WG_M_TILES)
#define WG_M_TILES (BLOCK_M / (64 * ROW_SHARES))
#define ACC_N (BLOCK_N / 2)
#define A_TILE_BYTES (BLOCK_M * 128)
#define B_TILE_BYTES (BLOCK_N * 128)
// Rows of B per box (the runtime's map has the same box: launch.tensor_maps in the JSON).
#define B_BOX_ROWS (BLOCK_N % 64 == 0 ? 64 : BLOCK_N % 32 == 0 ? 32 : 16)
#define STAGE_BYTES (A_TILE_BYTES + B_TILE_BYTES)
#define A_K_MAJOR TS_A_ROW_MAJOR
#define B_K_MAJOR (!TS_B_ROW_MAJOR)
// Registers the producer keeps: what one thread issuing copies needs. With the consumers'
// CONSUMER_REGS the block stays within the SM's 64 Ki registers.
#define PRODUCER_REGS 40
// Only the consumers write C: split-K's gathering runs on them, with a named barrier.
#define TS_TILE_THREADS (CONSUMERS * WARPGROUP_THREADS)
#define TS_TILE_SYNC() asm volatile("bar.sync 1, %0;\n" ::"n"(CONSUMERS * WARPGROUP_THREADS) : "memory")
#define TS_SPLITS_GATHERED 1  // a tile's shares of K meet in one block before it stores (gather_splits)

// Blocks of a cluster that multicast into each other's stages (a pair along M shares B, along N A).
#define CLUSTER_PEERS (CLUSTER_M * CLUSTER_N)
#define CLUSTER_SIZE (CLUSTER_PEERS * CLUSTER_K)

#include "ts_tile.h"
#include "ts_wgmma_half.h"
#include "ts_cluster.h"
#include "ts_tma.h"
#include "ts_ldmatrix.h"

static_assert(BLOCK_M % (64 * ROW_SHARES) == 0, "each consumer owns whole 64-row tiles");
// A cluster pair runs its units in the same order (same turns), so each stage is read by the
// same consumer in both blocks and the empty barriers' count (ROW_SHARES * 4 * CLUSTER_PEERS) holds.
static_assert(PINGPONG == 0 || (CONSUMERS == 2 && PERSISTENT == 1 && SPLIT_K == 1 && CLUSTER_K == 1),
              "ping-pong: two consumers taking turns over a persistent block's tiles, no split");
static_assert((BLOCK_N % 64 == 0 || (BLOCK_N % 16 == 0 && B_K_MAJOR)) && BLOCK_N >= 64 && BLOCK_N <= 256,
              "BLOCK_N: 64, 128, 192 or 256, or 80, 96, 112, 160 or 224 with a K-major B");
static_assert(STAGES >= 2, "at least two stages");
static_assert(!TS_AB_IS_FP8 || (A_K_MAJOR && B_K_MAJOR), "FP8: both operands K-major (layout NT)");
// A pair with a single box to share (BLOCK_N 64 along M, BLOCK_M 64 along N) has rank 0 multicast
// it and rank 1 load only its own operand: both blocks still expect the whole stage.
static_assert(CLUSTER_M == 1 || (CLUSTER_M == 2 && SPLIT_K == 1), "clusters: pairs along M, without split-K");
static_assert(CLUSTER_N == 1 || (CLUSTER_N == 2 && CLUSTER_M == 1 && SPLIT_K == 1),
              "clusters along N: pairs, without split-K or a pair along M");
static_assert(CLUSTER_K == 1 || ((CLUSTER_K == 2 || CLUSTER_K == 4 || CLUSTER_K == 8) && CLUSTER_PEERS == 1 &&
                                  SPLIT_K == 1 && PERSISTENT == 0),
              "K clusters: 2, 4 or 8 blocks per tile, one tile per cluster, no other split or cluster");
static_assert(PRODUCER_REGS * WARPGROUP_THREADS + CONSUMER_REGS * CONSUMERS * WARPGROUP_THREADS <= 65536,
              "the warpgroups' registers must fit the SM");

__device__ __forceinline__ unsigned cluster_rank() {
#if CLUSTER_SIZE > 1
  return ts_cluster_rank();
#else
  return 0;
#endif
}

// A consumer warp's release of a stage: on its own block's empty barrier, and with a cluster on
// the other block's too (its producer multicasts into this block's stage). Lane r signals block
// r, its own block included, through the cluster's address of the barrier: one arrival a lane,
// the same code for both, and no rank to read.
__device__ __forceinline__ void release_stage(unsigned bar, int lane) {
#if CLUSTER_PEERS > 1
  if (lane < CLUSTER_PEERS) ts_mbar_arrive_cluster(bar, (unsigned)lane);
#else
  if (lane == 0) mbar_arrive(bar);
#endif
}

__device__ __forceinline__ void cluster_sync() {
#if CLUSTER_SIZE > 1
  ts_cluster_sync();
#else
  __syncthreads();
#endif
}

// The copies of one K slice (at k0) of the tile at (block_m, block_n) into a stage (shared-window
// address); with a cluster, this block's share of B's boxes goes to both blocks.
__device__ __forceinline__ void load_slice(unsigned stage, const TsTensorMap* map_a, const TsTensorMap* map_b,
                                           int block_m, int block_n, int k0, unsigned full, unsigned rank) {
  mbar_expect_bytes(full, STAGE_BYTES);
#pragma unroll
  for (int j = 0; j < BLOCK_M / 64; ++j) {
    const int c0 = A_K_MAJOR ? k0 : block_m + 64 * j, c1 = A_K_MAJOR ? block_m + 64 * j : k0;
#if CLUSTER_N > 1
    if (j % CLUSTER_N == (int)rank)
      tma_load_box_multicast(stage + j * 8192u, map_a, c0, c1, full, (1u << CLUSTER_N) - 1);
#else
    tma_load_box(stage + j * 8192u, map_a, c0, c1, full);
#endif
  }
#pragma unroll
  for (int j = 0; j < BLOCK_N / B_BOX_ROWS; ++j) {
    const int c0 = B_K_MAJOR ? k0 : block_n + B_BOX_ROWS * j, c1 = B_K_MAJOR ? block_n + B_BOX_ROWS * j : k0;
    const unsigned dst = stage + A_TILE_BYTES + j * (B_BOX_ROWS * 128u);
#if CLUSTER_M > 1
    if (j % CLUSTER_M == (int)rank) tma_load_box_multicast(dst, map_b, c0, c1, full, (1u << CLUSTER_M) - 1);
#else
    tma_load_box(dst, map_b, c0, c1, full);
#endif
  }
  (void)rank;
}

// The unit's tile and its share of K. The block's cluster rank picks, with CLUSTER_M or
// CLUSTER_N, the pair's tile, with CLUSTER_K its share of K (otherwise the share is the unit's SPLIT_K one).
__device__ __forceinline__ TsTile unit_tile(int unit, int M, int N, int K, unsigned rank) {
  TsTile tile = ts_tile_at(unit / SPLIT_K, unit % SPLIT_K, M, N, K, CLUSTER_PEERS > 1 ? (int)rank : 0, CLUSTER_M,
                           CLUSTER_N);
#if CLUSTER_K > 1
  ts_k_share(K, (int)rank, CLUSTER_K, tile.k_begin, tile.k_end);
#endif
#if PROMOTE_OVERLAP
  // The overlapped promotion's loop takes at least one slice (entered unconditionally, its product
  // buffers need no copies, which would make ptxas serialise the wgmma groups): an empty share
  // (the last of a split whose slices do not divide evenly) takes one slice past K, which the
  // tensor memory accelerator fills with zeros.
  if (tile.k_end <= tile.k_begin) tile.k_end = tile.k_begin + BLOCK_K;
#endif
  return tile;
}

#include "ts_tma_half_epilogue.h"

#if CLUSTER_K > 1
#define TS_TMA_CLUSTER __cluster_dims__(CLUSTER_K, 1, 1)
#elif CLUSTER_PEERS > 1
#define TS_TMA_CLUSTER __cluster_dims__(CLUSTER_PEERS, 1, 1)
#else
#define TS_TMA_CLUSTER
#endif

#if TS_AB_IS_FP8
#include "ts_tma_half_fp8.h"
#endif

extern "C" __global__ void __launch_bounds__(THREADS, 1) TS_TMA_CLUSTER
gemm_tma_half(TS_GEMM_PARAMS(ts_ab_t, ts_c_t), const __grid_constant__ TsTensorMap map_a,
              const __grid_constant__ TsTensorMap map_b, const __grid_constant__ TsTensorMap map_c
#if TS_BLOCK_SCALES
              , const float* __restrict__ scale_a, const float* __restrict__ scale_b
#endif
) {
  extern __shared__ __attribute__((aligned(16))) unsigned char smem_raw[];
  __shared__ __align__(8) unsigned long long full_bar[STAGES], empty_bar[STAGES];
#if PINGPONG
  __shared__ __align__(8) unsigned long long loop_done[2];  // consumer c's K loop of a tile is through
#endif
  // The 128-byte swizzle is anchored to 1024-byte boundaries (SHARED_BYTES has the slack).
  const unsigned raw_addr = smem_addr(smem_raw);
  unsigned char* smem = smem_raw + (((raw_addr + 1023u) & ~1023u) - raw_addr);
  // Shared-window addresses of the stages and the barriers, taken once: the loops address them
  // by offset instead of converting a pointer (which reads the block's cluster id) every time.
  const unsigned stages_addr = (raw_addr + 1023u) & ~1023u;
  const unsigned full_addr = smem_addr(full_bar), empty_addr = smem_addr(empty_bar);
  (void)A;
  (void)B;
  (void)lda;
  (void)ldb;

  const int tid = threadIdx.x;
  // 0: producer, 1..CONSUMERS: consumers. Read from lane 0 so that the compiler knows it is the
  // same across the warp and keeps what derives from it (the wgmma descriptors, the barriers'
  // addresses) in uniform registers, instead of moving them there before every wgmma.
  const int wg = __shfl_sync(0xffffffffu, tid / WARPGROUP_THREADS, 0);
  const int lane = tid % TS_WARP_SIZE;
  const unsigned rank = cluster_rank();
  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full_bar[s], 1);                             // the producer's arrival (plus the bytes)
      mbar_init(&empty_bar[s], ROW_SHARES * 4 * CLUSTER_PEERS);  // one arrival per warp that reads the stage, in the cluster
    }
#if PINGPONG
    mbar_init(&loop_done[0], 4);
    mbar_init(&loop_done[1], 4);
#endif
    mbar_init_fence();
  }
  cluster_sync();  // every barrier of the cluster initialised before any copy or remote arrival

  // Units: (the pair's CLUSTER_M x CLUSTER_N tiles, K split) in grouped order; a cluster takes one
  // unit at a time, each of its blocks one of the tiles.
  const int tiles =
      ((M + BLOCK_M * CLUSTER_M - 1) / (BLOCK_M * CLUSTER_M)) * ((N + BLOCK_N * CLUSTER_N - 1) / (BLOCK_N * CLUSTER_N));
  const int units = tiles * SPLIT_K;
  const int first_unit = blockIdx.x / CLUSTER_SIZE, unit_stride = gridDim.x / CLUSTER_SIZE;

  if (wg == 0) {
    setmaxnreg_dec<PRODUCER_REGS>();
    // The first warp walks the ring; one lane of it, elected, issues each slice's copies (the
    // producer's loop is the bound of narrow tiles: each copy issued by `tid == 0` alone cost a
    // loop over the active lanes, elect_one_lane).
    if (tid < TS_WARP_SIZE) {
      if (tid == 0) {
        prefetch_tensormap(&map_a);
        prefetch_tensormap(&map_b);
      }
      Ring ring;
      for (int unit = first_unit; unit < units; unit += unit_stride) {
        const TsTile tile = unit_tile(unit, M, N, K, rank);
        for (int k0 = tile.k_begin; k0 < tile.k_end; k0 += BLOCK_K) {
          mbar_wait(empty_addr + 8u * ring.stage, ring.phase ^ 1u);  // the first lap finds every slot free
          if (elect_one_lane())
            load_slice(stages_addr + ring.stage * STAGE_BYTES, &map_a, &map_b, tile.block_m, tile.block_n, k0,
                       full_addr + 8u * ring.stage, rank);
          __syncwarp();
          ring.next();
        }
      }
    }
    // The producer warpgroup leaves without a cluster barrier: a cluster barrier waits only for the
    // threads that have not exited, and the consumers' (at their end, and around reduce_in_cluster)
    // keep each block until the other block's consumers are through with it (everything the other
    // producer multicasts into this block is consumed here first). One after the loop made ptxas
    // keep the producer's loop out of the uniform registers (its copies' operands moved over one
    // by one: 99 instructions a slice against 69 for a 64 x 96 pair), the bound of a pair's loads.
    return;
  }

  setmaxnreg_inc<CONSUMER_REGS>();
  const int c = wg - 1;                          // consumer index
  const int ctid = tid - WARPGROUP_THREADS;      // among the consumers' threads
  const int w = (tid / TS_WARP_SIZE) % 4;        // warp inside the warpgroup
  const unsigned long long desc_a0 =
      smem_descriptor(stages_addr + WG_FIRST_TILE(c) * 8192, DESC_LBO(A_K_MAJOR), DESC_SBO);
  const unsigned long long desc_b0 = smem_descriptor(stages_addr + A_TILE_BYTES, DESC_LBO(B_K_MAJOR), DESC_SBO);
  Ring ring;
  float acc[WG_M_TILES][ACC_N];
#if TS_AB_IS_FP8 && PROMOTE_OVERLAP
  float part[2][WG_M_TILES][ACC_N];  // two slices' products: one being multiplied, one being promoted
#elif TS_AB_IS_FP8
  float part[WG_M_TILES][ACC_N];  // one slice's products before their promotion into acc
#endif
#if TS_AB_IS_FP8
  // The reader of a tile's block scales (an empty one without them).
#if TS_BLOCK_SCALES
#define TILE_SCALE_READER() scale_reader(scale_a, scale_b, tile, WG_FIRST_TILE(c) / WG_M_TILES, w, lane, M, N, K)
#else
#define TILE_SCALE_READER() ScaleReader{}
#endif
#endif
  int turn = 0;  // the block's units in order (PINGPONG: consumer c takes every other one)
  for (int unit = first_unit; unit < units; unit += unit_stride, ++turn) {
    const TsTile tile = unit_tile(unit, M, N, K, rank);
#if PINGPONG
    if (turn % 2 != c) {  // the other consumer's tile: pass over its slices in the ring
      for (int k0 = tile.k_begin; k0 < tile.k_end; k0 += BLOCK_K) ring.next();
      continue;
    }
    // Wait for the other consumer's loop over the previous tile: its (turn / 2)-th, or for
    // consumer 0 its (turn / 2 - 1)-th, completes that barrier's phase of the same number.
    if (turn > 0) mbar_wait(&loop_done[1 - c], (unsigned)((c == 1 ? turn / 2 : turn / 2 - 1) & 1));
#endif
#if TMA_STORE
    const unsigned tile_bias = load_tile_bias(tile, c, 32 * w + lane, bias, M, N);  // read now, added in the epilogue
#endif
#pragma unroll
    for (int t = 0; t < WG_M_TILES; ++t)
#pragma unroll
      for (int i = 0; i < ACC_N; ++i) acc[t][i] = 0.0f;
    int held = -1;  // the stage whose wgmma group is still in flight
#if TS_AB_IS_FP8 && PROMOTE_OVERLAP
    // Two buffers of products: slice n goes into part[n % 2] while slice n - 1's, finished, are
    // promoted, so the tensor cores never wait for a promotion (at the cost of a third set of
    // accumulator registers). The loop takes two slices a turn so that each buffer is named when
    // compiling (registers cannot be indexed at run time).
    SliceScales done_scales{};  // the scales of the slice whose products wait for their promotion
    const ScaleReader reader = TILE_SCALE_READER();
    ScalePipe pipe = scale_pipe(reader, tile.k_begin);  // the factors of the next two slices to issue
    // (Every tile has at least one slice here: unit_tile.)
    int k0 = tile.k_begin;
#if PROMOTE_SLICES == 2
    // Pairs of slices: two into part[0], promoted during the first of the next two into part[1].
    for (bool first = true;; first = false) {
      fp8_overlapped_step(acc, part[0], part[1], !first, done_scales, pipe, reader, ring, held, k0, full_addr,
                          empty_addr, desc_a0, desc_b0, tile, lane);
      if (overlapped_tile_done(k0, tile, acc, part[0], done_scales)) break;
      fp8_overlapped_second(part[0], ring, held, full_addr, empty_addr, desc_a0, desc_b0, lane);
      if (overlapped_tile_done(k0, tile, acc, part[0], done_scales)) break;
      fp8_overlapped_step(acc, part[1], part[0], true, done_scales, pipe, reader, ring, held, k0, full_addr,
                          empty_addr, desc_a0, desc_b0, tile, lane);
      if (overlapped_tile_done(k0, tile, acc, part[1], done_scales)) break;
      fp8_overlapped_second(part[1], ring, held, full_addr, empty_addr, desc_a0, desc_b0, lane);
      if (overlapped_tile_done(k0, tile, acc, part[1], done_scales)) break;
    }
#else
    for (bool first = true;; first = false) {
      fp8_overlapped_step(acc, part[0], part[1], !first, done_scales, pipe, reader, ring, held, k0, full_addr,
                          empty_addr, desc_a0, desc_b0, tile, lane);
      if (overlapped_tile_done(k0, tile, acc, part[0], done_scales)) break;
      fp8_overlapped_step(acc, part[1], part[0], true, done_scales, pipe, reader, ring, held, k0, full_addr,
                          empty_addr, desc_a0, desc_b0, tile, lane);
      if (overlapped_tile_done(k0, tile, acc, part[1], done_scales)) break;
    }
#endif
#else
#if TS_AB_IS_FP8
    int in_part = 0;  // slices summed in part since its last promotion
    const ScaleReader reader = TILE_SCALE_READER();
    ScalePipe pipe = scale_pipe(reader, tile.k_begin);  // the factors of the next two slices to issue
#endif
    for (int k0 = tile.k_begin; k0 < tile.k_end; k0 += BLOCK_K) {
      mbar_wait(full_addr + 8u * ring.stage, ring.phase);
      wgmma_fence();
      const unsigned long long off = (unsigned long long)(ring.stage * (STAGE_BYTES >> 4));
#if TS_AB_IS_FP8
      // The products of PROMOTE_SLICES slices, summed by the tensor cores in their FP8 precision,
      // are promoted into the fp32 accumulators once those slices are done (at least every 256
      // of K, what the tolerance assumes). Between promotions the groups overlap as the 16-bit
      // loop's do: the wait lets the latest group run while the previous stage is released.
      multiply_stage_fp8(part, desc_a0 + off, desc_b0 + off, in_part > 0);
      wgmma_commit();
      const SliceScales scales = take_scales(pipe, reader, k0 + 2 * BLOCK_K);
      if (++in_part == PROMOTE_SLICES || k0 + BLOCK_K >= tile.k_end) {
        wgmma_wait_all(part);
        if (held >= 0) release_stage(empty_addr + 8u * held, lane);
        release_stage(empty_addr + 8u * ring.stage, lane);
        held = -1;
        in_part = 0;
        promote(acc, part, scales, tile);
      } else {
        wgmma_wait<1>();
        if (held >= 0) release_stage(empty_addr + 8u * held, lane);
        held = ring.stage;
      }
#else
      multiply_stage(acc, desc_a0 + off, desc_b0 + off);
      wgmma_commit();
      wgmma_wait<1>();  // the previous slice's group is done: its stage can be refilled
      if (held >= 0) release_stage(empty_addr + 8u * held, lane);
      held = ring.stage;
#endif
      ring.next();
    }
#endif
#if PINGPONG
    if (lane == 0) mbar_arrive(&loop_done[c]);  // every full barrier of this tile has been waited on
#endif
    wgmma_wait_all(acc);
    if (held >= 0) release_stage(empty_addr + 8u * held, lane);
#if CLUSTER_K > 1
    reduce_in_cluster(acc, smem, tile, ctid, C, bias, M, N, ldc, alpha, beta, epilogue_slope);
    continue;
#endif
#if SPLIT_K > 1
    if (!gather_splits(acc, tile, ctid, workspace, M)) continue;  // another block stores the tile
#endif
#if TMA_STORE
    // C's buffers (1024-byte aligned, as the 128-byte swizzle needs), then the bias stashes.
    store_tile_via_tma(acc, tile_bias, stages_addr + STAGES * STAGE_BYTES + c * 8192,
                       stages_addr + STAGES * STAGE_BYTES + CONSUMERS * 8192 + c * TMA_BIAS_BYTES, tile, c, w, lane,
                       tid % WARPGROUP_THREADS == 0, &map_c, alpha, epilogue_slope);
#elif SMEM_EPILOGUE
    store_tile_via_smem(acc, smem + STAGES * STAGE_BYTES + (c * 4 + w) * 2048, tile, c * 4 + w, lane, C, bias, M, N,
                        ldc, alpha, epilogue_slope);
#else
    wgmma_store_tile(acc, tile, WG_FIRST_TILE(c) / WG_M_TILES, w, lane, ctid, C, bias, workspace, M, N, ldc, alpha, beta,
                     epilogue_slope);
#endif
  }
#if TMA_STORE
  if (tid % WARPGROUP_THREADS == 0) tma_store_wait_all();  // the block's shared memory outlives its stores
#else
  (void)map_c;
#endif
#if CLUSTER_PEERS > 1
  cluster_sync();
#endif
}
