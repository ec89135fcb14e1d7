// Hopper warpgroup MMA pieces shared by the bf16/fp16 wgmma templates (gemm_wgmma_half,
// gemm_tma_half): the wgmma.mma_async wrapper for m64nBLOCK_Nk16 with both operands in
// 128-byte-swizzled shared memory (K-major or MN-major through wgmma's transpose bits),
// matrix descriptors, the fence/commit/wait protocol, where each accumulator sits in C, and
// the epilogue from the accumulator registers.
//
// The including template defines BLOCK_N, BLOCK_K (64), WG_M_TILES (64-row tiles per
// warpgroup), ACC_N (BLOCK_N / 2), A_K_MAJOR, B_K_MAJOR, SPLIT_K and THREADS, and includes
// ts_tile.h first. Shared-memory layout of an operand tile (what the descriptors describe):
//  - K-major: row r (an M or N index) holds its 64 K values in 128 bytes; 8-row groups 1024
//    bytes apart.
//  - MN-major: 64-wide M/N blocks of 8 KiB, each 64 rows (one per K index) of 128 bytes.
// In both, 16-byte chunk c of 128-byte row r lies at chunk c ^ (r % 8) (the 128-byte swizzle,
// anchored to 1024-byte boundaries), and a 64-row tile of A is 8 KiB at 8192 * tile.
#pragma once
#if defined(TS_VENDOR_NVIDIA)
#if TS_AB_DTYPE == 1
#define TS_WGMMA_TYPE "f16"
#else
#define TS_WGMMA_TYPE "bf16"
#endif
// wgmma's transpose bits: 0 reads the operand K-major, 1 MN-major (16-bit types only).
#define TRANS_A (A_K_MAJOR ? 0 : 1)
#define TRANS_B (B_K_MAJOR ? 0 : 1)

// Shared-memory matrix descriptor: start address, leading and stride byte offsets (all in
// 16-byte units), 128-byte swizzle (mode 1 in bits 62-63).
__device__ __forceinline__ unsigned long long smem_descriptor(const void* p, unsigned lbo, unsigned sbo) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));
  return (unsigned long long)((addr & 0x3ffff) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}
// K-major: the leading offset is unused with this swizzle (a 16-deep step stays inside the
// 128-byte rows); 8-row groups 1024 bytes apart. MN-major: 64-wide blocks 8192 bytes apart,
// 8-row groups of K 1024 bytes apart.
#define DESC_LBO(k_major) ((k_major) ? 16u : 8192u)
#define DESC_SBO 1024u
// Descriptor advance (16-byte units) for one 16-deep step.
#define K16_STEP(k_major) ((k_major) ? 2 : 128)

#define TS_F8(d, i)                                                                                     \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])

// d = (accumulate ? d : 0) + A B for a 64 x BLOCK_N x 16 step, both operands from shared
// memory; asynchronous until wgmma_wait.
__device__ __forceinline__ void wgmma_step(float (&d)[ACC_N], unsigned long long desc_a, unsigned long long desc_b,
                                           int accumulate) {
#if BLOCK_N == 64
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TS_WGMMA_TYPE "." TS_WGMMA_TYPE " "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
      "%32, %33, p, 1, 1, %35, %36;\n}\n"
      : TS_F8(d, 0), TS_F8(d, 8), TS_F8(d, 16), TS_F8(d, 24)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(TRANS_A), "n"(TRANS_B));
#elif BLOCK_N == 128
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TS_WGMMA_TYPE "." TS_WGMMA_TYPE " "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
      "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
      "%64, %65, p, 1, 1, %67, %68;\n}\n"
      : TS_F8(d, 0), TS_F8(d, 8), TS_F8(d, 16), TS_F8(d, 24),
        TS_F8(d, 32), TS_F8(d, 40), TS_F8(d, 48), TS_F8(d, 56)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(TRANS_A), "n"(TRANS_B));
#elif BLOCK_N == 192
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32." TS_WGMMA_TYPE "." TS_WGMMA_TYPE " "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
      "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"
      "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"
      "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95}, "
      "%96, %97, p, 1, 1, %99, %100;\n}\n"
      : TS_F8(d, 0), TS_F8(d, 8), TS_F8(d, 16), TS_F8(d, 24),
        TS_F8(d, 32), TS_F8(d, 40), TS_F8(d, 48), TS_F8(d, 56),
        TS_F8(d, 64), TS_F8(d, 72), TS_F8(d, 80), TS_F8(d, 88)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(TRANS_A), "n"(TRANS_B));
#elif BLOCK_N == 256
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." TS_WGMMA_TYPE "." TS_WGMMA_TYPE " "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
      "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"
      "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"
      "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"
      "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,"
      "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, "
      "%128, %129, p, 1, 1, %131, %132;\n}\n"
      : TS_F8(d, 0), TS_F8(d, 8), TS_F8(d, 16), TS_F8(d, 24),
        TS_F8(d, 32), TS_F8(d, 40), TS_F8(d, 48), TS_F8(d, 56),
        TS_F8(d, 64), TS_F8(d, 72), TS_F8(d, 80), TS_F8(d, 88),
        TS_F8(d, 96), TS_F8(d, 104), TS_F8(d, 112), TS_F8(d, 120)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(TRANS_A), "n"(TRANS_B));
