// gemm_stream: fp16/bf16 GEMM for the decode shapes of inference (M <= 16 tokens against a large
// weight), in the layout frameworks use: Y = X W^T with X (A) row-major M x K and the weight W
// stored [N][K] (B column-major, "NT"). fp32 accumulation, C in fp32, fp16 or bf16, every epilogue.
// The product is a stream over W: the goal is to read it once at the speed of the read floor.
//
// No shared-memory pipeline: every lane loads W straight from global memory into the registers
// that mma.sync takes, 16 bytes at a time, the same way the fastest read of a buffer does (many
// independent 16-byte loads in flight per thread, nothing between memory and the registers).
// That works because a dot product may visit K in any order, as long as both operands use the
// same one. The warp computes C^T = W X^T on m16n8k16 tiles (16 rows of W on the instruction's
// 16-row side, 8 rows of X on its 8-wide side). For a 32-deep step lane (g, t) (g = lane / 4,
// t = lane % 4) loads W[n0 + g][k + 8t .. k + 8t + 7] and W[n0 + g + 8][same] (two 16-byte
// loads) and X[m0 + g][k + 8t .. k + 8t + 7] (one); the four 32-bit words of each go to the
// instruction's fragments so that the instruction's k positions 2t, 2t+1, 2t+8, 2t+9 of half s
// are the actual k + 8t + 4s + 0..3 (ts_stream_mma below). Over the four t and two halves that is
// every k of the step once, for W and X alike. AMD CDNA (gfx908, gfx90a, gfx94x) does the same on
// v_mfma_f32_16x16x16 (ts_mfma.h): lane l loads one 16-byte piece of W (row l % 16) and of X (row
// l % 16), both at k + 8 (l / 16), and the two 16-deep halves take its elements 0..3 and 4..7; so
// X's tiles are 16 rows there (BLOCK_M a multiple of 16) and the load hints are NVIDIA's only.
//
// A warp owns 16 rows of W and a share of the block's K range, walked in chunks of UNROLL steps
// whose loads are all issued before any is used (with PREFETCH the next chunk's loads are issued
// before this chunk's arithmetic). WARPS_N warps side by side take 16 rows each; WARPS_K warps
// split the block's K range chunk by chunk (interleaved, so that the block reads neighbouring
// memory at once) and add their partials through shared memory in warp order. SPLIT_K blocks split
// K again; the last block of a tile to finish adds the partials in split order through the float
// workspace (deterministic: the result does not depend on which block finishes last), or with
// REDUCE 1 (NVIDIA sm_90, SPLIT_K <= 8) the split's blocks form a thread-block cluster and add them
// in split order through distributed shared memory. X is small
// and read by every block: it goes through L1 (ld.global.nc), while W is read with
// L1::no_allocate (HINT 1, 2) so that it does not evict X.
//
// Edges: rows of W past N and rows of X past M are clamped to the last row (their results lie
// outside C and are not stored); in the last chunk of K the 16-byte pieces past K are zeros (K
// fills whole pieces, so a piece lies wholly inside or outside). Needs 16-byte rows (K, LDA and
// LDB multiples of 16 bytes), which the template's constraints require. NVIDIA sm_80+ (mma.sync)
// or AMD CDNA (MFMA); the other layouts are served by gemm_decode.
//
// FP8 (e4m3, e5m2, mixed; NVIDIA sm_89+): the same bytes in the same registers, a 16-byte piece
// holding 16 values of K instead of 8 (every "8t" above is 16t and a step is 64 deep), on
// m16n8k32 (ts_mma_sm80.h), each step's two products promoted into the fp32 accumulators.
// Block-scaled FP8 (TS_BLOCK_SCALES) applies each step's factors at that promotion: a step is 64
// deep and starts on a multiple of 64, so it lies in one 128-deep block of K, and a warp's 16 rows
// of W lie in one 128-row block of W's factors (see TsStreamScaleRows).
#ifndef BLOCK_M
#define BLOCK_M 16
#endif
#ifndef WARPS_N
#define WARPS_N 2
#endif
#ifndef WARPS_K
#define WARPS_K 4
#endif
#ifndef UNROLL
#define UNROLL 2
#endif
#ifndef SPLIT_K
#define SPLIT_K 2
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif
#ifndef HINT
#define HINT 0
#endif
#ifndef REDUCE
#define REDUCE 0
#endif
#ifndef TS_AB_DTYPE
#define TS_AB_DTYPE 2
#endif
#ifndef TS_B_ROW_MAJOR
#define TS_B_ROW_MAJOR 0
#endif
#include "ts_gemm_common.h"
#include "ts_mfma.h"
#include "ts_mma_sm80.h"
#include "ts_split_k.h"

