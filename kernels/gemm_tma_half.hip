// gemm_tma_half: fp16/bf16 GEMM with fp32 accumulation for Hopper (sm_90a), built the way
// the fastest published Hopper kernels are: operands brought into shared memory by the
// tensor memory accelerator (TMA), a warp-specialised pipeline on mbarriers, wgmma from
// shared memory, and an optional persistent grid. C in fp32, fp16 or bf16, every layout.
//
// Roles. The block is CONSUMERS + 1 warpgroups. Warpgroup 0 is the producer: it gives most
// of its registers back (setmaxnreg.dec) and one of its threads issues, for each 64-deep K
// slice, the TMA copies of A's and B's tiles into a free stage, announcing their bytes on
// the stage's "full" mbarrier. The consumer warpgroups take registers (setmaxnreg.inc), each
// owns BLOCK_M / CONSUMERS rows of the block tile across the whole BLOCK_N width, waits for a
// stage to be full, multiplies it with wgmma (m64nBLOCK_Nk16, one group per slice, the
// previous one left in flight) and, once that previous group has finished reading its stage,
// hands the stage back on its "empty" mbarrier. No thread waits on a block-wide barrier in
// the K loop: the producer runs up to STAGES slices ahead, across tile boundaries.
//
// Tensor maps. The runtime encodes one map per operand (launch.tensor_maps in the JSON:
// box 64 x 64 elements, 128-byte swizzle) and passes them after the kernel ABI's parameters.
// A box is 64 rows of 128 bytes: for a K-major operand (A row-major, B column-major) 64 M/N
// rows of one K slice, for an MN-major one 64 K rows of 64 M/N values; either way it lands
// as one 8 KiB piece of the layouts ts_wgmma_half.h describes, so BLOCK_M / 64 boxes fill A's tile
// and BLOCK_N / 64 B's. Reads outside the matrix are zero-filled by the TMA unit (and still
// count their bytes), so M, N and K need not be multiples of the tile; a leading dimension
// whose byte stride is not a multiple of 16 cannot be described and is refused before
// compiling (the JSON's constraints).
//
// Tiles. Units are (output tile, K split) pairs in grouped order (ts_tile.h). PERSISTENT 1
// launches min(SMs, units) blocks that walk the units with a stride of the grid, so one
// tile's epilogue overlaps the next tile's loads; PERSISTENT 0 launches one block per unit.
// Clusters. CLUSTER_M 2 launches pairs of blocks as thread-block clusters (__cluster_dims__)
// on two tiles stacked along M, which need the same B: each block loads its own A and every
// other 64-wide box of B, multicast by the TMA unit into both blocks' shared memory (half the
// L2 -> SM traffic for B). CLUSTER_N 2 is the same for two tiles side by side along N, which
// share A. A stage is refilled only once the consumers of both blocks have released it: every
// consumer warp arrives on the empty barrier of both blocks (lane r on block r's, the remote
// one without a cluster-scope release: that would wait for the warp's earlier stores of C
// every time, which made the pair 0.6x of one block). The pair walks the same units in step;
// where the matrix has an odd number of tiles along the pair's direction the second block's
// tile lies outside it, loads zeros and stores nothing.
//
// Ping-pong: PINGPONG 1 (two consumers, persistent) gives each consumer warpgroup whole tiles
// in turn instead of half of every tile: consumer 0 takes the block's 1st, 3rd, ... unit and
// consumer 1 the 2nd, 4th, ..., each skipping the other's slices in the ring. One consumer's
// epilogue (stores of C) then runs while the other multiplies, instead of both stopping the
// tensor cores at the end of every tile. Each consumer holds a whole BLOCK_M x BLOCK_N tile
// (at most 128 accumulators a thread: 128 x 128 or 64 x 256). The consumers' K loops take
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
// Epilogue: with EPILOGUE_SMEM (row-major C, beta 0, no split-K) each consumer warp passes its
// 16 rows through 2 KiB of its own shared memory, one 128-byte-wide column chunk at a time,
// so that C is written in whole 128-byte lines by 16-byte stores instead of 4- or 8-byte
// pieces of eight rows at once; otherwise from the accumulator registers (ts_wgmma_half.h).
// Split-K partials are summed in a fixed order by the last block of a tile (deterministic).
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
// GROUP_M and SPLIT_K take their defaults (8, 1) from ts_tile.h.
#include "ts_gemm_common.h"