#else
#error "gemm_wgmma_half: BLOCK_N must be 64, 128, 192 or 256"
#endif
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(pending) : "memory");
}
// The accumulators pass through an (empty) asm after the last wait, so that no read of them
// moves above it.
__device__ __forceinline__ void wgmma_wait_all(float (&acc)[WG_M_TILES][ACC_N]) {
  wgmma_wait<0>();
#pragma unroll
  for (int t = 0; t < WG_M_TILES; ++t)
#pragma unroll
    for (int i = 0; i < ACC_N; ++i) asm volatile("" : "+f"(acc[t][i])::"memory");
}

// Issues the wgmma of one slice for this warpgroup: 4 16-deep steps, each over its
// WG_M_TILES tiles (B's descriptor shared by the tiles of a step). desc_a / desc_b address
// the slice's stage (A at this warpgroup's first tile).
__device__ __forceinline__ void multiply_stage(float (&acc)[WG_M_TILES][ACC_N], unsigned long long desc_a,
                                               unsigned long long desc_b) {
#pragma unroll
  for (int s = 0; s < BLOCK_K / 16; ++s)
#pragma unroll
    for (int t = 0; t < WG_M_TILES; ++t)
      wgmma_step(acc[t], desc_a + (unsigned long long)(t * (8192 >> 4) + s * K16_STEP(A_K_MAJOR)),
                 desc_b + (unsigned long long)(s * K16_STEP(B_K_MAJOR)), 1);
}

// Row and column, inside the block tile, of accumulator i of tile t of a thread (warpgroup
// wg, warp w of it, lane): row 16 w + lane / 4 (+8), column 8 j + 2 (lane % 4) (+1).
__device__ __forceinline__ int acc_row(int wg, int w, int lane, int t, int i) {
  return (wg * WG_M_TILES + t) * 64 + 16 * w + lane / 4 + 8 * ((i % 4) / 2);
}
__device__ __forceinline__ int acc_col(int lane, int i) { return 8 * (i / 4) + 2 * (lane % 4) + i % 2; }

struct AccWalk {
  const float (&acc)[WG_M_TILES][ACC_N];
  const TsTile& tile;
  int wg, w, lane, M, N;
  template <typename F>
  __device__ __forceinline__ void operator()(F f) const {
#pragma unroll
    for (int t = 0; t < WG_M_TILES; ++t)
#pragma unroll
      for (int i = 0; i < ACC_N; ++i) {
        const int gm = tile.block_m + acc_row(wg, w, lane, t, i), gn = tile.block_n + acc_col(lane, i);
        if (gm < M && gn < N) f(gm, gn, acc[t][i]);
      }
  }
};


#if SPLIT_K == 1 && TS_C_ROW_MAJOR
// C[m, n..n+1] = epilogue(alpha * acc + beta * C), as ts_store_c does element by element, with
// one 2-element load and store (C row-major, n even, ldc even, C aligned to 2 elements).
__device__ __forceinline__ void store_c_pair(ts_c_t* __restrict__ C, int m, int n, int ldc, float a0, float a1,
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
  const unsigned lo = ts_c_from_float(ts_epilogue(v0, m, n, bias, slope));
  const unsigned hi = ts_c_from_float(ts_epilogue(v1, m, n + 1, bias, slope));
  *reinterpret_cast<unsigned*>(p) = lo | (hi << 16);
#endif
  (void)beta;
}
#define TS_PAIR_STORE 1
#else
#define TS_PAIR_STORE 0
#endif

// Writes a warpgroup's accumulators (warp w of warpgroup wg) to C: two neighbouring columns
// per store where C is row-major with an even leading dimension, else through ts_finish_tile
// (which also runs the split-K reduction; tid counts the threads that write C).
__device__ __forceinline__ void wgmma_store_tile(const float (&acc)[WG_M_TILES][ACC_N], const TsTile& tile, int wg,
                                                 int w, int lane, int tid, ts_c_t* __restrict__ C,
                                                 const ts_c_t* __restrict__ bias, float* __restrict__ workspace,
                                                 int M, int N, int ldc, float alpha, float beta, float slope) {
#if TS_PAIR_STORE
  const bool pairs = (ldc % 2 == 0) && (reinterpret_cast<unsigned long long>(C) % (2 * sizeof(ts_c_t)) == 0);
  if (pairs) {
#pragma unroll
    for (int t = 0; t < WG_M_TILES; ++t)
#pragma unroll
      for (int i = 0; i < ACC_N; i += 2) {
        const int gm = tile.block_m + acc_row(wg, w, lane, t, i);
        const int gn = tile.block_n + acc_col(lane, i);  // even
        if (gm >= M) continue;
        if (gn + 1 < N) {
          store_c_pair(C, gm, gn, ldc, acc[t][i], acc[t][i + 1], alpha, beta, bias, slope);
        } else if (gn < N) {
          ts_store_c(C, gm, gn, ldc, acc[t][i], alpha, beta, bias, slope);
        }
      }
    return;
  }
#endif
  ts_finish_tile(AccWalk{acc, tile, wg, w, lane, M, N}, tile, tid, C, bias, workspace, M, N, ldc, alpha, beta, slope);
}
#endif  // TS_VENDOR_NVIDIA
