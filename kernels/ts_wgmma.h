// Hopper warpgroup MMA (wgmma.mma_async, sm_90a): the instruction forms the templates use and
// the protocol around them, for every template on it (gemm_wgmma_half and gemm_tma_half with
// 16-bit inputs, ts_wgmma_half.h; gemm_wgmma and gemm_tma_tf32 with 3xTF32, ts_wgmma_tf32.h).
// A warpgroup (4 warps, 128 threads) multiplies a 64-row tile: d (64 x N fp32, N / 2 per
// thread) = (accumulate ? d : 0) + A B, asynchronously until wgmma_wait. The operand read from
// shared memory is described by a matrix descriptor (here always the 128-byte swizzle).
//
// Protocol: wgmma_fence before the first wgmma that touches accumulators written by other
// instructions; wgmma_commit closes a group; wgmma_wait<n> returns once at most n groups are
// in flight; writes to shared memory through the generic proxy (st.shared, cp.async) must be
// followed by fence_proxy_async (and a barrier) before a wgmma reads them.
#pragma once
#if !defined(TS_VENDOR_AMD)
#include "ts_dtype.h"
#include "ts_smem.h"

// Eight accumulator registers as read-write asm operands.
#define TS_F8(d, i)                                                                                     \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])

// The first 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120 or 128 operands of an asm statement
// as a register list: the accumulators of a wgmma form (N / 2 a thread, written first),
// "{" TS_REGS_32 "}" for N = 64.
#define TS_REGS_32 \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15" \
  ",%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
#define TS_REGS_40 TS_REGS_32 ",%32,%33,%34,%35,%36,%37,%38,%39"
#define TS_REGS_48 TS_REGS_40 ",%40,%41,%42,%43,%44,%45,%46,%47"
#define TS_REGS_56 TS_REGS_48 ",%48,%49,%50,%51,%52,%53,%54,%55"
#define TS_REGS_64 \
  TS_REGS_32 \
  ",%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47" \
  ",%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
#define TS_REGS_96 \
  TS_REGS_64 \
  ",%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79" \
  ",%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95"
#define TS_REGS_80 \
  TS_REGS_64 \
  ",%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79"
#define TS_REGS_112 \
  TS_REGS_96 \
  ",%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111"
#define TS_REGS_72 TS_REGS_64 ",%64,%65,%66,%67,%68,%69,%70,%71"
#define TS_REGS_88 TS_REGS_80 ",%80,%81,%82,%83,%84,%85,%86,%87"
#define TS_REGS_104 TS_REGS_96 ",%96,%97,%98,%99,%100,%101,%102,%103"
#define TS_REGS_120 TS_REGS_112 ",%112,%113,%114,%115,%116,%117,%118,%119"
#define TS_REGS_128 \
  TS_REGS_96 \
  ",%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111" \
  ",%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(pending) : "memory");
}
// Waits for every group; the accumulators then pass through an (empty) asm, so that no read
// of them moves above the wait.
template <int N>
__device__ __forceinline__ void wgmma_wait_all(float (&d)[N]) {
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// Waits until at most `pending` groups are in flight; d, the accumulators of a group that has
// finished by then, pass through the same empty asm.
template <int pending, int T, int N>
__device__ __forceinline__ void wgmma_wait_for(float (&d)[T][N]) {
  wgmma_wait<pending>();
#pragma unroll
  for (int t = 0; t < T; ++t)
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[t][i])::"memory");
}
template <int T, int N>
__device__ __forceinline__ void wgmma_wait_all(float (&d)[T][N]) {
  wgmma_wait_for<0>(d);
}

// Makes this thread's generic-proxy writes to shared memory visible to the async proxy, through
// which wgmma (and TMA) read it.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Shared-memory matrix descriptor: start address, leading and stride byte offsets (all in
// 16-byte units), 128-byte swizzle (mode 1 in bits 62-63).
__device__ __forceinline__ unsigned long long smem_descriptor(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3ffff) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ unsigned long long smem_descriptor(const void* p, unsigned lbo, unsigned sbo) {
  return smem_descriptor(smem_addr(p), lbo, sbo);
}

// The problem's 16-bit input type as wgmma names it.
#if TS_AB_DTYPE == 1
#define TS_WGMMA_TYPE "f16"
#else
#define TS_WGMMA_TYPE "bf16"
#endif