#define BLOCK_K 64  // one 128-byte swizzle row of 16-bit values
#define WARPGROUP_THREADS 128
#define THREADS ((CONSUMERS + 1) * WARPGROUP_THREADS)
// How many consumers share a tile's rows (1 with PINGPONG: each has whole tiles), and the first
// 64-row tile of consumer c's share.
#define ROW_SHARES (PINGPONG ? 1 : CONSUMERS)
#define WG_FIRST_TILE(c) ((PINGPONG ? 0 : (c)) * WG_M_TILES)
#define WG_M_TILES (BLOCK_M / (64 * ROW_SHARES))
#define ACC_N (BLOCK_N / 2)
#define A_TILE_BYTES (BLOCK_M * BLOCK_K * 2)
#define B_TILE_BYTES (BLOCK_N * BLOCK_K * 2)
#define STAGE_BYTES (A_TILE_BYTES + B_TILE_BYTES)
#define A_K_MAJOR TS_A_ROW_MAJOR
#define B_K_MAJOR (!TS_B_ROW_MAJOR)
// Registers the producer keeps: what one thread issuing copies needs. With the consumers'
// CONSUMER_REGS the block stays within the SM's 64 Ki registers.
#define PRODUCER_REGS 40
// Only the consumers write C: split-K's reduction runs on them, with a named barrier.
#define TS_TILE_THREADS (CONSUMERS * WARPGROUP_THREADS)
#define TS_TILE_SYNC() asm volatile("bar.sync 1, %0;\n" ::"n"(CONSUMERS * WARPGROUP_THREADS) : "memory")

// Blocks of a cluster that multicast into each other's stages (a pair along M shares B, along N A).
#define CLUSTER_PEERS (CLUSTER_M * CLUSTER_N)
#define CLUSTER_SIZE (CLUSTER_PEERS * CLUSTER_K)

#include "ts_tile.h"
#include "ts_wgmma_half.h"
#include "ts_cluster.h"
#include "ts_tma.h"

static_assert(BLOCK_M % (64 * ROW_SHARES) == 0, "each consumer owns whole 64-row tiles");
static_assert(PINGPONG == 0 || (CONSUMERS == 2 && PERSISTENT == 1 && SPLIT_K == 1 && CLUSTER_SIZE == 1),
              "ping-pong: two consumers taking turns over a persistent block's tiles, no split or cluster");
static_assert(BLOCK_N % 64 == 0 && BLOCK_N <= 256, "BLOCK_N: 64, 128, 192 or 256");
static_assert(STAGES >= 2, "at least two stages");
static_assert(CLUSTER_M == 1 || (CLUSTER_M == 2 && SPLIT_K == 1 && BLOCK_N >= 128),
              "clusters: pairs along M, without split-K, with at least two B boxes to share");
