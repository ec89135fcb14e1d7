// gemm_warp: the fast fp32 GEMM family.
//
// Block tile BLOCK_M x BLOCK_N, stepping BLOCK_K along K. Warps split the block tile
// into WARP_M x WARP_N warp tiles; inside a warp tile each thread owns WMITER x WNITER
// sub-tiles of THREAD_M x THREAD_N, so the threads of a warp read consecutive shared-
// memory vectors (no bank conflicts) and reuse every value they load. Global loads are
// VEC-wide (16 bytes at VEC 4) and double-buffered through registers: the next K slice
// is in flight while the current one is multiplied. SMEM_PAD pads shared rows against
// bank conflicts on transposed stores. GROUP_M orders the tiles in groups of GROUP_M
// rows so that neighbouring blocks share A and B in L2. SPLIT_K > 1 divides K among
// blocks for problems whose M x N alone cannot fill the GPU; the partial tiles are summed
// by the last block to finish a tile, in a fixed order (deterministic results).
//
// Any M, N, K: out-of-range loads read zero and out-of-range stores are skipped. The
// space's constraints guarantee that leading dimensions are multiples of VEC, so a
// vector is either wholly inside the matrix or wholly outside.
#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef BLOCK_K
#define BLOCK_K 16
#endif
#ifndef WARP_M
#define WARP_M 64
#endif
#ifndef WARP_N
#define WARP_N 32
#endif
#ifndef THREAD_M
#define THREAD_M 4
#endif
#ifndef THREAD_N
#define THREAD_N 4
#endif
#ifndef WNITER
#define WNITER 2
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef SMEM_PAD
#define SMEM_PAD 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef SPLIT_K
#define SPLIT_K 1
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef TS_WARP_SIZE
#define TS_WARP_SIZE 32
#endif
#ifndef TS_A_ROW_MAJOR
#define TS_A_ROW_MAJOR 1
#endif
#ifndef TS_B_ROW_MAJOR
#define TS_B_ROW_MAJOR 1
#endif
#ifndef TS_C_ROW_MAJOR
#define TS_C_ROW_MAJOR 1
#endif
#ifndef TS_HAS_BETA
#define TS_HAS_BETA 0
#endif
#ifndef TS_EPILOGUE
#define TS_EPILOGUE 0
#endif

#define WARPS_M (BLOCK_M / WARP_M)
#define WARPS_N (BLOCK_N / WARP_N)
#define THREADS (WARPS_M * WARPS_N * TS_WARP_SIZE)
#define WMITER ((WARP_M * WARP_N) / (TS_WARP_SIZE * THREAD_M * THREAD_N * WNITER))
#define WSUB_M (WARP_M / WMITER)
#define WSUB_N (WARP_N / WNITER)
#define LDS_A (BLOCK_M + SMEM_PAD)
#define LDS_B (BLOCK_N + SMEM_PAD)
#define STAGE_FLOATS (BLOCK_K * (LDS_A + LDS_B))
#define LOADS_A (BLOCK_M * BLOCK_K / VEC / THREADS)
#define LOADS_B (BLOCK_N * BLOCK_K / VEC / THREADS)

#if VEC == 4
typedef float4 vec_t;
#elif VEC == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

__device__ __forceinline__ float vget(const vec_t& v, int i) {
#if VEC == 1
  (void)i;
  return v;
#else
  return reinterpret_cast<const float*>(&v)[i];
#endif
}

__device__ __forceinline__ vec_t vzero() {
#if VEC == 4
  return make_float4(0.f, 0.f, 0.f, 0.f);
#elif VEC == 2
  return make_float2(0.f, 0.f);
#else
  return 0.f;
#endif
}

__device__ __forceinline__ float ts_epilogue(float v, int m, int n, const float* __restrict__ bias, float slope) {
#if TS_EPILOGUE == 1
  v += bias[m];
#elif TS_EPILOGUE == 2
  v += bias[n];
#elif TS_EPILOGUE == 3
  v = v > 0.0f ? v : 0.0f;
#elif TS_EPILOGUE == 4
  v = v > 0.0f ? v : v * slope;
#elif TS_EPILOGUE == 5
  v = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
#endif
  (void)m; (void)n; (void)bias; (void)slope;
  return v;
}

__device__ __forceinline__ long long c_index(int m, int n, int ldc) {
#if TS_C_ROW_MAJOR
  return (long long)m * ldc + n;
#else
  return (long long)n * ldc + m;
#endif
}