// The text of wgmma_k16's asm for m64nNNk16: REGS the accumulators (%0 .. N/2 - 1), then
// operands DA, DB (descriptors), P (accumulate), TA, TB (transpose bits).
#define TS_WGMMA_K16_ASM(NN, REGS, DA, DB, P, TA, TB)                                                    \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %" #P ", 0;\n"                                                     \
  "wgmma.mma_async.sync.aligned.m64n" #NN "k16.f32." TS_WGMMA_TYPE "." TS_WGMMA_TYPE " "                 \
  "{" REGS "}, "                                                                                       \
  "%" #DA ", %" #DB ", p, 1, 1, %" #TA ", %" #TB ";\n}\n"
// 16 and 32 accumulator registers as read-write asm operands.
#define TS_F16(d, i) TS_F8(d, i), TS_F8(d, i + 8)
#define TS_F32(d, i) TS_F16(d, i), TS_F16(d, i + 16)
// Every m64nN form the templates use, listed once for wgmma_k16 and wgmma_k32_fp8 (wgmma has every
// multiple of 8 up to 256): N; the accumulators' register list (N / 2 operands, written first); the
// numbers of the operands after them (descriptors, accumulate flag, transpose bits; the FP8 form
// uses the first three); the accumulators as asm operands: F(ASM, N, REGS, (OPERAND NUMBERS), (ACCUMULATORS)),
// ASM the asm text's macro passed through.
#define TS_WGMMA_FORMS(F, ASM)                                                                       \
  F(ASM, 64, TS_REGS_32, (32, 33, 34, 35, 36), (TS_F32(d, 0)))                                       \
  F(ASM, 80, TS_REGS_40, (40, 41, 42, 43, 44), (TS_F32(d, 0), TS_F8(d, 32)))                         \
  F(ASM, 96, TS_REGS_48, (48, 49, 50, 51, 52), (TS_F32(d, 0), TS_F16(d, 32)))                        \
  F(ASM, 112, TS_REGS_56, (56, 57, 58, 59, 60), (TS_F32(d, 0), TS_F16(d, 32), TS_F8(d, 48)))         \
  F(ASM, 128, TS_REGS_64, (64, 65, 66, 67, 68), (TS_F32(d, 0), TS_F32(d, 32)))                       \
  F(ASM, 144, TS_REGS_72, (72, 73, 74, 75, 76), (TS_F32(d, 0), TS_F32(d, 32), TS_F8(d, 64)))         \
  F(ASM, 160, TS_REGS_80, (80, 81, 82, 83, 84), (TS_F32(d, 0), TS_F32(d, 32), TS_F16(d, 64)))        \
  F(ASM, 176, TS_REGS_88, (88, 89, 90, 91, 92),                                                      \
    (TS_F32(d, 0), TS_F32(d, 32), TS_F16(d, 64), TS_F8(d, 80)))                                      \
  F(ASM, 192, TS_REGS_96, (96, 97, 98, 99, 100), (TS_F32(d, 0), TS_F32(d, 32), TS_F32(d, 64)))       \
  F(ASM, 208, TS_REGS_104, (104, 105, 106, 107, 108),                                                \
    (TS_F32(d, 0), TS_F32(d, 32), TS_F32(d, 64), TS_F8(d, 96)))                                      \
  F(ASM, 224, TS_REGS_112, (112, 113, 114, 115, 116),                                                \
    (TS_F32(d, 0), TS_F32(d, 32), TS_F32(d, 64), TS_F16(d, 96)))                                     \
  F(ASM, 240, TS_REGS_120, (120, 121, 122, 123, 124),                                                \
    (TS_F32(d, 0), TS_F32(d, 32), TS_F32(d, 64), TS_F16(d, 96), TS_F8(d, 112)))                      \
  F(ASM, 256, TS_REGS_128, (128, 129, 130, 131, 132),                                                \
    (TS_F32(d, 0), TS_F32(d, 32), TS_F32(d, 64), TS_F32(d, 96)))
// A parenthesised list without its parentheses, and a macro called on an argument list that holds one.
#define TS_UNPAREN(...) __VA_ARGS__
#define TS_CALL(M, ...) M(__VA_ARGS__)
// One form's branch of a wgmma function: if constexpr (N == NN) asm ...; else (the next form's, and
// last an error). TS_WGMMA_INPUTS, the asm's input operands, is the function's own (defined around it).
#define TS_WGMMA_BRANCH(ASM, NN, REGS, OPS, ACC)                                                     \
  if constexpr (N == NN)                                                                             \
    asm volatile(TS_CALL(ASM, NN, REGS, TS_UNPAREN OPS) : TS_UNPAREN ACC : TS_WGMMA_INPUTS);         \
  else