static_assert(CLUSTER_N == 1 || (CLUSTER_N == 2 && CLUSTER_M == 1 && SPLIT_K == 1 && BLOCK_M >= 128),
              "clusters along N: pairs, without split-K or a pair along M, with at least two A boxes to share");
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
// r, so the pair's arrivals leave the warp at once rather than one after the other.
__device__ __forceinline__ void release_stage(unsigned long long* bar, int lane) {
#if CLUSTER_PEERS > 1
  if (lane == (int)cluster_rank())
    mbar_arrive(bar);
  else if (lane < CLUSTER_PEERS)
    ts_mbar_arrive_cluster(bar, (unsigned)lane);
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

// The copies of one K slice (at k0) of the tile at (block_m, block_n) into a stage; with a
// cluster, this block's share of B's boxes goes to both blocks.
__device__ __forceinline__ void load_slice(unsigned char* stage, const TsTensorMap* map_a, const TsTensorMap* map_b,
                                           int block_m, int block_n, int k0, unsigned long long* full,
                                           unsigned rank) {
  mbar_expect_bytes(full, STAGE_BYTES);
#pragma unroll
  for (int j = 0; j < BLOCK_M / 64; ++j) {
    const int c0 = A_K_MAJOR ? k0 : block_m + 64 * j, c1 = A_K_MAJOR ? block_m + 64 * j : k0;
#if CLUSTER_N > 1
    if (j % CLUSTER_N == (int)rank)
      tma_load_box_multicast(stage + j * 8192, map_a, c0, c1, full, (1u << CLUSTER_N) - 1);
#else
    tma_load_box(stage + j * 8192, map_a, c0, c1, full);
#endif
  }
#pragma unroll
  for (int j = 0; j < BLOCK_N / 64; ++j) {
    const int c0 = B_K_MAJOR ? k0 : block_n + 64 * j, c1 = B_K_MAJOR ? block_n + 64 * j : k0;
#if CLUSTER_M > 1
    if (j % CLUSTER_M == (int)rank)
      tma_load_box_multicast(stage + A_TILE_BYTES + j * 8192, map_b, c0, c1, full, (1u << CLUSTER_M) - 1);
#else
    tma_load_box(stage + A_TILE_BYTES + j * 8192, map_b, c0, c1, full);
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
  return tile;
}

#define SMEM_EPILOGUE (EPILOGUE_SMEM && SPLIT_K == 1 && CLUSTER_K == 1 && TS_C_ROW_MAJOR && !TS_HAS_BETA)
#if SMEM_EPILOGUE
#define CHUNK_COLS (128 / (int)sizeof(ts_c_t))  // columns of C in one 128-byte line
static_assert(BLOCK_N % CHUNK_COLS == 0, "whole chunks per tile");

// Writes this warp's 16 rows (first_row..) of a 64-row accumulator tile to C through buf
// (2 KiB, this warp's own). Chunk q is columns q * CHUNK_COLS.. of the tile: first every lane
// puts its finished values there (16-byte pieces of row r swizzled by r % 8: no bank
// conflicts), then every lane stores 16-byte pieces, 8 lanes per 128-byte row.
__device__ __forceinline__ void store_rows_via_smem(const float (&acc)[ACC_N], unsigned char* buf, int first_row,
                                                    int first_col, int lane, ts_c_t* __restrict__ C,
                                                    const ts_c_t* __restrict__ bias, int M, int N, int ldc,
                                                    float alpha, float slope) {
  constexpr int kSz = (int)sizeof(ts_c_t);
#pragma unroll
  for (int q = 0; q < BLOCK_N / CHUNK_COLS; ++q) {
#pragma unroll
    for (int ii = 0; ii < CHUNK_COLS / 4; ++ii) {
      const int i = q * CHUNK_COLS / 2 + 2 * ii;
      const int r = lane / 4 + 8 * ((i % 4) / 2);
      const int col = acc_col(lane, i) - q * CHUNK_COLS;  // even
      const int gm = first_row + r, gn = first_col + q * CHUNK_COLS + col;
      const bool in = gm < M && gn < N;  // the bias is read only inside C
      const float v0 = in ? ts_epilogue(alpha * acc[i], gm, gn, bias, slope) : 0.0f;
      const float v1 = in && gn + 1 < N ? ts_epilogue(alpha * acc[i + 1], gm, gn + 1, bias, slope) : 0.0f;
      const int byte = col * kSz;
      unsigned char* dst = buf + r * 128 + ((((byte >> 4) ^ (r & 7))) << 4) + (byte & 15);
#if TS_C_DTYPE == 0
      *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
#else
      *reinterpret_cast<unsigned*>(dst) = (unsigned)ts_c_from_float(v0) | ((unsigned)ts_c_from_float(v1) << 16);
#endif
    }
    __syncwarp();
#pragma unroll
    for (int it = 0; it < 4; ++it) {
      const int r = lane / 8 + 4 * it, piece = lane % 8;
      const int gm = first_row + r, gn = first_col + q * CHUNK_COLS + piece * (16 / kSz);
      const uint4 v = *reinterpret_cast<const uint4*>(buf + r * 128 + ((piece ^ (r & 7)) << 4));
      if (gm >= M || gn >= N) continue;
      ts_c_t* out = C + (long long)gm * ldc + gn;
      if (gn + 16 / kSz <= N) {
        *reinterpret_cast<uint4*>(out) = v;
      } else {
        const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int j = 0; j < 16 / kSz; ++j) {
#if TS_C_DTYPE == 0
          if (gn + j < N) out[j] = __uint_as_float(words[j]);
#else
          if (gn + j < N) out[j] = (ts_c_t)(words[j / 2] >> (16 * (j % 2)));
#endif
        }
      }
    }
    __syncwarp();
  }
}
#define EPILOGUE_BYTES (CONSUMERS * 4 * 2048)
#else
#define EPILOGUE_BYTES 0
#endif

#if CLUSTER_K > 1
// The tile's sum over the cluster (CLUSTER_K > 1), called by every consumer thread once the
// tile's wgmma groups are done. Partials are kept fragment-major ([item][thread] float4, item
// = 4 accumulators of one thread: columns n, n + 1 of rows m and m + 8), so both the writes and
// the cluster's reads are whole 16-byte pieces without bank conflicts; block r sums items
// r * kPer.. over ranks 0..CLUSTER_K-1 and skips those wholly outside C (most of a 64-row
// tile when M = 16) without reading them.
__device__ __forceinline__ void reduce_in_cluster(const float (&acc)[WG_M_TILES][ACC_N], unsigned char* smem,
                                                  const TsTile& tile, int ctid, ts_c_t* __restrict__ C,
                                                  const ts_c_t* __restrict__ bias, int M, int N, int ldc,
                                                  float alpha, float beta, float slope) {
  constexpr int kItemsPerThread = WG_M_TILES * ACC_N / 4;
  constexpr int kItems = kItemsPerThread * TS_TILE_THREADS;
  constexpr int kPer = (kItems + CLUSTER_K - 1) / CLUSTER_K;
  float* part = reinterpret_cast<float*>(smem);
  TS_TILE_SYNC();  // every consumer's wgmma has read the stages this partial overwrites
#pragma unroll
  for (int f = 0; f < kItemsPerThread; ++f) {
    const float* a = &acc[f / (ACC_N / 4)][4 * (f % (ACC_N / 4))];
    *reinterpret_cast<float4*>(part + (f * TS_TILE_THREADS + ctid) * 4) = make_float4(a[0], a[1], a[2], a[3]);
  }
  ts_cluster_sync();
  const int rank = (int)ts_cluster_rank();
  for (int item = rank * kPer + ctid; item < min(kItems, (rank + 1) * kPer); item += TS_TILE_THREADS) {
    const int f = item / TS_TILE_THREADS, th = item % TS_TILE_THREADS;
    const int t = f / (ACC_N / 4), i = 4 * (f % (ACC_N / 4));
    const int wg = th / WARPGROUP_THREADS, w = (th / TS_WARP_SIZE) % 4, ln = th % TS_WARP_SIZE;
    const int gm = tile.block_m + acc_row(wg, w, ln, t, i), gn = tile.block_n + acc_col(ln, i);
    if (gm >= M || gn >= N) continue;  // so are its other three values
    float4 p[CLUSTER_K];
#pragma unroll
    for (int r = 0; r < CLUSTER_K; ++r) p[r] = ts_ld_cluster4(part + item * 4, r);
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int r = 0; r < CLUSTER_K; ++r) {  // rank order: deterministic
      sum.x += p[r].x;
      sum.y += p[r].y;
      sum.z += p[r].z;
      sum.w += p[r].w;
    }
    ts_store_c(C, gm, gn, ldc, sum.x, alpha, beta, bias, slope);
    if (gn + 1 < N) ts_store_c(C, gm, gn + 1, ldc, sum.y, alpha, beta, bias, slope);
    if (gm + 8 < M) {
      ts_store_c(C, gm + 8, gn, ldc, sum.z, alpha, beta, bias, slope);
      if (gn + 1 < N) ts_store_c(C, gm + 8, gn + 1, ldc, sum.w, alpha, beta, bias, slope);
    }
  }
  ts_cluster_sync();  // no block leaves while another still reads its shared memory
}
#endif

