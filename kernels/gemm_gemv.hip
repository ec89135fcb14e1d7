// gemm_gemv: matrix-vector and very skinny products (M <= 16 or N <= 16, any K), built to
// stream the one large operand from memory exactly once, as fast as the memory allows.
//
// The problem is read as OUT[s][r] = sum_k SMALL[s][k] * LARGE[r][k] with S = min(M, N)
// small rows and R = max(M, N) outputs each:
//   M <= N: SMALL = A (S = M), LARGE = B^T (R = N), OUT[s][r] = C[s][r];
//   M >  N: SMALL = B^T (S = N), LARGE = A (R = M), OUT[s][r] = C[r][s].
// How LARGE lies in memory decides how threads walk it (both are compiled, the sizes pick):
//   r-contiguous (B row-major, or A column-major): THREADS_R threads side by side along r,
//     each loading VEC consecutive r per k (one 16-byte load for fp32 VEC 4), THREADS_K
//     thread rows along k; a thread keeps ROWS x VEC sums.
//   k-contiguous (B column-major, or A row-major): THREADS_K threads side by side along k
//     reading VEC consecutive k each, one output row r per THREADS_K threads; a thread keeps
//     ROWS sums.
// Each step every thread issues its UNROLL loads of LARGE before using any of them, so
// enough bytes are in flight to cover memory latency. SMALL (tiny, served by L2 and L1) is
// either staged per BLOCK_K-deep slice in shared memory as fp32 (STAGE_SMALL 1: one read
// per element per block, at the price of two barriers per slice) or read by each thread
// beside its loads of LARGE (STAGE_SMALL 0: no barrier in the loop; best for few rows).
// PREFETCH 1 issues the next slice's loads before the current slice's arithmetic (twice the
// registers for loads in flight). The THREADS_K partial sums
// of an output are added in thread order through shared memory; SPLIT_K blocks share one
// output tile along K and the last to finish adds the partials in split order (the float
// workspace), so results do not depend on timing.
//
// Compiles on its own: every macro below has a default.
#include "ts_gemm_common.h"
#include "ts_split_k.h"

#ifndef ROWS
#define ROWS 16  // at least S: accumulators per output column kept by each thread
#endif
#ifndef THREADS_R
#define THREADS_R 64
#endif
#ifndef THREADS_K
#define THREADS_K 4
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef SPLIT_K
#define SPLIT_K 1
#endif
#ifndef STAGE_SMALL
#define STAGE_SMALL 1
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif

#define THREADS (THREADS_R * THREADS_K)

// VEC elements of A or B moved as one load (16 bytes for fp32 x 4 or half x 8).
struct __align__(VEC * sizeof(ts_ab_t)) ts_gemv_vec {
  ts_ab_t v[VEC];
};

// OUT[s][r] -> C, with alpha, beta and the epilogue.
__device__ __forceinline__ void ts_gemv_store(ts_c_t* __restrict__ C, bool small_is_a, int s, int r, int ldc,
                                              float v, float alpha, float beta, const ts_c_t* __restrict__ bias,
                                              float slope) {
  if (small_is_a)
    ts_store_c(C, s, r, ldc, v, alpha, beta, bias, slope);
  else
    ts_store_c(C, r, s, ldc, v, alpha, beta, bias, slope);
}

// SMALL[s][k] from A or B in their stored orientation.
__device__ __forceinline__ float ts_gemv_small(const ts_ab_t* __restrict__ small, bool small_is_a, int s, int k,
                                               int ld) {
  // A (M x K): row-major A[s][k]; B (K x N) seen as B^T[s][k] = B[k][s].
  const bool s_major = small_is_a ? TS_A_ROW_MAJOR : !TS_B_ROW_MAJOR;
  return ts_ab_to_float(s_major ? small[(long long)s * ld + k] : small[(long long)k * ld + s]);
}