// Rows of X per instruction tile (TS_MMA_N: 8 for mma.sync, 16 for the MFMA) and 16-byte pieces of
// W a lane loads per step (NVIDIA: rows g and g + 8 of the warp's 16; AMD: one row of 16 per lane).
#if defined(TS_VENDOR_AMD)
#define W_PIECES 1
typedef TsMfma16x16Acc Acc;  // the instruction's rows are columns n of C, its columns rows m
#else
#define W_PIECES 2
typedef TsMma16x8Acc Acc;
#endif
#define M_TILES (BLOCK_M / TS_MMA_N)
#define THREADS (WARPS_N * WARPS_K * TS_WARP_SIZE)
#define PIECE_K (16 / (int)sizeof(ts_ab_t))  // K in a lane's 16-byte piece: 8 (16-bit), 16 (FP8)
#define STEP_K (4 * PIECE_K)       // K per step: 16 bytes of K per lane, four lanes per row
#define CHUNK_K (STEP_K * UNROLL)  // K per warp per chunk
#define ROWS_N (16 * WARPS_N)      // rows of W (columns of C) per block
#define TILE_FLOATS (ROWS_N * BLOCK_M)  // one block's partial tile: M_TILES x 4 floats a lane

#if !TS_A_ROW_MAJOR || TS_B_ROW_MAJOR
#error "gemm_stream: A row-major and B column-major (NT) only"
#endif
#if BLOCK_M % TS_MMA_N != 0 || BLOCK_M > 16
#error "gemm_stream: BLOCK_M is 8 (NVIDIA) or 16"
#endif
#if THREADS > 1024
#error "gemm_stream: at most 1024 threads a block"
#endif
#if REDUCE && (defined(TS_VENDOR_AMD) || SPLIT_K < 2 || SPLIT_K > 8)
#error "gemm_stream: REDUCE 1 (the split's blocks summed in a cluster) needs NVIDIA sm_90 and 2 <= SPLIT_K <= 8"
#endif
#ifndef TS_BLOCK_SCALES
#define TS_BLOCK_SCALES 0
#endif
#if TS_BLOCK_SCALES && (!TS_AB_IS_FP8 || defined(TS_VENDOR_AMD))
#error "gemm_stream: block scales are for FP8 on NVIDIA"
#endif

typedef unsigned long long ts_u64;

// 16 bytes of W: a non-coherent load; HINT 1 adds L1::no_allocate and a 256-byte L2 prefetch,
// HINT 2 L1::no_allocate and an evict-first L2 policy (lines read once leave first).
__device__ __forceinline__ uint4 ts_stream_load_w(const ts_ab_t* p, ts_u64 policy) {
  uint4 v;
#if defined(TS_VENDOR_AMD)
  v = *reinterpret_cast<const uint4*>(p);  // HINT is 0 there (the template's rules)
  (void)policy;
#elif HINT == 1
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  (void)policy;
#elif HINT == 2
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(policy));
#else
  v = __ldg(reinterpret_cast<const uint4*>(p));
  (void)policy;
#endif
  return v;
}

__device__ __forceinline__ ts_u64 ts_stream_policy() {
  ts_u64 policy = 0;
#if HINT == 2 && !defined(TS_VENDOR_AMD)
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
#endif
  return policy;
}

