// Test-only template: a plain one-element-per-thread GEMM with a GPU fault chosen by
// FAULT, to prove a worker process contains what a kernel can do to its GPU context.
//   FAULT 0: correct (the control)
//   FAULT 1: one thread writes 16 TiB past C: far outside any allocation (a fault that
//            poisons the context for good on NVIDIA; a memory access fault on AMD)
//   FAULT 2: every thread spins on a value no thread changes: the kernel never ends
//   FAULT 3: trap (an unrecoverable launch failure)
//   FAULT 4: writes NaN everywhere (runs fine, fails validation)
//   FAULT 5: correct, but the launch asks for 1 MiB of dynamic shared memory (the JSON)
#ifndef TILE
#define TILE 16
#endif
#ifndef FAULT
#define FAULT 0
#endif

extern "C" __global__ void fault_gpu(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                     const float* __restrict__ bias, float* __restrict__ workspace, int M, int N,
                                     int K, int lda, int ldb, int ldc, float alpha, float beta, float epilogue_slope) {
  (void)bias; (void)workspace; (void)beta; (void)epilogue_slope;
  const int n = blockIdx.x * TILE + threadIdx.x;
  const int m = blockIdx.y * TILE + threadIdx.y;
#if FAULT == 1
  if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0) C[1ll << 42] = 1.0f;
#endif
#if FAULT == 2
  // A volatile load per iteration keeps the loop (and its load) in the program; the
  // inputs are finite, so the NaN test never succeeds.
  volatile const float* a0 = A;
  while (!(a0[0] != a0[0])) {
  }
#endif
#if FAULT == 3
#if defined(TS_VENDOR_AMD)
  __builtin_trap();
#else
  __trap();
#endif
#endif
  if (m >= M || n >= N) return;
#if FAULT == 4
  C[(long long)m * ldc + n] = __int_as_float(0x7fc00000);
#else
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[(long long)m * lda + k] * B[(long long)k * ldb + n];
  C[(long long)m * ldc + n] = alpha * acc;
#endif
}
