// gemm_hmma: fp16/bf16 GEMM on the matrix units with fp32 accumulation; C in fp32, fp16 or
// bf16, every layout, the shared epilogues.
//
// NVIDIA (sm_80+): mma.sync.m16n8k16 (bf16 or f16 inputs, fp32 accumulators), fragments read
// from shared memory with ldmatrix.x4 (.trans where the operand's orientation needs it), fed
// by a cp.async pipeline of STAGES slices. Shared memory keeps each operand in its global
// orientation (A row-major: As[m][k], column-major: As[k][m]; B likewise) so every global ->
// shared copy is VEC elements along the contiguous dimension, and 16-byte chunks of each row
// are XOR-swizzled so that the 8 rows an ldmatrix reads (and the rows a warp's copies write)
// fall in 8 different bank groups with no padding.
// AMD CDNA (gfx908, gfx90a, gfx94x): the same blocks on v_mfma_f32_16x16x16{f16,bf16_1k},
// operands read from the same swizzled LDS with plain loads.
//
// Grouped tile order and deterministic split-K come from ts_tile.h; alpha, beta, the epilogue
// and the one rounding to C's type from ts_store_c.
#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef BLOCK_K
#define BLOCK_K 32
#endif
#ifndef WARP_M
#define WARP_M 64
#endif
#ifndef WARP_N
#define WARP_N 64
#endif
#ifndef VEC
#define VEC 8
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef SPLIT_K
#define SPLIT_K 1
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef TS_AB_DTYPE
#define TS_AB_DTYPE 2
#endif
#include "ts_gemm_common.h"

#if defined(TS_VENDOR_AMD)
#define MMA_N 16  // v_mfma_f32_16x16x16
#else
#define MMA_N 8  // mma.sync.m16n8k16
#endif
#define WARPS_M (BLOCK_M / WARP_M)
#define WARPS_N (BLOCK_N / WARP_N)
#define THREADS (WARPS_M * WARPS_N * TS_WARP_SIZE)
#define TILES_M (WARP_M / 16)
#define TILES_N (WARP_N / MMA_N)
// Shared rows: A row-major keeps BLOCK_M rows of BLOCK_K elements, column-major BLOCK_K rows
// of BLOCK_M; B row-major BLOCK_K rows of BLOCK_N, column-major BLOCK_N rows of BLOCK_K.
#define A_ROW_LEN (TS_A_ROW_MAJOR ? BLOCK_K : BLOCK_M)
#define B_ROW_LEN (TS_B_ROW_MAJOR ? BLOCK_N : BLOCK_K)
#define A_STAGE (BLOCK_M * BLOCK_K)
#define B_STAGE (BLOCK_N * BLOCK_K)
#define STAGE_ELEMS (A_STAGE + B_STAGE)
#define COPIES_A (BLOCK_M * BLOCK_K / VEC / THREADS)
#define COPIES_B (BLOCK_N * BLOCK_K / VEC / THREADS)

#include "ts_async_copy.h"
#include "ts_tile.h"

// Element offset of (row, col) in a swizzled tile whose rows hold LEN elements: the 16-byte
// chunk index is XORed with a function of the row so that 8 consecutive rows read at one
// chunk column land in 8 different 128-byte bank groups.
template <int LEN>
__device__ __forceinline__ int swz(int row, int col) {
  constexpr int chunks = LEN / 8;
  constexpr int rows_per_step = chunks >= 8 ? 1 : 8 / chunks;
  constexpr int span = chunks >= 8 ? 8 : chunks;
  const int chunk = (col >> 3) ^ ((row / rows_per_step) % span);
  return row * LEN + chunk * 8 + (col & 7);
}