#if TS_BLOCK_SCALES
// Block scales (registry/kernel_template.h): scale_a holds one fp32 factor per row of X per
// 128-deep block of K (M x kbs, row-major), scale_b one per 128 x 128 block of W (kbs x
// ceil(N / 128), row-major). A step's products for row m of X and the warp's rows of W take
// scale_a[m][kb] * scale_b[kb][n0 / 128]. Chunks start on multiples of CHUNK_K, so with UNROLL even
// steps 2j and 2j + 1 share a block of K and one load of factors serves both.
#define SCALE_STEPS (UNROLL % 2 == 0 ? 2 : 1)
#define SCALE_LOADS (UNROLL / SCALE_STEPS)
struct TsStreamScaleRows {
  const float* a[M_TILES][2];  // scale_a at the lane's two rows of X in each tile (TsMma16x8Acc::col: i % 2)
  const float* b;              // scale_b at the warp's 128-row block of W
  int kbs, nbs;                // blocks of K; 128-row blocks of W (scale_b's row stride)
};
__device__ __forceinline__ TsStreamScaleRows ts_stream_scale_rows(const float* __restrict__ scale_a,
                                                                  const float* __restrict__ scale_b, int n0, int m0,
                                                                  int lane, int M, int N, int K) {
  TsStreamScaleRows r;
  r.kbs = (K + 127) / 128;
  r.nbs = (N + 127) / 128;
#pragma unroll
  for (int mt = 0; mt < M_TILES; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h)  // rows past M read the last row's factors: their results are not stored
      r.a[mt][h] = scale_a + (long long)min(m0 + Acc::col(lane, mt, h), M - 1) * r.kbs;
  r.b = scale_b + min(n0, N - 1) / 128;
  return r;
}
struct TsStreamScales {
  float a[SCALE_LOADS][M_TILES][2];
  float b[SCALE_LOADS];
};
#else
struct TsStreamScaleRows {};  // unscaled or per-tensor (on alpha): nothing to read
#endif

#if defined(TS_VENDOR_AMD)
// One 32-deep step on one 16-row tile of X: lane l's piece of W (row l % 16) and of X (row l % 16),
// both at k + 8 (l / 16); MFMA half s takes elements 4s .. 4s + 3 of each as its k 4 (l / 16) .. +3.
__device__ __forceinline__ void ts_stream_mma(float (&acc)[4], const uint4 (&w)[W_PIECES], const uint4& x) {
  typedef unsigned ts_u32x2 __attribute__((ext_vector_type(2)));
  const ts_u32x2 w0 = {w[0].x, w[0].y}, w1 = {w[0].z, w[0].w}, x0 = {x.x, x.y}, x1 = {x.z, x.w};
  mfma_16x16x16(acc, __builtin_bit_cast(ts_mfma_in, w0), __builtin_bit_cast(ts_mfma_in, x0));
  mfma_16x16x16(acc, __builtin_bit_cast(ts_mfma_in, w1), __builtin_bit_cast(ts_mfma_in, x1));
}
#elif TS_AB_IS_FP8
// One 64-deep step of FP8 on one 8-row tile of X: the same words as the 16-bit step below, each
// holding four values (half s: actual k + 16t + 8s + 0..3 and + 4..7, as the instruction's k
// 4t.. and 16 + 4t..). The instruction's A is W, the GEMM's B (TS_B_DTYPE), its B is X. The two
// k32 products are summed in the tensor cores' precision and promoted into acc every step, every
// 64 of K (the tolerance allows 256).
__device__ __forceinline__ void ts_stream_fp8_products(float (&part)[4], const uint4 (&w)[W_PIECES], const uint4& x) {
  const unsigned a0[4] = {w[0].x, w[1].x, w[0].y, w[1].y};
  mma16832_fp8<TS_B_DTYPE, TS_AB_DTYPE>(part, a0, x.x, x.y);
  const unsigned a1[4] = {w[0].z, w[1].z, w[0].w, w[1].w};
  mma16832_fp8<TS_B_DTYPE, TS_AB_DTYPE>(part, a1, x.z, x.w);
}
__device__ __forceinline__ void ts_stream_mma(float (&acc)[4], const uint4 (&w)[W_PIECES], const uint4& x) {
  float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  ts_stream_fp8_products(part, w, x);
#pragma unroll
  for (int i = 0; i < 4; ++i) acc[i] += part[i];
}
#if TS_BLOCK_SCALES
// The same step with its block's factors, f[h] for the lane's row h of X (value i is row i % 2).
__device__ __forceinline__ void ts_stream_mma_scaled(float (&acc)[4], const uint4 (&w)[W_PIECES], const uint4& x,
                                                     const float (&f)[2]) {
  float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  ts_stream_fp8_products(part, w, x);
#pragma unroll
  for (int i = 0; i < 4; ++i) acc[i] = fmaf(part[i], f[i % 2], acc[i]);
}
#endif
#else
// One 32-deep step on one 8-row tile of X: half s uses words s*2, s*2+1 of each 16-byte piece
// (actual k + 8t + 4s + 0..3), in the instruction's fragment order (rows g, g + 8; k 2t.., 2t+8..).
__device__ __forceinline__ void ts_stream_mma(float (&acc)[4], const uint4 (&w)[W_PIECES], const uint4& x) {
  const unsigned a0[4] = {w[0].x, w[1].x, w[0].y, w[1].y};
  mma16816(acc, a0, x.x, x.y);
  const unsigned a1[4] = {w[0].z, w[1].z, w[0].w, w[1].w};
  mma16816(acc, a1, x.z, x.w);
}
#endif