// d = (accumulate ? d : 0) + A B for a 64 x N x 16 step of 16-bit inputs, both operands from
// shared memory (desc_a, desc_b); trans_a / trans_b: wgmma's transpose bits, 0 reads the
// operand K-major, 1 MN-major.
template <int N, int trans_a, int trans_b>
__device__ __forceinline__ void wgmma_k16(float (&d)[N / 2], unsigned long long desc_a, unsigned long long desc_b,
                                          int accumulate) {
#define TS_WGMMA_INPUTS "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(trans_a), "n"(trans_b)
  TS_WGMMA_FORMS(TS_WGMMA_BRANCH, TS_WGMMA_K16_ASM) {
    static_assert(N < 0, "wgmma_k16: N must be one of TS_WGMMA_FORMS' (64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256)");
  }
#undef TS_WGMMA_INPUTS
}

#if TS_AB_IS_FP8
// The problem's FP8 input types as wgmma names them (A's, then B's: they may differ).
#if TS_AB_DTYPE == TS_DTYPE_E4M3
#define TS_WGMMA_FP8_TYPE_A "e4m3"
#else
#define TS_WGMMA_FP8_TYPE_A "e5m2"
#endif
#if TS_B_DTYPE == TS_DTYPE_E4M3
#define TS_WGMMA_FP8_TYPE_B "e4m3"
#else
#define TS_WGMMA_FP8_TYPE_B "e5m2"
#endif
// The text of wgmma_k32_fp8's asm for m64nNNk32: as TS_WGMMA_K16_ASM, without transpose bits (8-bit
// inputs are read K-major only: the form's last two operand numbers go unused).
#define TS_WGMMA_K32_FP8_ASM(NN, REGS, DA, DB, P, ...)                                                   \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %" #P ", 0;\n"                                                     \
  "wgmma.mma_async.sync.aligned.m64n" #NN "k32.f32." TS_WGMMA_FP8_TYPE_A "." TS_WGMMA_FP8_TYPE_B " "         \
  "{" REGS "}, "                                                                                       \
  "%" #DA ", %" #DB ", p, 1, 1;\n}\n"

// d = (accumulate ? d : 0) + A B for a 64 x N x 32 step of FP8 inputs, both operands K-major in
// shared memory. The tensor cores sum FP8 products in less than fp32's precision: callers promote
// the result into fp32 registers every 128 of K (gemm_tma_half).
template <int N>
__device__ __forceinline__ void wgmma_k32_fp8(float (&d)[N / 2], unsigned long long desc_a, unsigned long long desc_b,
                                              int accumulate) {
#define TS_WGMMA_INPUTS "l"(desc_a), "l"(desc_b), "r"(accumulate)
  TS_WGMMA_FORMS(TS_WGMMA_BRANCH, TS_WGMMA_K32_FP8_ASM) {
    static_assert(N < 0, "wgmma_k32_fp8: N must be one of TS_WGMMA_FORMS' (64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256)");
  }
#undef TS_WGMMA_INPUTS
}
#endif

// d = (accumulate ? d : 0) + a B for a 64 x N x 8 step of TF32 inputs: a, the 64 x 8 fragment,
// from registers (4 per thread), B (8 x N, K-major) from shared memory (desc).
template <int N>
__device__ __forceinline__ void wgmma_k8_tf32(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long desc,
                                              int accumulate) {
  static_assert(N == 64 || N == 128, "wgmma_k8_tf32: N must be 64 or 128");
  if constexpr (N == 64) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
        "{" TS_REGS_32 "}, {%32,%33,%34,%35}, %36, p, 1, 1;\n}\n"
        : TS_F8(d, 0), TS_F8(d, 8), TS_F8(d, 16), TS_F8(d, 24)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate));
  } else if constexpr (N == 128) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{" TS_REGS_64 "}, {%64,%65,%66,%67}, %68, p, 1, 1;\n}\n"
        : TS_F8(d, 0), TS_F8(d, 8), TS_F8(d, 16), TS_F8(d, 24), TS_F8(d, 32), TS_F8(d, 40), TS_F8(d, 48),
          TS_F8(d, 56)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate));
  }
}
#endif  // !TS_VENDOR_AMD
