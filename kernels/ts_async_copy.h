// Global -> shared copies for the pipelined templates: cp.async on NVIDIA sm_80+ (the
// data goes straight to shared memory, no staging registers, several groups in flight);
// elsewhere (AMD, older NVIDIA) ordinary loads and stores with the same interface, so a
// template keeps one schedule for both.
#pragma once

#if defined(TS_VENDOR_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TS_ASYNC_COPY 1
#else
#define TS_ASYNC_COPY 0
#endif

// Copies `elems` floats (1, 2 or 4) from global to shared; the first `valid` (0..elems)
// are read and the rest are zeros. src must be aligned to elems * 4 bytes; when valid is
// 0 it is not read at all.
template <int elems>
__device__ __forceinline__ void ts_copy(float* dst, const float* src, int valid) {
#if TS_ASYNC_COPY
  const unsigned saddr = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const int src_bytes = valid * 4;  // the hardware zero-fills past src_bytes
  if (elems == 4)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr), "l"(src), "r"(src_bytes));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(saddr), "l"(src), "n"(elems * 4),
                 "r"(src_bytes));
#else
#pragma unroll
  for (int i = 0; i < elems; ++i) dst[i] = i < valid ? src[i] : 0.0f;
#endif
}

__device__ __forceinline__ void ts_commit() {
#if TS_ASYNC_COPY
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most `pending` committed groups are still in flight.
template <int pending>
__device__ __forceinline__ void ts_wait() {
#if TS_ASYNC_COPY
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
#endif
}

// How many of a copy's `elems` floats lie inside the matrix, `left` being the distance
// from the copy's first element to the edge.
__device__ __forceinline__ int ts_inside(int left, int elems) { return left <= 0 ? 0 : (left < elems ? left : elems); }

// The K loop of a pipelined template: `stages` slots of shared memory, `stages`-1 K steps
// in flight ahead of the one multiplied. load(slot, step) starts the copies of K step
// `step` into slot `slot`; multiply(slot, step) consumes a step once every thread's copies
// have landed. Each step is one commit group (empty groups keep the count uniform), and
// the barrier before each multiply also frees the slot that the next load reuses.
template <int stages, typename Load, typename Multiply>
__device__ __forceinline__ void ts_pipeline(int steps, Load&& load, Multiply&& multiply) {
#pragma unroll
  for (int s = 0; s < stages - 1; ++s) {
    if (s < steps) load(s, s);
    ts_commit();
  }
  for (int t = 0; t < steps; ++t) {
    ts_wait<stages - 2>();  // step t has landed (this thread's copies)
    __syncthreads();        // ... and everyone's; every warp is done with step t-1's slot
    const int next = t + stages - 1;
    if (next < steps) load(next % stages, next);
    ts_commit();
    multiply(t % stages, t);
  }
  ts_wait<0>();
}
