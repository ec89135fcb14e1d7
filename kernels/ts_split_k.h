// Split-K across blocks, what the reductions share whatever their tile and workspace layout
// (ts_tile.h's ts_finish_tile, gemm_decode's REDUCE 0, gemm_gemv): reading the partials other
// blocks wrote, and the arrival that tells the last block of a tile to sum them. Needs no
// template macro.
#pragma once
#include "ts_gemm_common.h"

// A load that reads what another block wrote (after its __threadfence), not a stale
// cached copy: L2 on NVIDIA (ld.global.cg), a volatile load elsewhere.
__device__ __forceinline__ float ts_load_l2(const float* p) {
#if defined(TS_VENDOR_NVIDIA)
  return __ldcg(p);
#else
  return *static_cast<const volatile float*>(p);
#endif
}
// The same for four floats at a 16-byte aligned address.
__device__ __forceinline__ float4 ts_load_l2_4(const float* p) {
#if defined(TS_VENDOR_NVIDIA)
  return __ldcg(reinterpret_cast<const float4*>(p));
#else
  const volatile float* v = p;
  return make_float4(v[0], v[1], v[2], v[3]);
#endif
}

// Called by every thread of a block once its partial is written: counts the block in at
// counters[counter] (thread tid 0 adds) and returns, in all of them, how many blocks of the tile
// had arrived before it. The block that sees SPLIT_K - 1 is the last: it issues a __threadfence
// of its own, sums the partials and resets the counter for the next launch. The caller tests the
// count and fences, as the inline form did, so that the compilers generate what they did.
// gemm_gemv and ts_finish_tile still spell the protocol out: with this call hipRTC lays out
// gemm_gemv's branches otherwise, and ts_finish_tile (whose barrier may be a named one) computes
// its counter's index after the barrier.
__device__ __forceinline__ int ts_arrive(int* counters, int counter, int tid) {
  __threadfence();
  __syncthreads();
  __shared__ int arrived;
  if (tid == 0) arrived = atomicAdd(&counters[counter], 1);
  __syncthreads();
  return arrived;
}
