// The epilogue and the stores of C, shared by every GEMM template: alpha, beta and the fused
// epilogue applied in fp32, then one rounding to C's type. Included by ts_gemm_common.h, after
// the problem macros' defaults (TS_C_ROW_MAJOR, TS_HAS_BETA, TS_EPILOGUE, the types) it reads.
// Where a tile's elements come from (accumulator layouts, split-K) is ts_tile.h's.
#pragma once

#if TS_EPILOGUE == 5 || TS_EPILOGUE == 6
// GELU's tanh form, 0.5 v (1 + tanh(u)), u = sqrt(2/pi) (v + 0.044715 v^3), at the cost of one or
// two special-function instructions: the epilogue of a large tile runs while the tensor cores
// wait (or beside the other consumer's multiply), and tanhf's full-accuracy path is several
// times longer. With a 16-bit C the hardware tanh (relative error about 2^-11, below fp16's
// rounding of the result) is enough; with an fp32 C the identity 0.5 (1 + tanh(u)) =
// 1 / (1 + exp(-2u)) keeps the error near fp32's (one exp2 and one reciprocal, both approximate
// to a few ulp). Large negative v gives exp = inf and v / inf = -0, GELU's limit.
__device__ __forceinline__ float ts_gelu(float v) {
  const float u = v * (0.7978845608028654f + 0.0356774081363001f * v * v);
#if TS_C_DTYPE != 0 && !defined(TS_VENDOR_AMD)
  float t;
  asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
  return 0.5f * v * (1.0f + t);
#else
  return __fdividef(v, 1.0f + __expf(-2.0f * u));
#endif
}
#endif

#if (TS_EPILOGUE == 5 || TS_EPILOGUE == 6) && TS_C_DTYPE != 0 && !defined(TS_VENDOR_AMD) && defined(__CUDA_ARCH__) && \
    __CUDA_ARCH__ >= 900
// GELU of two values at once in C's 16-bit type (Hopper's packed bf16x2/f16x2 arithmetic and
// tanh): about half the instructions of ts_gelu a value, which matters beside another consumer's
// multiply, where every epilogue instruction measurably slows it (notes/open-ends.md, forty-sixth
// session). h = v/2 (clamped at -16, where GELU is 0 to C's precision, so that -inf gives 0, not
// NaN), u = h (2c0 + 8c1 h^2), GELU = h + h tanh(u), one rounding at the last fma. The error,
// |h| times a few 16-bit ulps of tanh and u, stays inside the tolerance's output term (8 ulps of
// C times |v|, docs/timing-and-tolerances.md).
#define TS_GELU_PACKED 1
#if TS_C_DTYPE == TS_DTYPE_BF16
#define TS_PACKED_TYPE "bf16x2"
#else
#define TS_PACKED_TYPE "f16x2"
#endif
__device__ __forceinline__ unsigned ts_gelu_pack2(float v0, float v1) {
  // Both halves of each word: 0.5, -16, 8c1 and 2c0 (c0 = sqrt(2/pi), c1 = 0.044715 c0) in C's type.
  constexpr bool bf16 = TS_C_DTYPE == TS_DTYPE_BF16;
  constexpr unsigned half = bf16 ? 0x3F003F00u : 0x38003800u, low = bf16 ? 0xC180C180u : 0xCC00CC00u,
                     c8 = bf16 ? 0x3E923E92u : 0x34913491u, c2 = bf16 ? 0x3FCC3FCCu : 0x3E623E62u;
  unsigned y;
  asm("{\n\t.reg .b32 h, s, u, t;\n\t"
      "mul.rn." TS_PACKED_TYPE " h, %1, %2;\n\t"
      "max.NaN." TS_PACKED_TYPE " h, h, %3;\n\t"
      "mul.rn." TS_PACKED_TYPE " s, h, h;\n\t"
      "fma.rn." TS_PACKED_TYPE " u, s, %4, %5;\n\t"
      "mul.rn." TS_PACKED_TYPE " u, u, h;\n\t"
      "tanh.approx." TS_PACKED_TYPE " t, u;\n\t"
      "fma.rn." TS_PACKED_TYPE " %0, h, t, h;\n\t}"
      : "=r"(y)
      : "r"(ts_c_pack2(v0, v1)), "r"(half), "r"(low), "r"(c8), "r"(c2));
  return y;
}
#undef TS_PACKED_TYPE
#endif

// Which bias the epilogue adds: one value per row of C (bias_row) or per column (bias_col, bias_gelu).
#define TS_BIAS_PER_ROW (TS_EPILOGUE == 1)
#define TS_BIAS_PER_COLUMN (TS_EPILOGUE == 2 || TS_EPILOGUE == 6)

