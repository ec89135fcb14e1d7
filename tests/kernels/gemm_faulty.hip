// Test-only template: a plain one-element-per-thread GEMM with a deliberate fault
// chosen by FAULT, to prove the evaluator catches broken kernels.
//   FAULT 0: correct (the control)
//   FAULT 1: the last block in x and y returns early: a whole output tile is skipped
//   FAULT 2: the last K tile is skipped: finite but wrong values
// Serves fp32 and bf16 (A, B and C of one type): the K-slice fault must still fail the
// looser bf16 tolerance. bf16 is converted here by hand (the shared kernels/ts_dtype.h is
// not in this folder): widen by a 16-bit shift, narrow by rounding to nearest even.
#ifndef TILE
#define TILE 16
#endif
#ifndef FAULT
#define FAULT 0
#endif
#ifndef TS_AB_DTYPE
#define TS_AB_DTYPE 0
#endif

#if TS_AB_DTYPE == 2
typedef unsigned short elem_t;
__device__ __forceinline__ float to_float(elem_t x) { return __uint_as_float(((unsigned)x) << 16); }
__device__ __forceinline__ elem_t from_float(float f) {
  unsigned u = __float_as_uint(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (elem_t)(u >> 16);
}
#else
typedef float elem_t;
__device__ __forceinline__ float to_float(elem_t x) { return x; }
__device__ __forceinline__ elem_t from_float(float f) { return f; }
#endif

extern "C" __global__ void gemm_faulty(const elem_t* __restrict__ A, const elem_t* __restrict__ B,
                                       elem_t* __restrict__ C, const elem_t* __restrict__ bias,
                                       float* __restrict__ workspace, int M, int N, int K, int lda, int ldb, int ldc,
                                       float alpha, float beta, float epilogue_slope) {
  (void)bias; (void)workspace; (void)beta; (void)epilogue_slope;
#if FAULT == 1
  if (blockIdx.x == gridDim.x - 1 && blockIdx.y == gridDim.y - 1) return;
#endif
  const int n = blockIdx.x * TILE + threadIdx.x;
  const int m = blockIdx.y * TILE + threadIdx.y;
  if (m >= M || n >= N) return;
  int k_end = K;
#if FAULT == 2
  k_end = K > TILE ? ((K - 1) / TILE) * TILE : K;
#endif
  float acc = 0.0f;
  for (int k = 0; k < k_end; ++k) acc += to_float(A[(long long)m * lda + k]) * to_float(B[(long long)k * ldb + n]);
  C[(long long)m * ldc + n] = from_float(alpha * acc);
}