// Copies VEC elements (8: 16 bytes, 2: 4 bytes, 1: 2 bytes) from global to shared; the first
// `valid` are read, the rest are zeros. A 2-byte copy has no cp.async form: ordinary loads.
__device__ __forceinline__ void copy_elems(ts_ab_t* dst, const ts_ab_t* src, int valid) {
#if TS_ASYNC_COPY && VEC > 1
  const unsigned saddr = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const int src_bytes = valid * 2;
#if VEC == 8
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr), "l"(src), "r"(src_bytes));
#else
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(saddr), "l"(src), "n"(VEC * 2), "r"(src_bytes));
#endif
#else
#pragma unroll
  for (int i = 0; i < VEC; ++i) dst[i] = i < valid ? src[i] : (ts_ab_t)0;
#endif
}

// Starts the copies of the K slice at k0 into one stage (as gemm_mma's, in half elements).
__device__ __forceinline__ void load_stage(ts_ab_t* __restrict__ As, ts_ab_t* __restrict__ Bs,
                                           const ts_ab_t* __restrict__ A, const ts_ab_t* __restrict__ B, int M, int N,
                                           int k_end, int lda, int ldb, int block_m, int block_n, int k0, int tid) {
#pragma unroll
  for (int i = 0; i < COPIES_A; ++i) {
    const int idx = tid + i * THREADS;
#if TS_A_ROW_MAJOR
    const int m = idx / (BLOCK_K / VEC), k = (idx % (BLOCK_K / VEC)) * VEC;
    const int gm = block_m + m, gk = k0 + k;
    const int valid = gm < M ? ts_inside(k_end - gk, VEC) : 0;
    copy_elems(As + swz<A_ROW_LEN>(m, k), valid ? A + (long long)gm * lda + gk : A, valid);
#else
    const int k = idx / (BLOCK_M / VEC), m = (idx % (BLOCK_M / VEC)) * VEC;
    const int gm = block_m + m, gk = k0 + k;
    const int valid = gk < k_end ? ts_inside(M - gm, VEC) : 0;
    copy_elems(As + swz<A_ROW_LEN>(k, m), valid ? A + (long long)gk * lda + gm : A, valid);
#endif
  }
#pragma unroll
  for (int i = 0; i < COPIES_B; ++i) {
    const int idx = tid + i * THREADS;
#if TS_B_ROW_MAJOR
    const int k = idx / (BLOCK_N / VEC), n = (idx % (BLOCK_N / VEC)) * VEC;
    const int gk = k0 + k, gn = block_n + n;
    const int valid = gk < k_end ? ts_inside(N - gn, VEC) : 0;
    copy_elems(Bs + swz<B_ROW_LEN>(k, n), valid ? B + (long long)gk * ldb + gn : B, valid);
#else
    const int n = idx / (BLOCK_K / VEC), k = (idx % (BLOCK_K / VEC)) * VEC;
    const int gk = k0 + k, gn = block_n + n;
    const int valid = gn < N ? ts_inside(k_end - gk, VEC) : 0;
    copy_elems(Bs + swz<B_ROW_LEN>(n, k), valid ? B + (long long)gn * ldb + gk : B, valid);
#endif
  }
}

// Element (m, k) of A's stage and (k, n) of B's.
__device__ __forceinline__ const ts_ab_t* a_ptr(const ts_ab_t* As, int m, int k) {
  return As + (TS_A_ROW_MAJOR ? swz<A_ROW_LEN>(m, k) : swz<A_ROW_LEN>(k, m));
}
__device__ __forceinline__ const ts_ab_t* b_ptr(const ts_ab_t* Bs, int k, int n) {
  return Bs + (TS_B_ROW_MAJOR ? swz<B_ROW_LEN>(k, n) : swz<B_ROW_LEN>(n, k));
}

#if defined(TS_VENDOR_AMD)
typedef float ts_floatx4 __attribute__((ext_vector_type(4)));
#if TS_AB_DTYPE == 1
typedef _Float16 ts_mfma_elem;
#else
typedef short ts_mfma_elem;
#endif
typedef ts_mfma_elem ts_mfma_in __attribute__((ext_vector_type(4)));

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
    for (int mt = 0; mt < TILES_M; ++mt)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const ts_ab_t v = *a_ptr(As, warp_m0 + mt * 16 + r, k0 + q + j);
        a[mt][j] = __builtin_bit_cast(ts_mfma_elem, v);
      }