#if CLUSTER_K > 1
#define TS_TMA_CLUSTER __cluster_dims__(CLUSTER_K, 1, 1)
#elif CLUSTER_PEERS > 1
#define TS_TMA_CLUSTER __cluster_dims__(CLUSTER_PEERS, 1, 1)
#else
#define TS_TMA_CLUSTER
#endif

extern "C" __global__ void __launch_bounds__(THREADS, 1) TS_TMA_CLUSTER
gemm_tma_half(TS_GEMM_PARAMS(ts_ab_t, ts_c_t), const __grid_constant__ TsTensorMap map_a,
              const __grid_constant__ TsTensorMap map_b) {
  extern __shared__ __attribute__((aligned(16))) unsigned char smem_raw[];
  __shared__ __align__(8) unsigned long long full_bar[STAGES], empty_bar[STAGES];
#if PINGPONG
  __shared__ __align__(8) unsigned long long loop_done[2];  // consumer c's K loop of a tile is through
#endif
  // The 128-byte swizzle is anchored to 1024-byte boundaries (SHARED_BYTES has the slack).
  const unsigned raw_addr = smem_addr(smem_raw);
  unsigned char* smem = smem_raw + (((raw_addr + 1023u) & ~1023u) - raw_addr);
  (void)A;
  (void)B;
  (void)lda;
  (void)ldb;

  const int tid = threadIdx.x;
  const int wg = tid / WARPGROUP_THREADS;  // 0: producer, 1..CONSUMERS: consumers
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
    if (tid == 0) {
      prefetch_tensormap(&map_a);
      prefetch_tensormap(&map_b);
      Ring ring;
      for (int unit = first_unit; unit < units; unit += unit_stride) {
        const TsTile tile = unit_tile(unit, M, N, K, rank);
        for (int k0 = tile.k_begin; k0 < tile.k_end; k0 += BLOCK_K) {
          mbar_wait(&empty_bar[ring.stage], ring.phase ^ 1u);  // the first lap finds every slot free
          load_slice(smem + ring.stage * STAGE_BYTES, &map_a, &map_b, tile.block_m, tile.block_n, k0,
                     &full_bar[ring.stage], rank);
          ring.next();
        }
      }
    }
#if CLUSTER_PEERS > 1
    __syncwarp();
    cluster_sync();  // neither block leaves while the other may still write to or arrive in it
#elif CLUSTER_K > 1
    __syncwarp();
    ts_cluster_sync();  // the consumers' two cluster barriers around the sum (reduce_in_cluster)
    ts_cluster_sync();
#endif
    return;
  }

  setmaxnreg_inc<CONSUMER_REGS>();
  const int c = wg - 1;                          // consumer index
  const int ctid = tid - WARPGROUP_THREADS;      // among the consumers' threads
  const int w = (tid / TS_WARP_SIZE) % 4;        // warp inside the warpgroup
  const unsigned long long desc_a0 = smem_descriptor(smem + WG_FIRST_TILE(c) * 8192, DESC_LBO(A_K_MAJOR), DESC_SBO);
  const unsigned long long desc_b0 = smem_descriptor(smem + A_TILE_BYTES, DESC_LBO(B_K_MAJOR), DESC_SBO);
  Ring ring;
  float acc[WG_M_TILES][ACC_N];
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
#pragma unroll
    for (int t = 0; t < WG_M_TILES; ++t)
