// gemm_wgmma: fp32 GEMM on Hopper's warpgroup tensor-core instruction (wgmma, sm_90a) with
// fp32 accuracy.
//
// Why the operands swap roles. wgmma reads its second operand from shared memory and, for
// TF32, only K-major (K contiguous); the first operand may come from registers in any
// layout the kernel loads. A row-major A is K-major, a row-major B is not. So the kernel
// computes C^T = B^T A^T: the wgmma "M" side (64 per warpgroup) is our N, taken from B
// (either layout) through registers, and the wgmma "N" side is our BLOCK_M rows of A, read
// by the tensor cores from shared memory in the 128-byte swizzled K-major layout (one
// 32-float K slice per 128-byte row, 16-byte chunk c of row r stored at chunk c ^ (r % 8)).
// A column-major A lands in a staging tile [k][m] first and the split pass below writes it
// transposed into that layout.
//
// fp32 accuracy (3xTF32, as gemm_mma): each element x is split into big = x rounded to
// TF32 and small = x - big, and a*b ~= a_small*b_big + a_big*b_small + a_big*b_big.
// A is split once per block: after a K slice lands in shared memory (cp.async), the
// block rewrites it as big (in place, or from the staging tile) and writes small beside
// it, so every warpgroup's wgmma reads both. B is split in registers as its fragments are
// loaded. Both bigs are masked to TF32 explicitly, so the result does not depend on how
// the tensor cores treat the low 13 bits of an operand; smalls keep them (truncated or
// not, below 2^-21 |x|).
// The tensor cores round their accumulation toward zero, so, as in gemm_mma, each chain
// of CHAIN 8-deep steps starts from zero in a separate accumulator and is added to the
// result with an fp32 add: the bias stays that of a CHAIN*8-deep sum whatever K is.
//
// AMD CDNA (gfx908, gfx90a, gfx94x) has no wgmma; the same block structure runs each
// wavefront's 16 columns of B^T on the fp32 MFMA (v_mfma_f32_16x16x4f32) with A read from
// shared memory as loaded (the swizzled tile, or a column-major A's staging tile), no
// split. That path is compile-checked only.
#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef WARPGROUPS
#define WARPGROUPS 1
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef CHAIN
#define CHAIN 4
#endif
#ifndef VEC
#define VEC 4
#endif
// GROUP_M and SPLIT_K take their defaults (8, 1) from ts_tile.h.
#include "ts_gemm_common.h"

#define BLOCK_K 32  // one 128-byte swizzle row of floats
#define BLOCK_N (64 * WARPGROUPS)
#define WARPGROUP_THREADS (4 * TS_WARP_SIZE)
#define THREADS (WARPGROUPS * WARPGROUP_THREADS)
#define ACC (BLOCK_M / 2)  // accumulator floats per thread (NVIDIA: wgmma m64nBLOCK_Mk8)
// Shared memory of one stage, in bytes, every part 1024-byte aligned (the swizzle repeats
// every 8 rows of 128 bytes): A as big (swizzled), A's small part, B (row-major B as
// Bs[k][n], column-major as Bs[n][k], rows padded so that a warp's fragment reads hit 32
// banks), then, for a column-major A, its staging tile As[k][m].
#define A_TILE_BYTES (BLOCK_M * BLOCK_K * 4)
#define LDS_B (TS_B_ROW_MAJOR ? BLOCK_N + 8 : BLOCK_K + 4)
#define B_TILE_BYTES ((TS_B_ROW_MAJOR ? BLOCK_K : BLOCK_N) * LDS_B * 4)
#define LDS_A_STAGING (BLOCK_M + 8)
#define A_STAGING_BYTES (TS_A_ROW_MAJOR ? 0 : BLOCK_K * LDS_A_STAGING * 4)
// AMD multiplies A as loaded (no split): a row-major A in the swizzled tile, a column-major
// one straight from its staging tile.
#if !defined(TS_VENDOR_AMD)
#define A_PARTS 2
#elif TS_A_ROW_MAJOR
#define A_PARTS 1
#else
#define A_PARTS 0
#endif
#define B_OFFSET (A_PARTS * A_TILE_BYTES)
#define A_STAGING_OFFSET (B_OFFSET + B_TILE_BYTES)
#define STAGE_BYTES (A_STAGING_OFFSET + A_STAGING_BYTES)
#define A_CHUNKS (BLOCK_M * BLOCK_K / 4)  // groups of 4 floats per stage
#define B_CHUNKS (BLOCK_N * BLOCK_K / 4)