// Global -> registers: this thread's share of the A and B slices starting at k0.
__device__ __forceinline__ void load_tiles(const float* __restrict__ A, const float* __restrict__ B, int M, int N,
                                           int k_end, int lda, int ldb, int block_m, int block_n, int k0, int tid,
                                           vec_t (&ra)[LOADS_A], vec_t (&rb)[LOADS_B]) {
#pragma unroll
  for (int i = 0; i < LOADS_A; ++i) {
    const int idx = tid + i * THREADS;
#if TS_A_ROW_MAJOR
    const int mm = idx / (BLOCK_K / VEC), kk = (idx % (BLOCK_K / VEC)) * VEC;
#else
    const int kk = idx / (BLOCK_M / VEC), mm = (idx % (BLOCK_M / VEC)) * VEC;
#endif
    const int gm = block_m + mm, gk = k0 + kk;
    vec_t v = vzero();
    if (gm < M && gk < k_end) {
#if TS_A_ROW_MAJOR
      v = *reinterpret_cast<const vec_t*>(A + (long long)gm * lda + gk);
#else
      v = *reinterpret_cast<const vec_t*>(A + (long long)gk * lda + gm);
#endif
    }
    ra[i] = v;
  }
#pragma unroll
  for (int i = 0; i < LOADS_B; ++i) {
    const int idx = tid + i * THREADS;
#if TS_B_ROW_MAJOR
    const int kk = idx / (BLOCK_N / VEC), nn = (idx % (BLOCK_N / VEC)) * VEC;
#else
    const int nn = idx / (BLOCK_K / VEC), kk = (idx % (BLOCK_K / VEC)) * VEC;
#endif
    const int gk = k0 + kk, gn = block_n + nn;
    vec_t v = vzero();
    if (gn < N && gk < k_end) {
#if TS_B_ROW_MAJOR
      v = *reinterpret_cast<const vec_t*>(B + (long long)gk * ldb + gn);
#else
      v = *reinterpret_cast<const vec_t*>(B + (long long)gn * ldb + gk);
#endif
    }
    rb[i] = v;
  }
}

// Registers -> shared: A stored K-major (As[k][m]) and B as Bs[k][n], so the inner
// product reads contiguous vectors along M and N.
__device__ __forceinline__ void store_tiles(float* __restrict__ As, float* __restrict__ Bs, int tid,
                                            const vec_t (&ra)[LOADS_A], const vec_t (&rb)[LOADS_B]) {
#pragma unroll
  for (int i = 0; i < LOADS_A; ++i) {
    const int idx = tid + i * THREADS;
#if TS_A_ROW_MAJOR
    const int mm = idx / (BLOCK_K / VEC), kk = (idx % (BLOCK_K / VEC)) * VEC;
#pragma unroll
    for (int v = 0; v < VEC; ++v) As[(kk + v) * LDS_A + mm] = vget(ra[i], v);
#else
    const int kk = idx / (BLOCK_M / VEC), mm = (idx % (BLOCK_M / VEC)) * VEC;
    *reinterpret_cast<vec_t*>(As + kk * LDS_A + mm) = ra[i];
#endif
  }
#pragma unroll
  for (int i = 0; i < LOADS_B; ++i) {
    const int idx = tid + i * THREADS;
#if TS_B_ROW_MAJOR
    const int kk = idx / (BLOCK_N / VEC), nn = (idx % (BLOCK_N / VEC)) * VEC;
    *reinterpret_cast<vec_t*>(Bs + kk * LDS_B + nn) = rb[i];
#else
    const int nn = idx / (BLOCK_K / VEC), kk = (idx % (BLOCK_K / VEC)) * VEC;
#pragma unroll
    for (int v = 0; v < VEC; ++v) Bs[(kk + v) * LDS_B + nn] = vget(rb[i], v);
#endif
  }
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
gemm_warp(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
          const float* __restrict__ bias, float* __restrict__ workspace, int M, int N, int K, int lda, int ldb,
          int ldc, float alpha, float beta, float epilogue_slope) {
  extern __shared__ __attribute__((aligned(16))) float smem[];
  const int tid = threadIdx.x;

  // Tile order: groups of GROUP_M tile rows, column by column inside a group.
  const int tiles_m = (M + BLOCK_M - 1) / BLOCK_M;
  const int tiles_n = (N + BLOCK_N - 1) / BLOCK_N;
  const int pid = blockIdx.x;
  const int group_size = GROUP_M * tiles_n;
  const int group = pid / group_size;
  const int first_m = group * GROUP_M;
  const int rows_in_group = min(tiles_m - first_m, GROUP_M);
  const int tile_m = first_m + (pid % group_size) % rows_in_group;
  const int tile_n = (pid % group_size) / rows_in_group;
  const int block_m = tile_m * BLOCK_M, block_n = tile_n * BLOCK_N;

  // This block's K range (whole BLOCK_K steps, so splits never share a step).
  const int split = blockIdx.y;
  const int k_per_split = ((K + SPLIT_K - 1) / SPLIT_K + BLOCK_K - 1) / BLOCK_K * BLOCK_K;
  const int k_begin = split * k_per_split;
  const int k_end = min(K, k_begin + k_per_split);

  const int warp = tid / TS_WARP_SIZE, lane = tid % TS_WARP_SIZE;
  const int warp_row = warp / WARPS_N, warp_col = warp % WARPS_N;
  const int thread_col = lane % (WSUB_N / THREAD_N), thread_row = lane / (WSUB_N / THREAD_N);

  float acc[WMITER * THREAD_M][WNITER * THREAD_N];
#pragma unroll
  for (int i = 0; i < WMITER * THREAD_M; ++i)
#pragma unroll
    for (int j = 0; j < WNITER * THREAD_N; ++j) acc[i][j] = 0.0f;

  vec_t ra[LOADS_A], rb[LOADS_B];
  int stage = 0;
  if (k_begin < k_end) {
    load_tiles(A, B, M, N, k_end, lda, ldb, block_m, block_n, k_begin, tid, ra, rb);
    store_tiles(smem, smem + BLOCK_K * LDS_A, tid, ra, rb);
  }
  __syncthreads();

  for (int k0 = k_begin; k0 < k_end; k0 += BLOCK_K) {
    const bool more = k0 + BLOCK_K < k_end;
    // Issue the next slice's loads before the math so their latency is hidden.
    if (more) load_tiles(A, B, M, N, k_end, lda, ldb, block_m, block_n, k0 + BLOCK_K, tid, ra, rb);
    const float* As = smem + stage * STAGE_FLOATS;
    const float* Bs = As + BLOCK_K * LDS_A;
#pragma unroll
    for (int kk = 0; kk < BLOCK_K; ++kk) {
      float a_frag[WMITER * THREAD_M], b_frag[WNITER * THREAD_N];
#pragma unroll
      for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < THREAD_M; ++i)
          a_frag[wm * THREAD_M + i] = As[kk * LDS_A + warp_row * WARP_M + wm * WSUB_M + thread_row * THREAD_M + i];
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int j = 0; j < THREAD_N; ++j)
          b_frag[wn * THREAD_N + j] = Bs[kk * LDS_B + warp_col * WARP_N + wn * WSUB_N + thread_col * THREAD_N + j];
#pragma unroll
      for (int i = 0; i < WMITER * THREAD_M; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * THREAD_N; ++j) acc[i][j] += a_frag[i] * b_frag[j];
    }
    if (more) {
      stage ^= 1;
      float* next = smem + stage * STAGE_FLOATS;
      store_tiles(next, next + BLOCK_K * LDS_A, tid, ra, rb);
    }
    __syncthreads();
  }