// The loads of one chunk: UNROLL steps of W_PIECES pieces of W, then X's pieces for each step and
// tile (from L1), so that both are in flight together; `k` is the chunk's first k (the lane's own
// offset is in the row pointers and subtracted from k_end). full: the whole chunk lies inside K.
struct TsStreamChunk {
  uint4 w[UNROLL][W_PIECES];
  uint4 x[UNROLL][M_TILES];
#if TS_BLOCK_SCALES
  TsStreamScales s;  // the chunk's factors, loaded with its operands
#endif
};
__device__ __forceinline__ void ts_stream_load_chunk(TsStreamChunk& c, const ts_ab_t* const (&w_rows)[W_PIECES],
                                                     const ts_ab_t* const (&x_rows)[M_TILES],
                                                     const TsStreamScaleRows& scales, int k, int k_end, bool full,
                                                     ts_u64 policy) {
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const bool inside = full || k + u * STEP_K < k_end;  // K fills whole pieces: a piece is wholly in or out
#pragma unroll
    for (int p = 0; p < W_PIECES; ++p)
      c.w[u][p] = inside ? ts_stream_load_w(w_rows[p] + k + u * STEP_K, policy) : make_uint4(0u, 0u, 0u, 0u);
  }
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const bool inside = full || k + u * STEP_K < k_end;
#pragma unroll
    for (int mt = 0; mt < M_TILES; ++mt)
      c.x[u][mt] = inside ? __ldg(reinterpret_cast<const uint4*>(x_rows[mt] + k + u * STEP_K))
                          : make_uint4(0u, 0u, 0u, 0u);
  }
#if TS_BLOCK_SCALES
#pragma unroll
  for (int j = 0; j < SCALE_LOADS; ++j) {
    // Steps wholly past K multiply zeros: their block is capped to the last one to stay inside the grids.
    const int kb = min((k + j * SCALE_STEPS * STEP_K) / 128, scales.kbs - 1);
    c.s.b[j] = __ldg(scales.b + (long long)kb * scales.nbs);
#pragma unroll
    for (int mt = 0; mt < M_TILES; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) c.s.a[j][mt][h] = __ldg(scales.a[mt][h] + kb);
  }
#else
  (void)scales;
#endif
}

// The chunk's arithmetic.
__device__ __forceinline__ void ts_stream_multiply(float (&acc)[M_TILES][4], const TsStreamChunk& c) {
#pragma unroll
  for (int u = 0; u < UNROLL; ++u)
#pragma unroll
    for (int mt = 0; mt < M_TILES; ++mt) {
#if TS_BLOCK_SCALES
      const int j = u / SCALE_STEPS;
      const float f[2] = {c.s.a[j][mt][0] * c.s.b[j], c.s.a[j][mt][1] * c.s.b[j]};
      ts_stream_mma_scaled(acc[mt], c.w[u], c.x[u][mt], f);
#else
      ts_stream_mma(acc[mt], c.w[u], c.x[u][mt]);
#endif
    }
}

// Stores the 4 accumulators of tile mt of the warp whose rows of W start at n0: C[m, n] =
// epilogue(alpha * v + beta * C[m, n]) at the instruction's rows (n) and columns (m) of the lane.
__device__ __forceinline__ void ts_stream_store(ts_c_t* __restrict__ C, const ts_c_t* __restrict__ bias,
                                                const float (&v)[4], int mt, int n0, int m0, int lane, int M, int N,
                                                int ldc, float alpha, float beta, float slope) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int gn = n0 + Acc::row(lane, 0, i), gm = m0 + Acc::col(lane, mt, i);
    if (gm < M && gn < N) ts_store_c(C, gm, gn, ldc, v[i], alpha, beta, bias, slope);
  }
}