#include "ts_async_copy.h"
#include "ts_mfma.h"
#include "ts_tile.h"

// Byte offset of A's 16-byte chunk c (of 8) in row m of a stage's A tile.
__device__ __forceinline__ int a_chunk_offset(int m, int c) { return ts_swizzle128_offset(m, c); }

__device__ __forceinline__ float b_at(const float* __restrict__ Bs, int k, int n) {
  return TS_B_ROW_MAJOR ? Bs[k * LDS_B + n] : Bs[n * LDS_B + k];
}

// Runs copy(group, e) for every copy of one operand's stage: `groups` groups of 4 floats,
// each taken as 4 / VEC copies of VEC floats starting at float e of the group (a group
// starts 16-byte aligned only when the leading dimension is a multiple of 4; otherwise
// VEC is 1). A warp takes WARP_SIZE consecutive groups per round, and copy j
// of its lanes covers floats j * WARP_SIZE * VEC .. of them: with VEC < 4 the lanes of one
// copy still read consecutive floats of one row and write distinct banks.
template <typename Copy>
__device__ __forceinline__ void for_each_copy(int groups, int tid, Copy&& copy) {
  const int lane = tid % TS_WARP_SIZE, warp_first = tid - lane;
#pragma unroll
  for (int i = 0; i < (groups + THREADS - 1) / THREADS; ++i)
#pragma unroll
    for (int j = 0; j < 4 / VEC; ++j) {
      const int at = (j * TS_WARP_SIZE + lane) * VEC;  // float offset in the warp's groups
      const int group = warp_first + i * THREADS + at / 4;
      if (groups % THREADS == 0 || group < groups) copy(group, at % 4);
    }
}

// Starts the copies of the K slice at k0 into one stage; a copy reaching past the matrix
// edge reads only what lies inside and zero-fills the rest.
__device__ __forceinline__ void load_stage(char* stage, const float* __restrict__ A, const float* __restrict__ B,
                                           int M, int N, int k_end, int lda, int ldb, int block_m, int block_n,
                                           int k0, int tid) {
#if !defined(TS_VENDOR_AMD)
  // With VEC < 4 a thread makes 4 / VEC times as many copies, and NVCC would keep every
  // copy's address live across the K loop (it does not depend on k0) and spill. An opaque
  // thread index makes it recompute them at each step, a few integer ops per copy.
  if (VEC < 4) asm volatile("" : "+r"(tid));
#endif
  for_each_copy(A_CHUNKS, tid, [&](int g, int e) {
#if TS_A_ROW_MAJOR
    const int m = g / 8, c = g % 8;  // row m, chunk c of the swizzled tile
    const int gm = block_m + m, gk = k0 + c * 4 + e;
    const int valid = gm < M ? ts_inside(k_end - gk, VEC) : 0;
    ts_copy<VEC>(reinterpret_cast<float*>(stage + a_chunk_offset(m, c)) + e,
                 valid ? A + (long long)gm * lda + gk : A, valid);
#else
    const int k = g / (BLOCK_M / 4), m = (g % (BLOCK_M / 4)) * 4 + e;
    const int gm = block_m + m, gk = k0 + k;
    const int valid = gk < k_end ? ts_inside(M - gm, VEC) : 0;
    ts_copy<VEC>(reinterpret_cast<float*>(stage + A_STAGING_OFFSET) + k * LDS_A_STAGING + m,
                 valid ? A + (long long)gk * lda + gm : A, valid);
#endif
  });
  float* Bs = reinterpret_cast<float*>(stage + B_OFFSET);
  for_each_copy(B_CHUNKS, tid, [&](int g, int e) {
#if TS_B_ROW_MAJOR
    const int k = g / (BLOCK_N / 4), n = (g % (BLOCK_N / 4)) * 4 + e;
    const int gk = k0 + k, gn = block_n + n;
    const int valid = gk < k_end ? ts_inside(N - gn, VEC) : 0;
    ts_copy<VEC>(Bs + k * LDS_B + n, valid ? B + (long long)gk * ldb + gn : B, valid);
#else
    const int n = g / (BLOCK_K / 4), k = (g % (BLOCK_K / 4)) * 4 + e;
    const int gk = k0 + k, gn = block_n + n;
    const int valid = gn < N ? ts_inside(k_end - gk, VEC) : 0;
    ts_copy<VEC>(Bs + n * LDS_B + k, valid ? B + (long long)gn * ldb + gk : B, valid);
#endif
  });
}