// One slice's loads of LARGE by this thread: UNROLL vectors of VEC elements (zeros past
// the split's end or past R).
template <bool K_CONTIG>
__device__ __forceinline__ void ts_gemv_load_large(ts_gemv_vec (&x)[UNROLL], const ts_ab_t* __restrict__ large, int r,
                                                   int R, int k0, int k_end, int tk, int ld_large) {
  constexpr int KSTEP = K_CONTIG ? VEC : 1;
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const int k = k0 + (u * THREADS_K + tk) * KSTEP;
    // The vector runs along LARGE's contiguous dimension c (k or r), at row o of the other.
    const int o = K_CONTIG ? r : k, o_end = K_CONTIG ? R : k_end;
    const int c = K_CONTIG ? k : r, c_end = K_CONTIG ? k_end : R;
    const ts_ab_t* p = large + (long long)o * ld_large + c;
    if (o < o_end && c + VEC <= c_end) {
      x[u] = *reinterpret_cast<const ts_gemv_vec*>(p);
    } else {
#pragma unroll
      for (int v = 0; v < VEC; ++v) x[u].v[v] = (o < o_end && c + v < c_end) ? p[v] : ts_ab_t(0);
    }
  }
}

// The SMALL values this thread's loads of one slice meet (STAGE_SMALL 0), read straight
// from global memory: L1 serves the threads that share a k.
template <bool K_CONTIG>
__device__ __forceinline__ void ts_gemv_load_small(float (&a)[UNROLL][ROWS][K_CONTIG ? VEC : 1],
                                                   const ts_ab_t* __restrict__ small, bool small_is_a, int S, int k0,
                                                   int k_end, int tk, int ld_small) {
  constexpr int KSTEP = K_CONTIG ? VEC : 1;
#pragma unroll
  for (int u = 0; u < UNROLL; ++u)
#pragma unroll
    for (int s = 0; s < ROWS; ++s)
#pragma unroll
      for (int j = 0; j < KSTEP; ++j) {
        const int k = k0 + (u * THREADS_K + tk) * KSTEP + j;
        a[u][s][j] = (s < S && k < k_end) ? ts_gemv_small(small, small_is_a, s, k, ld_small) : 0.0f;
      }
}