#if REDUCE
#include "ts_cluster.h"
#define TS_STREAM_CLUSTER __cluster_dims__(1, SPLIT_K, 1)
#else
#define TS_STREAM_CLUSTER
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS) TS_STREAM_CLUSTER
gemm_stream(TS_GEMM_PARAMS(ts_ab_t, ts_c_t)
#if TS_BLOCK_SCALES
            , const float* __restrict__ scale_a, const float* __restrict__ scale_b
#endif
) {
  extern __shared__ __attribute__((aligned(16))) unsigned char smem_raw[];
  const int tid = threadIdx.x, warp = tid / TS_WARP_SIZE, lane = tid % TS_WARP_SIZE;
  const int wn = warp % WARPS_N, wk = warp / WARPS_N;
  // The lane's rows of W and X and its offset along K in a step (see the top of the file).
#if defined(TS_VENDOR_AMD)
  const int w_row[W_PIECES] = {lane % 16}, x_row = lane % 16, k_off = PIECE_K * (lane / 16);
#else
  const int w_row[W_PIECES] = {lane / 4, lane / 4 + 8}, x_row = lane / 4, k_off = PIECE_K * (lane % 4);
#endif
  // The row tiles of X for one slice of W are neighbours in launch order (the second reads W from L2).
  const int tiles_m = (M + BLOCK_M - 1) / BLOCK_M, tile = blockIdx.x, split = blockIdx.y;
  const int tile_m = tile % tiles_m, tile_n = tile / tiles_m;
  const int n0 = tile_n * ROWS_N + wn * 16, m0 = tile_m * BLOCK_M;

  // This block's K range: whole chunks, SPLIT_K shares.
  const int chunks = (K + CHUNK_K - 1) / CHUNK_K;
  const int chunks_per_split = (chunks + SPLIT_K - 1) / SPLIT_K;
  const int k_begin = split * chunks_per_split * CHUNK_K;
  const int k_end = min(K, k_begin + chunks_per_split * CHUNK_K);

  // Rows past an edge read the last row: their results are never stored.
  const ts_ab_t* w_rows[W_PIECES];
#pragma unroll
  for (int p = 0; p < W_PIECES; ++p) w_rows[p] = B + (long long)min(n0 + w_row[p], N - 1) * ldb + k_off;
  const ts_ab_t* x_rows[M_TILES];
#pragma unroll
  for (int mt = 0; mt < M_TILES; ++mt)
    x_rows[mt] = A + (long long)min(m0 + TS_MMA_N * mt + x_row, M - 1) * lda + k_off;
  const ts_u64 policy = ts_stream_policy();
#if TS_BLOCK_SCALES
  const TsStreamScaleRows scales = ts_stream_scale_rows(scale_a, scale_b, n0, m0, lane, M, N, K);
#else
  const TsStreamScaleRows scales{};
#endif

  float acc[M_TILES][4];
#pragma unroll
  for (int mt = 0; mt < M_TILES; ++mt)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[mt][i] = 0.0f;

  // Warp wk takes the block's chunks wk, wk + WARPS_K, ...; `k` below excludes the lane's k_off.
  int k = k_begin + wk * CHUNK_K;
#if PREFETCH
  TsStreamChunk cur;
  if (k < k_end) ts_stream_load_chunk(cur, w_rows, x_rows, scales, k, k_end - k_off, k + CHUNK_K <= k_end, policy);
  for (; k < k_end; k += WARPS_K * CHUNK_K) {
    const int next = k + WARPS_K * CHUNK_K;
    TsStreamChunk ahead;
    if (next < k_end) ts_stream_load_chunk(ahead, w_rows, x_rows, scales, next, k_end - k_off, next + CHUNK_K <= k_end, policy);
    ts_stream_multiply(acc, cur);
    cur = ahead;
  }
#else
  for (; k < k_end; k += WARPS_K * CHUNK_K) {
    const bool full = k + CHUNK_K <= k_end;
    TsStreamChunk cur;
    ts_stream_load_chunk(cur, w_rows, x_rows, scales, k, k_end - k_off, full, policy);
    ts_stream_multiply(acc, cur);
  }
#endif

#if WARPS_K > 1
  // The K warps' partials, added in warp order by the warps with wk 0 ([warp][value][lane] floats:
  // whole 128-byte rows, no bank conflicts).
  float* red = reinterpret_cast<float*>(smem_raw);
  if (wk > 0) {
    float* mine = red + ((wk - 1) * WARPS_N + wn) * (M_TILES * 4 * TS_WARP_SIZE);
#pragma unroll
    for (int mt = 0; mt < M_TILES; ++mt)
#pragma unroll
      for (int i = 0; i < 4; ++i) mine[(mt * 4 + i) * TS_WARP_SIZE + lane] = acc[mt][i];
  }
  __syncthreads();
  if (wk == 0) {
    for (int w = 1; w < WARPS_K; ++w) {
      const float* theirs = red + ((w - 1) * WARPS_N + wn) * (M_TILES * 4 * TS_WARP_SIZE);
#pragma unroll
      for (int mt = 0; mt < M_TILES; ++mt)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[mt][i] += theirs[(mt * 4 + i) * TS_WARP_SIZE + lane];
    }
  }
#endif

#if SPLIT_K == 1
  (void)workspace;
  if (wk == 0) {
#pragma unroll
    for (int mt = 0; mt < M_TILES; ++mt)
      ts_stream_store(C, bias, acc[mt], mt, n0, m0, lane, M, N, ldc, alpha, beta, epilogue_slope);
  }
#elif REDUCE
  (void)workspace;
  // The split's blocks form a cluster (1 x SPLIT_K, rank = split): each puts its partial tile in its
  // own shared memory ([unit][lane] float4, a unit being one warp's four values of one tile of X),
  // and after the cluster barrier the warps of block r sum units r, r + SPLIT_K, ... over ranks 0 ..
  // SPLIT_K - 1 in split order (the workspace path's order: the same result) and store them. No
  // round trip through global memory: no partials written and read back through L2, no fence, no
  // counter, which is most of a split's cost where the whole product takes a few microseconds.
  float* part = reinterpret_cast<float*>(smem_raw);
#if WARPS_K > 1
  __syncthreads();  // every K warp's partial has been read (this memory held them)
#endif
  if (wk == 0) {
#pragma unroll
    for (int mt = 0; mt < M_TILES; ++mt)
      *reinterpret_cast<float4*>(part + ((wn * M_TILES + mt) * TS_WARP_SIZE + lane) * 4) =
          make_float4(acc[mt][0], acc[mt][1], acc[mt][2], acc[mt][3]);
  }
  ts_cluster_sync();
  const unsigned rank = ts_cluster_rank();
  constexpr int kUnits = WARPS_N * M_TILES;
  for (int u = rank + SPLIT_K * warp; u < kUnits; u += SPLIT_K * (THREADS / TS_WARP_SIZE)) {
    float4 p[SPLIT_K];
#pragma unroll
    for (int s = 0; s < SPLIT_K; ++s) p[s] = ts_ld_cluster4(part + (u * TS_WARP_SIZE + lane) * 4, s);
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int s = 0; s < SPLIT_K; ++s) {  // split order
      v[0] += p[s].x;
      v[1] += p[s].y;
      v[2] += p[s].z;
      v[3] += p[s].w;
    }
    ts_stream_store(C, bias, v, u % M_TILES, tile_n * ROWS_N + (u / M_TILES) * 16, m0, lane, M, N, ldc, alpha, beta,
                    epilogue_slope);
  }
  ts_cluster_sync();  // no block leaves while another still reads its shared memory