#if defined(TS_VENDOR_AMD)
#define M_TILES (BLOCK_M / 16)

__device__ __forceinline__ float a_at(const char* stage, int m, int k) {
#if TS_A_ROW_MAJOR
  return *reinterpret_cast<const float*>(stage + a_chunk_offset(m, k / 4) + (k % 4) * 4);
#else
  return reinterpret_cast<const float*>(stage + A_STAGING_OFFSET)[k * LDS_A_STAGING + m];
#endif
}

// acc += (B^T A^T) over one slice for this wavefront's 16 columns n0.. of B^T. Lane l
// supplies B^T[n0 + l % 16][k + l / 16] and A[m + l % 16][k + l / 16] and holds rows
// 4 * (l / 16) .. +3 (columns of C) of column l % 16 (a row of C) of each 16x16 tile.
__device__ __forceinline__ void multiply_stage(const char* stage, int n0, int lane, float (&acc)[M_TILES][4]) {
  const float* Bs = reinterpret_cast<const float*>(stage + B_OFFSET);
  const int r = lane % 16, q = lane / 16;
#pragma unroll
  for (int k = 0; k < BLOCK_K; k += 4) {
    const float bt = b_at(Bs, k + q, n0 + r);
#pragma unroll
    for (int mt = 0; mt < M_TILES; ++mt) {
      ts_floatx4 d = {acc[mt][0], acc[mt][1], acc[mt][2], acc[mt][3]};
      d = __builtin_amdgcn_mfma_f32_16x16x4f32(bt, a_at(stage, mt * 16 + r, k + q), d, 0, 0, 0);
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][i] = d[i];
    }
  }
}

// Hands ts_finish_tile every accumulator inside C with its row and column.
struct AccWalk {
  const float (&acc)[M_TILES][4];
  const TsTile& tile;
  int lane, n0, M, N;
  template <typename F>
  __device__ __forceinline__ void operator()(F f) const {
#pragma unroll
    for (int mt = 0; mt < M_TILES; ++mt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int gm = tile.block_m + mt * 16 + lane % 16;
        const int gn = tile.block_n + n0 + 4 * (lane / 16) + i;
        if (gm < M && gn < N) f(gm, gn, acc[mt][i]);
      }
  }
};

#else  // NVIDIA Hopper
#include "ts_wgmma_tf32.h"


