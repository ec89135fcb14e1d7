// MFMA (AMD CDNA: gfx908, gfx90a, gfx94x): the wavefront-level matrix instructions. A 16 x 16
// tile of fp32 accumulators per wavefront of 64 lanes, 4 per lane; lane l supplies row l % 16
// of A and column l % 16 of B at k = 4 (l / 16) (.. +3 for 16-bit inputs) of each step and
// holds rows 4 (l / 16) .. +3 of column l % 16 of the result. v_mfma_f32_16x16x4f32 takes one
// fp32 per lane and operand (4 deep: a true fp32 product, gemm_mma and gemm_wgmma), the 16-deep
// forms four 16-bit values (fp16, or bf16 as the problem's TS_AB_DTYPE says). AMD only.
#pragma once
#if defined(TS_VENDOR_AMD)
#include "ts_dtype.h"

// Columns of a wavefront's accumulator tile (the second 16 of every 16x16xK form here).
// ts_mma_sm80.h's TS_MMA_N is the warp's: a template with both paths reads one name.
#define TS_MMA_N 16

typedef float ts_floatx4 __attribute__((ext_vector_type(4)));
#if TS_AB_DTYPE == 1
typedef _Float16 ts_mfma_elem;
#else
typedef short ts_mfma_elem;
#endif
typedef ts_mfma_elem ts_mfma_in __attribute__((ext_vector_type(4)));
typedef short ts_short2 __attribute__((ext_vector_type(2)));

// One 16-bit element as the MFMA's operand type.
__device__ __forceinline__ ts_mfma_elem mfma_elem(ts_bits16 x) { return __builtin_bit_cast(ts_mfma_elem, x); }
// Four k-consecutive elements of a lane from one 8-byte word, where they are contiguous in
// shared memory (an operand stored K-major: 4 aligned elements never cross a 16-byte chunk).
__device__ __forceinline__ ts_mfma_in mfma_k4_contig(const ts_bits16* p) {
  return *reinterpret_cast<const ts_mfma_in*>(p);
}

// acc += a b over 4 k, fp32 (v_mfma_f32_16x16x4f32).
__device__ __forceinline__ void mfma_16x16x4_f32(float (&acc)[4], float a, float b) {
  ts_floatx4 d = {acc[0], acc[1], acc[2], acc[3]};
  d = __builtin_amdgcn_mfma_f32_16x16x4f32(a, b, d, 0, 0, 0);
#pragma unroll
  for (int i = 0; i < 4; ++i) acc[i] = d[i];
}

// acc += a b over 16 k, 16-bit inputs.
__device__ __forceinline__ void mfma_16x16x16(float (&acc)[4], ts_mfma_in a, ts_mfma_in b) {
  ts_floatx4 d = {acc[0], acc[1], acc[2], acc[3]};
#if TS_AB_DTYPE == 1
  d = __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, d, 0, 0, 0);
#elif defined(__gfx908__)
  // No 16-deep bf16 MFMA before gfx90a: two 8-deep ones, elements 0-1 then 2-3 of each lane
  // (A and B pair the same k values, so the sum is the same).
  const ts_short2 a01 = {a[0], a[1]}, a23 = {a[2], a[3]};
  const ts_short2 b01 = {b[0], b[1]}, b23 = {b[2], b[3]};
  d = __builtin_amdgcn_mfma_f32_16x16x8bf16(a01, b01, d, 0, 0, 0);
  d = __builtin_amdgcn_mfma_f32_16x16x8bf16(a23, b23, d, 0, 0, 0);
#else
  d = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, d, 0, 0, 0);
#endif
#pragma unroll
  for (int i = 0; i < 4; ++i) acc[i] = d[i];
}

// Where accumulator i (0..3) of a lane lies in its wavefront's tiles: row 4 (lane / 16) + i
// of 16-row tile mt, column lane % 16 of 16-column tile nt (none are neighbours in a row).
struct TsMfma16x16Acc {
  __device__ __forceinline__ static int row(int lane, int mt, int i) { return mt * 16 + 4 * (lane / 16) + i; }
  __device__ __forceinline__ static int col(int lane, int nt, int i) {
    (void)i;
    return nt * 16 + lane % 16;
  }
};
#endif  // TS_VENDOR_AMD