// The bias value of C[m, n] in fp32 (0 where the epilogue has none). m, n index the bias, which has
// C's element type.
__device__ __forceinline__ float ts_bias_at(int m, int n, const ts_c_t* __restrict__ bias) {
#if TS_BIAS_PER_ROW
  return ts_c_to_float(bias[m]);
#elif TS_BIAS_PER_COLUMN
  return ts_c_to_float(bias[n]);
#else
  (void)m;
  (void)n;
  (void)bias;
  return 0.0f;
#endif
}

// The fused epilogue applied in fp32 to v = alpha*AB + beta*C, with the element's bias value b
// already read (ts_bias_at): a template that reads a row's biases in one piece calls this.
__device__ __forceinline__ float ts_epilogue_with(float v, float b, float slope) {
#if TS_EPILOGUE == 1 || TS_EPILOGUE == 2
  v += b;
#elif TS_EPILOGUE == 3
  v = v > 0.0f ? v : 0.0f;
#elif TS_EPILOGUE == 4
  v = v > 0.0f ? v : v * slope;
#elif TS_EPILOGUE == 5
  v = ts_gelu(v);
#elif TS_EPILOGUE == 6
  v = ts_gelu(v + b);
#endif
  (void)b;
  (void)slope;
  return v;
}

#if TS_C_DTYPE != TS_DTYPE_F32
// Two neighbouring values' epilogue (as ts_epilogue_with), packed into one word of C's 16-bit
// type: where GELU runs two at a time, that way.
__device__ __forceinline__ unsigned ts_epilogue_pack2(float v0, float v1, float b0, float b1, float slope) {
#ifdef TS_GELU_PACKED
  (void)slope;
  return TS_EPILOGUE == 6 ? ts_gelu_pack2(v0 + b0, v1 + b1) : ts_gelu_pack2(v0, v1);
#else
  return ts_c_pack2(ts_epilogue_with(v0, b0, slope), ts_epilogue_with(v1, b1, slope));
#endif
}
#endif

// Applied in fp32 to alpha*AB + beta*C before the store (and its rounding to C's type).
__device__ __forceinline__ float ts_epilogue(float v, int m, int n, const ts_c_t* __restrict__ bias, float slope) {
  return ts_epilogue_with(v, ts_bias_at(m, n, bias), slope);
}

__device__ __forceinline__ long long ts_c_index(int m, int n, int ldc) {
#if TS_C_ROW_MAJOR
  return (long long)m * ldc + n;
#else
  return (long long)n * ldc + m;
#endif
}

// C[m, n] = epilogue(alpha * acc + beta * C[m, n]), in fp32, rounded once to C's type.
__device__ __forceinline__ void ts_store_c(ts_c_t* __restrict__ C, int m, int n, int ldc, float acc, float alpha,
                                           float beta, const ts_c_t* __restrict__ bias, float slope) {
  const long long idx = ts_c_index(m, n, ldc);
  float v = alpha * acc;
#if TS_HAS_BETA
  v += beta * ts_c_to_float(C[idx]);
#endif
  (void)beta;
  C[idx] = ts_c_from_float(ts_epilogue(v, m, n, bias, slope));
}

#if TS_C_ROW_MAJOR
// C[m, n..n+1] = epilogue(alpha * acc + beta * C), as ts_store_c does element by element, with
// one 2-element load and store (C row-major, n even, ldc even, C aligned to 2 elements): the
// store of two neighbouring accumulators of an MMA fragment.
__device__ __forceinline__ void ts_store_c_pair(ts_c_t* __restrict__ C, int m, int n, int ldc, float a0, float a1,
                                                float alpha, float beta, const ts_c_t* __restrict__ bias, float slope) {
  ts_c_t* p = C + (long long)m * ldc + n;
  float v0 = alpha * a0, v1 = alpha * a1;
#if TS_C_DTYPE == 0
#if TS_HAS_BETA
  const float2 old = *reinterpret_cast<const float2*>(p);
  v0 += beta * old.x;
  v1 += beta * old.y;
#endif
  *reinterpret_cast<float2*>(p) = make_float2(ts_epilogue(v0, m, n, bias, slope), ts_epilogue(v1, m, n + 1, bias, slope));
#else
#if TS_HAS_BETA
  const unsigned old = *reinterpret_cast<const unsigned*>(p);
  v0 += beta * ts_c_to_float((ts_c_t)(old & 0xffffu));
  v1 += beta * ts_c_to_float((ts_c_t)(old >> 16));
#endif
#ifdef TS_GELU_PACKED  // GELU two values at a time; the other epilogues keep their code as it was
  *reinterpret_cast<unsigned*>(p) = ts_epilogue_pack2(v0, v1, ts_bias_at(m, n, bias), ts_bias_at(m, n + 1, bias), slope);
#else
  *reinterpret_cast<unsigned*>(p) = ts_c_pack2(ts_epilogue(v0, m, n, bias, slope), ts_epilogue(v1, m, n + 1, bias, slope));
#endif
#endif
  (void)beta;
}
#endif