// Writes a landed stage's A tile as its big parts and, after them, its small parts: in
// place for a row-major A (each thread rewrites its own 16-byte chunks, so no barrier is
// needed among the writes), from the staging tile for a column-major one (a warp reads 32
// consecutive m of one k and writes their chunks, 8 rows apart in the swizzle: no bank
// conflicts either way). The tensor cores read through the async proxy, hence the proxy
// fence before the barrier that publishes the tile.
__device__ __forceinline__ void split_a_tile(char* stage, int tid) {
#pragma unroll
  for (int i = 0; i < (A_CHUNKS + THREADS - 1) / THREADS; ++i) {
    const int idx = tid + i * THREADS;
    if (A_CHUNKS % THREADS == 0 || idx < A_CHUNKS) {
#if TS_A_ROW_MAJOR
      const int at = idx * 16;
      const uint4 x = *reinterpret_cast<const uint4*>(stage + at);
#else
      const int m = idx % BLOCK_M, c = idx / BLOCK_M;
      const unsigned* staged = reinterpret_cast<const unsigned*>(stage + A_STAGING_OFFSET) + 4 * c * LDS_A_STAGING + m;
      const uint4 x = make_uint4(staged[0], staged[LDS_A_STAGING], staged[2 * LDS_A_STAGING], staged[3 * LDS_A_STAGING]);
      const int at = a_chunk_offset(m, c);
#endif
      store_split_tf32(x, reinterpret_cast<unsigned char*>(stage) + at,
                       reinterpret_cast<unsigned char*>(stage) + A_TILE_BYTES + at);
    }
  }
  fence_proxy_async();
}

// acc += (B^T A^T) over one slice for this warpgroup's 64 columns n0.. of B^T (B padded in
// shared memory, ts_wgmma_tf32.h's multiply_slice_3xtf32 does the rest).
__device__ __forceinline__ void multiply_stage(const char* stage, int n0, int lane, float (&acc)[ACC]) {
  const float* Bs = reinterpret_cast<const float*>(stage + B_OFFSET);
  multiply_slice_3xtf32([&](int k, int n) { return b_at(Bs, k, n); }, tf32_descriptor(stage),
                        tf32_descriptor(stage + A_TILE_BYTES), n0, lane, acc);
}
#endif

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_wgmma(TS_GEMM_PARAMS(float, float)) {
  extern __shared__ __attribute__((aligned(16))) char smem_raw[];
#if defined(TS_VENDOR_AMD)
  char* smem = smem_raw;  // the swizzle is the kernel's own layout there: any alignment
#else
  // The tensor cores anchor the swizzle pattern to 1024-byte boundaries of the shared
  // address space.
  const unsigned raw_addr = static_cast<unsigned>(__cvta_generic_to_shared(smem_raw));
  char* smem = smem_raw + (((raw_addr + 1023u) & ~1023u) - raw_addr);
#endif
  const int tid = threadIdx.x;
  const int warp = tid / TS_WARP_SIZE, lane = tid % TS_WARP_SIZE;
  const TsTile tile = ts_tile(M, N, K);

#if defined(TS_VENDOR_AMD)
  const int n0 = warp * 16;  // each wavefront: 16 columns of B^T
  float acc[M_TILES][4];
#pragma unroll
  for (int mt = 0; mt < M_TILES; ++mt)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[mt][i] = 0.0f;
#else
  const int n0 = (warp / 4) * 64 + (warp % 4) * 16;  // warpgroup's 64 columns, this warp's 16
  float acc[ACC];
#pragma unroll
  for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;
#endif

  const int steps = ts_k_steps(tile);
  ts_pipeline<STAGES>(
      steps,
      [&](int slot, int step) {
        load_stage(smem + slot * STAGE_BYTES, A, B, M, N, tile.k_end, lda, ldb, tile.block_m, tile.block_n,
                   tile.k_begin + step * BLOCK_K, tid);
      },
      [&](int slot, int) {
        char* stage = smem + slot * STAGE_BYTES;
#if !defined(TS_VENDOR_AMD)
        split_a_tile(stage, tid);
        __syncthreads();  // the split tile is the tensor cores' operand for every warpgroup
#endif
        multiply_stage(stage, n0, lane, acc);
      });

  ts_finish_tile(AccWalk{acc, tile, lane, n0, M, N}, tile, tid, C, bias, workspace, M, N, ldc, alpha, beta,
                 epilogue_slope);
}