#if SPLIT_K == 1
  (void)workspace;
#pragma unroll
  for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
    for (int i = 0; i < THREAD_M; ++i) {
      const int gm = block_m + warp_row * WARP_M + wm * WSUB_M + thread_row * THREAD_M + i;
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int j = 0; j < THREAD_N; ++j) {
          const int gn = block_n + warp_col * WARP_N + wn * WSUB_N + thread_col * THREAD_N + j;
          if (gm < M && gn < N) {
            const long long idx = c_index(gm, gn, ldc);
            float v = alpha * acc[wm * THREAD_M + i][wn * THREAD_N + j];
#if TS_HAS_BETA
            v += beta * C[idx];
#endif
            C[idx] = ts_epilogue(v, gm, gn, bias, epilogue_slope);
          }
        }
    }
#else
  // Partial tile -> workspace[split][M][N]; the last block of the tile sums the splits
  // in order 0..SPLIT_K-1 and applies alpha, beta and the epilogue.
  float* partial = workspace + (long long)split * M * N;
  int* counters = reinterpret_cast<int*>(workspace + (long long)SPLIT_K * M * N);
#pragma unroll
  for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
    for (int i = 0; i < THREAD_M; ++i) {
      const int gm = block_m + warp_row * WARP_M + wm * WSUB_M + thread_row * THREAD_M + i;
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int j = 0; j < THREAD_N; ++j) {
          const int gn = block_n + warp_col * WARP_N + wn * WSUB_N + thread_col * THREAD_N + j;
          if (gm < M && gn < N) partial[(long long)gm * N + gn] = acc[wm * THREAD_M + i][wn * THREAD_N + j];
        }
    }
  __threadfence();
  __syncthreads();
  __shared__ int arrived;
  const int tile = tile_m * tiles_n + tile_n;
  if (tid == 0) arrived = atomicAdd(&counters[tile], 1);
  __syncthreads();
  if (arrived != SPLIT_K - 1) return;
  __threadfence();
  // volatile: read what the other blocks wrote, not a cached copy.
  const volatile float* finished = workspace;
  for (int e = tid; e < BLOCK_M * BLOCK_N; e += THREADS) {
    const int gm = block_m + e / BLOCK_N, gn = block_n + e % BLOCK_N;
    if (gm >= M || gn >= N) continue;
    float sum = 0.0f;
    for (int s = 0; s < SPLIT_K; ++s) sum += finished[(long long)s * M * N + (long long)gm * N + gn];
    const long long idx = c_index(gm, gn, ldc);
    float v = alpha * sum;
#if TS_HAS_BETA
    v += beta * C[idx];
#endif
    C[idx] = ts_epilogue(v, gm, gn, bias, epilogue_slope);
  }
  if (tid == 0) counters[tile] = 0;  // ready for the next launch
#endif
  (void)beta;
}