#pragma unroll
      for (int i = 0; i < ACC_N; ++i) acc[t][i] = 0.0f;
    int held = -1;  // the stage whose wgmma group is still in flight
    for (int k0 = tile.k_begin; k0 < tile.k_end; k0 += BLOCK_K) {
      mbar_wait(&full_bar[ring.stage], ring.phase);
      wgmma_fence();
      const unsigned long long off = (unsigned long long)(ring.stage * (STAGE_BYTES >> 4));
      multiply_stage(acc, desc_a0 + off, desc_b0 + off);
      wgmma_commit();
      wgmma_wait<1>();  // the previous slice's group is done: its stage can be refilled
      if (held >= 0) release_stage(&empty_bar[held], lane);
      held = ring.stage;
      ring.next();
    }
#if PINGPONG
    if (lane == 0) mbar_arrive(&loop_done[c]);  // every full barrier of this tile has been waited on
#endif
    wgmma_wait_all(acc);
    if (held >= 0) release_stage(&empty_bar[held], lane);
#if CLUSTER_K > 1
    reduce_in_cluster(acc, smem, tile, ctid, C, bias, M, N, ldc, alpha, beta, epilogue_slope);
    continue;
#endif
#if SMEM_EPILOGUE
    // 16-byte stores need C's rows 16-byte aligned; otherwise the register path below.
    if ((ldc * (int)sizeof(ts_c_t)) % 16 == 0 && reinterpret_cast<unsigned long long>(C) % 16 == 0) {
      unsigned char* buf = smem + STAGES * STAGE_BYTES + (c * 4 + w) * 2048;
#pragma unroll
      for (int t = 0; t < WG_M_TILES; ++t)
        store_rows_via_smem(acc[t], buf, tile.block_m + (WG_FIRST_TILE(c) + t) * 64 + 16 * w, tile.block_n, lane, C,
                            bias, M, N, ldc, alpha, epilogue_slope);
      continue;
    }
#endif
    wgmma_store_tile(acc, tile, WG_FIRST_TILE(c) / WG_M_TILES, w, lane, ctid, C, bias, workspace, M, N, ldc, alpha, beta,
                     epilogue_slope);
  }
#if CLUSTER_PEERS > 1
  cluster_sync();
#endif
}
