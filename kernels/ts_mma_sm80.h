// mma.sync (NVIDIA sm_80+, also on Hopper): the warp-level tensor-core instruction. A 16 x 8
// tile of fp32 accumulators per warp, 4 per thread, from A (16 x k, row) and B (k x 8, col)
// fragments in registers: m16n8k16 with fp16/bf16 inputs (gemm_hmma, gemm_decode; the type is
// the problem's TS_AB_DTYPE), m16n8k8 with TF32 inputs (gemm_mma's 3xTF32) and m16n8k32 with FP8
// inputs (gemm_stream). NVIDIA only.
#pragma once
#if !defined(TS_VENDOR_AMD)
#include "ts_dtype.h"

// Columns of a warp's accumulator tile (the n of m16n8k16 and m16n8k8). ts_mfma.h's TS_MMA_N is
// the wavefront's: a template with both paths reads one name.
#define TS_MMA_N 8

// d += a*b on a 16x8x16 tile: a = 4 registers of 2 16-bit values (ldsm_x4 of A), b0, b1 = 2
// registers of B.
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

// d = a*b + c on a 16x8x8 TF32 tile (c = d when accumulating). The tensor cores read a TF32
// operand from the top 19 bits of its register and ignore the low 13. Not volatile: the
// compiler may schedule these freely among the operand splits.
__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// d = a*b, starting from zero.
__device__ __forceinline__ void mma_tf32_first(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  // C is operand 10, the zero: d's registers are outputs only here ("=f"), so naming them as C
  // would add whatever they held (a 3xTF32 chain's first product is not accumulated).
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%10,%10,%10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
}

// Where accumulator i (0..3) of a thread lies in its warp's tiles: row lane / 4 (+8 for i >= 2)
// of 16-row tile mt, column 2 (lane % 4) (+1 for odd i) of 8-column tile nt. Accumulators 2h
// and 2h + 1 are neighbours in a row (one 2-element store of a row-major C: ts_store_c_pair).
struct TsMma16x8Acc {
  __device__ __forceinline__ static int row(int lane, int mt, int i) { return mt * 16 + lane / 4 + (i / 2) * 8; }
  __device__ __forceinline__ static int col(int lane, int nt, int i) { return nt * 8 + (lane % 4) * 2 + i % 2; }
};

// d += a*b on a 16x8x32 tile of FP8 values (sm_89+): the same registers as m16n8k16's, each holding
// four 8-bit values where m16n8k16's hold two 16-bit ones, so a fragment's bytes lie where a
// 16-bit fragment's do. TA, TB: the instruction's A and B types (TS_DTYPE_E4M3 or TS_DTYPE_E5M2).
// The tensor cores sum FP8 products in less than fp32's precision (docs/timing-and-tolerances.md):
// a caller sums a few of them in a d of their own and adds that into its fp32 accumulators (the
// promotion).
#define TS_MMA_FP8_ASM(TA, TB)                                                                              \
  "mma.sync.aligned.m16n8k32.row.col.f32." TA "." TB ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "        \
  "{%0,%1,%2,%3};\n"
template <int TA, int TB>
__device__ __forceinline__ void mma16832_fp8(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  static_assert((TA == TS_DTYPE_E4M3 || TA == TS_DTYPE_E5M2) && (TB == TS_DTYPE_E4M3 || TB == TS_DTYPE_E5M2),
                "mma16832_fp8: e4m3 or e5m2");
#define TS_MMA_FP8_OPERANDS                                                      \
  : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                               \
  : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))
  if constexpr (TA == TS_DTYPE_E4M3 && TB == TS_DTYPE_E4M3)
    asm volatile(TS_MMA_FP8_ASM("e4m3", "e4m3") TS_MMA_FP8_OPERANDS;
  else if constexpr (TA == TS_DTYPE_E4M3)
    asm volatile(TS_MMA_FP8_ASM("e4m3", "e5m2") TS_MMA_FP8_OPERANDS;
  else if constexpr (TB == TS_DTYPE_E4M3)
    asm volatile(TS_MMA_FP8_ASM("e5m2", "e4m3") TS_MMA_FP8_OPERANDS;
  else
    asm volatile(TS_MMA_FP8_ASM("e5m2", "e5m2") TS_MMA_FP8_OPERANDS;
#undef TS_MMA_FP8_OPERANDS
}
#endif  // !TS_VENDOR_AMD