// The block's partial sums for outputs (s, r0 + rl) of its K range; partial[] gets
// [THREADS_K][ROWS][BLOCK_R] floats, and on return sums[e] (for e = tid, tid + THREADS, ...
// below ROWS * BLOCK_R, e = s * BLOCK_R + rl) holds the sum over the block's THREADS_K.
template <bool K_CONTIG>
__device__ __forceinline__ void ts_gemv_block(const ts_ab_t* __restrict__ small, const ts_ab_t* __restrict__ large,
                                              bool small_is_a, int S, int R, int ld_small, int ld_large,
                                              int r0, int k_begin, int k_end, float* __restrict__ shared,
                                              float (&out)[(ROWS * THREADS_R * (K_CONTIG ? 1 : VEC) + THREADS - 1) /
                                                           THREADS]) {
  constexpr int RV = K_CONTIG ? 1 : VEC;           // outputs per thread along r
  constexpr int KSTEP = K_CONTIG ? VEC : 1;        // k per load
  constexpr int BLOCK_R = THREADS_R * RV;
  constexpr int BLOCK_K = THREADS_K * UNROLL * KSTEP;
  const int tid = threadIdx.x;
  // r-contiguous: neighbouring threads along r; k-contiguous: along k.
  const int tr = K_CONTIG ? tid / THREADS_K : tid % THREADS_R;
  const int tk = K_CONTIG ? tid % THREADS_K : tid / THREADS_R;
  const int r = r0 + tr * RV;

  float acc[ROWS][RV];
#pragma unroll
  for (int s = 0; s < ROWS; ++s)
#pragma unroll
    for (int v = 0; v < RV; ++v) acc[s][v] = 0.0f;

  // Staged SMALL slice: [k][ROWS] (r-contiguous: one broadcast read per k) or [ROWS][k]
  // (k-contiguous: VEC consecutive k per read).
  float* staged = shared;
  (void)staged;
  ts_gemv_vec x[UNROLL];
#if !STAGE_SMALL
  float a[UNROLL][ROWS][KSTEP];
#endif
#if PREFETCH
  ts_gemv_load_large<K_CONTIG>(x, large, r, R, k_begin, k_end, tk, ld_large);
#if !STAGE_SMALL
  ts_gemv_load_small<K_CONTIG>(a, small, small_is_a, S, k_begin, k_end, tk, ld_small);
#endif
#endif
  for (int k0 = k_begin; k0 < k_end; k0 += BLOCK_K) {
#if STAGE_SMALL
    __syncthreads();  // the previous slice is no longer read
    for (int i = tid; i < ROWS * BLOCK_K; i += THREADS) {
      const int s = K_CONTIG ? i / BLOCK_K : i % ROWS;
      const int kk = K_CONTIG ? i % BLOCK_K : i / ROWS;
      const int k = k0 + kk;
      staged[i] = (s < S && k < k_end) ? ts_gemv_small(small, small_is_a, s, k, ld_small) : 0.0f;
    }
    __syncthreads();
#endif

#if PREFETCH
    // The next slice's loads go out before this slice's arithmetic, so the memory system
    // never waits for a thread to finish its sums.
    ts_gemv_vec xn[UNROLL];
    ts_gemv_load_large<K_CONTIG>(xn, large, r, R, k0 + BLOCK_K, k_end, tk, ld_large);
#if !STAGE_SMALL
    float an[UNROLL][ROWS][KSTEP];
    ts_gemv_load_small<K_CONTIG>(an, small, small_is_a, S, k0 + BLOCK_K, k_end, tk, ld_small);
#endif
#else
    // Every load of this slice first, then the arithmetic.
    ts_gemv_load_large<K_CONTIG>(x, large, r, R, k0, k_end, tk, ld_large);
#if !STAGE_SMALL
    ts_gemv_load_small<K_CONTIG>(a, small, small_is_a, S, k0, k_end, tk, ld_small);
#endif
#endif
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int kk = (u * THREADS_K + tk) * KSTEP;
      (void)kk;
      if (K_CONTIG) {
#pragma unroll
        for (int s = 0; s < ROWS; ++s)
#pragma unroll
          for (int v = 0; v < VEC; ++v) {
#if STAGE_SMALL
            const float av = staged[s * BLOCK_K + kk + v];
#else
            const float av = a[u][s][K_CONTIG ? v : 0];
#endif
            acc[s][0] += av * ts_ab_to_float(x[u].v[v]);
          }
      } else {
#pragma unroll
        for (int s = 0; s < ROWS; ++s) {
#if STAGE_SMALL
          const float av = staged[kk * ROWS + s];
#else
          const float av = a[u][s][0];
#endif
#pragma unroll
          for (int v = 0; v < VEC; ++v) acc[s][v] += av * ts_ab_to_float(x[u].v[v]);
        }
      }
    }
#if PREFETCH
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) x[u] = xn[u];
#if !STAGE_SMALL
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int q = 0; q < ROWS; ++q)
#pragma unroll
        for (int j = 0; j < KSTEP; ++j) a[u][q][j] = an[u][q][j];
#endif
#endif
  }

  // Add the THREADS_K partial sums of each output in thread order.
  __syncthreads();
  float* partial = shared;  // [tk][s][rl]
#pragma unroll
  for (int s = 0; s < ROWS; ++s)
#pragma unroll
    for (int v = 0; v < RV; ++v) partial[(tk * ROWS + s) * BLOCK_R + tr * RV + v] = acc[s][v];
  __syncthreads();
#pragma unroll
  for (int j = 0; j < (ROWS * BLOCK_R + THREADS - 1) / THREADS; ++j) {
    const int e = tid + j * THREADS;
    float sum = 0.0f;
    if (e < ROWS * BLOCK_R)
      for (int t = 0; t < THREADS_K; ++t) sum += partial[t * ROWS * BLOCK_R + e];
    out[j] = sum;
  }
}