#pragma unroll
    for (int nt = 0; nt < TILES_N; ++nt)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const ts_ab_t v = *b_ptr(Bs, k0 + q + j, warp_n0 + nt * 16 + r);
        b[nt][j] = __builtin_bit_cast(ts_mfma_elem, v);
      }
#pragma unroll
    for (int mt = 0; mt < TILES_M; ++mt)
#pragma unroll
      for (int nt = 0; nt < TILES_N; ++nt) {
        ts_floatx4 d = {acc[mt][nt][0], acc[mt][nt][1], acc[mt][nt][2], acc[mt][nt][3]};
#if TS_AB_DTYPE == 1
        d = __builtin_amdgcn_mfma_f32_16x16x16f16(a[mt], b[nt], d, 0, 0, 0);
#else
        d = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a[mt], b[nt], d, 0, 0, 0);
#endif
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[mt][nt][i] = d[i];
      }
  }
}

__device__ __forceinline__ int acc_row(int lane, int mt, int i) { return mt * 16 + 4 * (lane / 16) + i; }
__device__ __forceinline__ int acc_col(int lane, int nt, int i) { (void)i; return nt * 16 + lane % 16; }

#else  // NVIDIA tensor cores

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// Four 8x8 matrices of 16-bit elements; lane l gives the address of row l % 8 of matrix l / 8.
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const ts_ab_t* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned (&r)[4], const ts_ab_t* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// d += a*b on a 16x8x16 tile.
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if TS_AB_DTYPE == 1
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// The A fragment of rows m0..m0+15, k0..k0+15: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7),
// (rows 0-7, k 8-15), (rows 8-15, k 8-15). Lane l addresses row l % 8 of matrix j = l / 8.
// Row-major A is stored [m][k]: a plain ldmatrix gives lane (g, c) the pair (m g, k 2c..2c+1).
// Column-major A is stored [k][m]: the transposing ldmatrix gives the same pair.
__device__ __forceinline__ void load_a_frag(unsigned (&a)[4], const ts_ab_t* As, int m0, int k0, int lane) {
  const int j = lane / 8, r = lane % 8;
  const int dm = (j & 1) * 8, dk = (j >> 1) * 8;
#if TS_A_ROW_MAJOR
  ldsm_x4(a, a_ptr(As, m0 + dm + r, k0 + dk));
#else
  ldsm_x4_trans(a, As + swz<A_ROW_LEN>(k0 + dk + r, m0 + dm));
#endif
}
// The B fragments of two 8-column tiles n0..n0+15, k0..k0+15: matrices (k 0-7, n 0-7),
// (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15): b[0], b[1] for columns n0.., b[2], b[3]
// for n0+8... Column-major B is stored [n][k] (plain ldmatrix), row-major [k][n] (transposing).
__device__ __forceinline__ void load_b_frags(unsigned (&b)[4], const ts_ab_t* Bs, int n0, int k0, int lane) {
  const int j = lane / 8, r = lane % 8;
  const int dk = (j & 1) * 8, dn = (j >> 1) * 8;
#if TS_B_ROW_MAJOR
  ldsm_x4_trans(b, Bs + swz<B_ROW_LEN>(k0 + dk + r, n0 + dn));
#else
  ldsm_x4(b, Bs + swz<B_ROW_LEN>(n0 + dn + r, k0 + dk));
#endif
}

