// Test-only template for tests/worker: its parameters select process-level faults in
// the fault-injecting worker (tests/worker/faults.h), which never runs this kernel.
// The kernel is a plain correct GEMM so the template compiles on its own like any other.
#ifndef FAULT
#define FAULT 0
#endif

extern "C" __global__ void fault_process(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, const float* __restrict__ bias,
                                         float* __restrict__ workspace, int M, int N, int K, int lda, int ldb,
                                         int ldc, float alpha, float beta, float epilogue_slope) {
  (void)bias; (void)workspace; (void)beta; (void)epilogue_slope;
  const int n = blockIdx.x * 16 + threadIdx.x;
  const int m = blockIdx.y * 16 + threadIdx.y;
  if (m >= M || n >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[(long long)m * lda + k] * B[(long long)k * ldb + n];
  C[(long long)m * ldc + n] = alpha * acc;
}
