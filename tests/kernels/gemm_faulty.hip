// Test-only template: a plain one-element-per-thread GEMM with a deliberate fault
// chosen by FAULT, to prove the evaluator catches broken kernels.
//   FAULT 0: correct (the control)
//   FAULT 1: the last block in x and y returns early: a whole output tile is skipped
//   FAULT 2: the last K tile is skipped: finite but wrong values
#ifndef TILE
#define TILE 16
#endif
#ifndef FAULT
#define FAULT 0
#endif

extern "C" __global__ void gemm_faulty(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                       const float* __restrict__ bias, float* __restrict__ workspace, int M, int N,
                                       int K, int lda, int ldb, int ldc, float alpha, float beta, float epilogue_slope) {
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
  for (int k = 0; k < k_end; ++k) acc += A[(long long)m * lda + k] * B[(long long)k * ldb + n];
  C[(long long)m * ldc + n] = alpha * acc;
}