#else
  // Workspace: SPLIT_K x tiles partial tiles of ROWS_N x BLOCK_M floats ([warp][value][lane]), then one
  // counter per tile (zeroed before the first launch, reset by the block that sums).
  const int tiles = gridDim.x;
  const int at = (wn * M_TILES * 4) * TS_WARP_SIZE + lane;  // this lane's first value in a partial tile
  if (wk == 0) {
    float* own = workspace + ((long long)split * tiles + tile) * TILE_FLOATS + at;
#pragma unroll
    for (int mt = 0; mt < M_TILES; ++mt)
#pragma unroll
      for (int i = 0; i < 4; ++i) own[(mt * 4 + i) * TS_WARP_SIZE] = acc[mt][i];
  }
  int* counters = reinterpret_cast<int*>(workspace + (long long)SPLIT_K * tiles * TILE_FLOATS);
  if (ts_arrive(counters, tile, tid) != SPLIT_K - 1) return;
  __threadfence();
  if (wk == 0) {
#pragma unroll
    for (int mt = 0; mt < M_TILES; ++mt) {
      float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (int s = 0; s < SPLIT_K; ++s) {  // split order: the same sum whichever block is last
#pragma unroll
        for (int i = 0; i < 4; ++i)
          v[i] += s == split ? acc[mt][i]
                             : ts_load_l2(workspace + ((long long)s * tiles + tile) * TILE_FLOATS + at +
                                          (mt * 4 + i) * TS_WARP_SIZE);
      }
      ts_stream_store(C, bias, v, mt, n0, m0, lane, M, N, ldc, alpha, beta, epilogue_slope);
    }
  }
  if (tid == 0) counters[tile] = 0;  // ready for the next launch
#endif
}