// acc += As^T Bs over one slice, 16 deep at a time.
__device__ __forceinline__ void multiply_stage(const ts_ab_t* __restrict__ As, const ts_ab_t* __restrict__ Bs,
                                               int warp_m0, int warp_n0, int lane,
                                               float (&acc)[TILES_M][TILES_N][4]) {
#pragma unroll
  for (int k0 = 0; k0 < BLOCK_K; k0 += 16) {
    unsigned a[TILES_M][4], b[TILES_N / 2][4];
#pragma unroll
    for (int mt = 0; mt < TILES_M; ++mt) load_a_frag(a[mt], As, warp_m0 + mt * 16, k0, lane);
#pragma unroll
    for (int np = 0; np < TILES_N / 2; ++np) load_b_frags(b[np], Bs, warp_n0 + np * 16, k0, lane);
#pragma unroll
    for (int mt = 0; mt < TILES_M; ++mt)
#pragma unroll
      for (int nt = 0; nt < TILES_N; ++nt) mma16816(acc[mt][nt], a[mt], b[nt / 2][(nt % 2) * 2], b[nt / 2][(nt % 2) * 2 + 1]);
  }
}

__device__ __forceinline__ int acc_row(int lane, int mt, int i) { return mt * 16 + lane / 4 + (i / 2) * 8; }
__device__ __forceinline__ int acc_col(int lane, int nt, int i) { return nt * 8 + (lane % 4) * 2 + i % 2; }
#endif

// Hands ts_finish_tile every accumulator inside C with its row and column.
struct AccWalk {
  const float (&acc)[TILES_M][TILES_N][4];
  const TsTile& tile;
  int lane, warp_m0, warp_n0, M, N;
  template <typename F>
  __device__ __forceinline__ void operator()(F f) const {
#pragma unroll
    for (int mt = 0; mt < TILES_M; ++mt)
#pragma unroll
      for (int nt = 0; nt < TILES_N; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int gm = tile.block_m + warp_m0 + acc_row(lane, mt, i);
          const int gn = tile.block_n + warp_n0 + acc_col(lane, nt, i);
          if (gm < M && gn < N) f(gm, gn, acc[mt][nt][i]);
        }
  }
};

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
gemm_hmma(const ts_ab_t* __restrict__ A, const ts_ab_t* __restrict__ B, ts_c_t* __restrict__ C,
          const ts_c_t* __restrict__ bias, float* __restrict__ workspace, int M, int N, int K, int lda, int ldb,
          int ldc, float alpha, float beta, float epilogue_slope) {
  extern __shared__ __attribute__((aligned(128))) unsigned char smem_raw[];
  ts_ab_t* smem = reinterpret_cast<ts_ab_t*>(smem_raw);
  const int tid = threadIdx.x;
  const int warp = tid / TS_WARP_SIZE, lane = tid % TS_WARP_SIZE;
  const int warp_m0 = (warp / WARPS_N) * WARP_M, warp_n0 = (warp % WARPS_N) * WARP_N;
  const TsTile tile = ts_tile(M, N, K);

  float acc[TILES_M][TILES_N][4];
#pragma unroll
  for (int mt = 0; mt < TILES_M; ++mt)
#pragma unroll
    for (int nt = 0; nt < TILES_N; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.0f;

  const int steps = tile.k_end > tile.k_begin ? (tile.k_end - tile.k_begin + BLOCK_K - 1) / BLOCK_K : 0;
  ts_pipeline<STAGES>(
      steps,
      [&](int slot, int step) {
        ts_ab_t* As = smem + slot * STAGE_ELEMS;
        load_stage(As, As + A_STAGE, A, B, M, N, tile.k_end, lda, ldb, tile.block_m, tile.block_n,
                   tile.k_begin + step * BLOCK_K, tid);
      },
      [&](int slot, int) {
        const ts_ab_t* As = smem + slot * STAGE_ELEMS;
        multiply_stage(As, As + A_STAGE, warp_m0, warp_n0, lane, acc);
      });

  ts_finish_tile(AccWalk{acc, tile, lane, warp_m0, warp_n0, M, N}, tile, tid, C, bias, workspace, M, N, ldc, alpha,
                 beta, epilogue_slope);
}