template <bool K_CONTIG>
__device__ __forceinline__ void ts_gemv(const ts_ab_t* __restrict__ A, const ts_ab_t* __restrict__ B,
                                        ts_c_t* __restrict__ C, const ts_c_t* __restrict__ bias,
                                        float* __restrict__ workspace, int M, int N, int K, int lda, int ldb, int ldc,
                                        float alpha, float beta, float slope, float* __restrict__ shared) {
  constexpr int RV = K_CONTIG ? 1 : VEC;
  constexpr int BLOCK_R = THREADS_R * RV;
  constexpr int BLOCK_K = THREADS_K * UNROLL * (K_CONTIG ? VEC : 1);
  constexpr int PER_THREAD = (ROWS * BLOCK_R + THREADS - 1) / THREADS;
  const bool small_is_a = M <= N;
  const int S = small_is_a ? M : N, R = small_is_a ? N : M;
  const ts_ab_t* small = small_is_a ? A : B;
  const ts_ab_t* large = small_is_a ? B : A;
  const int ld_small = small_is_a ? lda : ldb, ld_large = small_is_a ? ldb : lda;
  const int tile = blockIdx.x, r0 = tile * BLOCK_R;
  // Split `split` of SPLIT_K takes a contiguous run of whole BLOCK_K slices.
  const int slices = (K + BLOCK_K - 1) / BLOCK_K;
  const int split = blockIdx.y;
  const int k_begin = min(K, (int)((long long)slices * split / SPLIT_K) * BLOCK_K);
  const int k_end = min(K, (int)((long long)slices * (split + 1) / SPLIT_K) * BLOCK_K);

  float out[PER_THREAD];
  ts_gemv_block<K_CONTIG>(small, large, small_is_a, S, R, ld_small, ld_large, r0, k_begin, k_end, shared, out);
  const int tid = threadIdx.x;

#if SPLIT_K > 1
  // Workspace: SPLIT_K x tiles partial tiles of ROWS x BLOCK_R floats, then one counter per
  // tile (zeroed before the first launch, reset by the block that reduces).
  const int tiles = gridDim.x;
  float* own = workspace + ((long long)split * tiles + tile) * (ROWS * BLOCK_R);
  int* counters = reinterpret_cast<int*>(workspace + (long long)SPLIT_K * tiles * (ROWS * BLOCK_R));
#pragma unroll
  for (int j = 0; j < PER_THREAD; ++j) {
    const int e = tid + j * THREADS;
    if (e < ROWS * BLOCK_R) own[e] = out[j];
  }
  __threadfence();
  __syncthreads();
  __shared__ int arrived;
  if (tid == 0) arrived = atomicAdd(&counters[tile], 1);
  __syncthreads();
  if (arrived != SPLIT_K - 1) return;
  __threadfence();
#pragma unroll
  for (int j = 0; j < PER_THREAD; ++j) {
    const int e = tid + j * THREADS;
    if (e >= ROWS * BLOCK_R) continue;
    float sum = 0.0f;
    for (int s = 0; s < SPLIT_K; ++s) {
      if (s == split) {
        sum += out[j];
      } else {
        // Written by another block: read from L2, not a stale L1 line.
        sum += ts_load_l2(workspace + ((long long)s * tiles + tile) * (ROWS * BLOCK_R) + e);
      }
    }
    out[j] = sum;
  }
  if (tid == 0) counters[tile] = 0;  // ready for the next launch
#else
  (void)workspace;
#endif
#pragma unroll
  for (int j = 0; j < PER_THREAD; ++j) {
    const int e = tid + j * THREADS;
    const int s = e / BLOCK_R, r = r0 + e % BLOCK_R;
    if (e < ROWS * BLOCK_R && s < S && r < R) ts_gemv_store(C, small_is_a, s, r, ldc, out[j], alpha, beta, bias, slope);
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_gemv(TS_GEMM_PARAMS(ts_ab_t, ts_c_t)) {
  extern __shared__ float ts_gemv_shared[];
  // LARGE is k-contiguous when it is a column-major B (M <= N) or a row-major A (M > N).
  if (M <= N) {
    if (TS_B_ROW_MAJOR)
      ts_gemv<false>(A, B, C, bias, workspace, M, N, K, lda, ldb, ldc, alpha, beta, epilogue_slope, ts_gemv_shared);
    else
      ts_gemv<true>(A, B, C, bias, workspace, M, N, K, lda, ldb, ldc, alpha, beta, epilogue_slope, ts_gemv_shared);
  } else {
    if (TS_A_ROW_MAJOR)
      ts_gemv<true>(A, B, C, bias, workspace, M, N, K, lda, ldb, ldc, alpha, beta, epilogue_slope, ts_gemv_shared);
    else
      ts_gemv<false>(A, B, C, bias, workspace, M, N, K, lda, ldb, ldc, alpha, beta, epilogue_slope, ts_gemv_shared);
  }
}
