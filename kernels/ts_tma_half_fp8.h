// gemm_tma_half's FP8 slices: the multiply of one 128-deep K slice in FP8 (wgmma k32), the
// promotion of its products into the fp32 accumulators (FP8 wgmma accumulates with reduced
// precision) with per-tensor or block scales, and the steps of the loop that overlaps a slice's
// promotion with the next slice's multiply (PROMOTE_OVERLAP, PROMOTE_SLICES). Its own header, not
// a shared one: it reads the template's macros (WG_M_TILES, ACC_N, BLOCK_N, BLOCK_K, STAGE_BYTES,
// TS_BLOCK_SCALES, PROMOTE_*) and its ring and stage helpers, and is included where they are
// defined, for FP8 inputs only (TS_AB_IS_FP8).
#pragma once

// The FP8 multiply of one slice for this warpgroup into part (which it overwrites unless
// accumulate): 4 32-deep steps of the slice's 128-byte rows, each over its WG_M_TILES tiles,
// descriptors advancing 32 bytes a step as the 16-bit multiply_stage's do.
__device__ __forceinline__ void multiply_stage_fp8(float (&part)[WG_M_TILES][ACC_N], unsigned long long desc_a,
                                                   unsigned long long desc_b, int accumulate) {
#pragma unroll
  for (int s = 0; s < 4; ++s)
#pragma unroll
    for (int t = 0; t < WG_M_TILES; ++t)
      wgmma_k32_fp8<BLOCK_N>(part[t], desc_a + (unsigned long long)(t * (8192 >> 4) + s * 2),
                             desc_b + (unsigned long long)(s * 2), accumulate | (s > 0));
}

#if TS_BLOCK_SCALES
// Block scales (TS_BLOCK_SCALES, a block-scaled FP8 problem): A has one fp32 factor per row per
// 128-deep block of K (scale_a, M x ceil(K/128) row-major), B one per 128 x 128 block
// (scale_b, ceil(K/128) x ceil(N/128) row-major). A slice is one block of K (BLOCK_K 128) and
// every slice is promoted (PROMOTE_SLICES 1), so the promotion multiplies the slice's products
// by its row's and column block's factors. A thread's accumulators come in groups of 8 columns
// (acc_col), each inside one 128-column block. Tiles of 64, 128 or 256 columns start on a block
// boundary or inside one (64), so which block each group is in is known when compiling; other
// widths span up to three blocks from a start that depends on the tile.
#define SCALES_ALIGNED (BLOCK_N % 128 == 0 || BLOCK_N == 64)
#define SCALE_SPAN (SCALES_ALIGNED ? (BLOCK_N + 127) / 128 : 3)
struct SliceScales {
  float f[WG_M_TILES][2][SCALE_SPAN];  // A's factor of each of a thread's rows times each column block's
};

// What a thread reads its factors with: the tile's first row and column block, its rows' offsets.
struct ScaleReader {
  const float* __restrict__ a;  // scale_a at this thread's first row
  const float* __restrict__ b;  // scale_b at the tile's first column block
  int row_step[WG_M_TILES][2];  // from the first row to each of the thread's rows, in floats
  int kbs, nbs, last_b;         // K blocks, N blocks, the tile's last column block less its first
  int lane_kb_cap;              // kbs - 1 + lane: caps B's K block, in form lane-dependent (load_scales)
};

// A reader of the tile's factors. Rows past M read the last one.
__device__ __forceinline__ ScaleReader scale_reader(const float* __restrict__ scale_a, const float* __restrict__ scale_b,
                                                    const TsTile& tile, int wg, int w, int lane, int M, int N, int K) {
  ScaleReader r;
  r.kbs = (K + 127) / 128;
  r.nbs = (N + 127) / 128;
  r.lane_kb_cap = r.kbs - 1 + lane;
  const int first_row = min(tile.block_m + acc_row(wg, w, lane, 0, 0), M - 1);
  r.a = scale_a + (long long)first_row * r.kbs;
#pragma unroll
  for (int t = 0; t < WG_M_TILES; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      r.row_step[t][h] = (min(tile.block_m + acc_row(wg, w, lane, t, 2 * h), M - 1) - first_row) * r.kbs;
  r.b = scale_b + min(tile.block_n / 128, r.nbs - 1);
  r.last_b = r.nbs - 1 - min(tile.block_n / 128, r.nbs - 1);
  return r;
}

// One slice's factors as loaded: A's for each of the thread's rows, B's for each column block.
struct ScaleLoads {
  float a[WG_M_TILES][2];
  float b[SCALE_SPAN];
};

// The loads of the slice at k0's factors (one float in each of the tile's rows, from L2 under the
// stages' traffic). They are issued two slices before the slice is promoted (ScalePipe): read one
// slice ahead, ptxas put the multiplies forming their products right after that step's
// promotion, where the consumers waited for the loads (long scoreboard in ncu's samples, 128 x 128
// at 4096^3, run 322); two ahead ran 7-9% faster at base clocks (run 323). B's factor is the same
// for the whole warp, and ptxas moves such a value into a uniform register right after its load,
// waiting for the load there however early it was issued (runs 206-208); its K block is capped
// with lane_kb_cap, which equals kbs - 1 or more in every lane (so the block is the same) but
// depends on the lane in form, keeping the value in an ordinary register until its use. Blocks
// past N and K read the last ones: their products are zero fill, never stored or never used.
__device__ __forceinline__ ScaleLoads load_scales(const ScaleReader& r, int k0) {
  const int kb = min(k0 / BLOCK_K, r.kbs - 1);
  const int kb_b = min(kb, r.lane_kb_cap);
  ScaleLoads l;
#pragma unroll
  for (int j = 0; j < SCALE_SPAN; ++j) l.b[j] = __ldg(r.b + (long long)kb_b * r.nbs + min(j, r.last_b));
#pragma unroll
  for (int t = 0; t < WG_M_TILES; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h) l.a[t][h] = __ldg(r.a + r.row_step[t][h] + kb);
  return l;
}

// The factors of a slice for this thread's accumulators: A's factor of each row times each column
// block's. Formed when the slice's factors are taken from the pipe, from loads issued at least a
// step earlier.
__device__ __forceinline__ SliceScales scale_products(const ScaleLoads& l) {
  SliceScales s;
#pragma unroll
  for (int t = 0; t < WG_M_TILES; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int j = 0; j < SCALE_SPAN; ++j) s.f[t][h][j] = l.a[t][h] * l.b[j];
  return s;
}

// The loads of the next two slices' factors, in flight while the slices before them multiply.
struct ScalePipe {
  ScaleLoads next, after;
};

// A pipe primed at the tile's first slice.
__device__ __forceinline__ ScalePipe scale_pipe(const ScaleReader& r, int k_begin) {
  return ScalePipe{load_scales(r, k_begin), load_scales(r, k_begin + BLOCK_K)};
}

// The next slice's factors; the pipe moves on a slice and loads the factors of the slice two
// after it (k_after). Taken after the promotion in the overlapped step: loaded before its wait
// instead (their address arithmetic in the wait's shadow), ptxas spread the loads between the
// step's wgmma instructions and the kernel ran 11% slower at base clocks (run 326).
__device__ __forceinline__ SliceScales take_scales(ScalePipe& p, const ScaleReader& r, int k_after) {
  const SliceScales s = scale_products(p.next);
  p.next = p.after;
  p.after = load_scales(r, k_after);
  return s;
}

// acc += part * (A's row factor * B's column-block factor): one multiply-add per accumulator.
__device__ __forceinline__ void promote(float (&acc)[WG_M_TILES][ACC_N], const float (&part)[WG_M_TILES][ACC_N],
                                       const SliceScales& s, const TsTile& tile) {
  const int offset = tile.block_n % 128;  // columns of the first block before the tile's
#pragma unroll
  for (int i = 0; i < ACC_N; i += 4) {  // group i / 4: columns 8 * (i / 4) .. + 7 of the tile
    const int col = 8 * (i / 4);
#pragma unroll
    for (int t = 0; t < WG_M_TILES; ++t)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float f;
        if (SCALES_ALIGNED)
          f = s.f[t][h][col / 128 < SCALE_SPAN ? col / 128 : SCALE_SPAN - 1];
        else
          f = offset + col < 128 ? s.f[t][h][0] : offset + col < 256 ? s.f[t][h][1] : s.f[t][h][SCALE_SPAN - 1];
        acc[t][i + 2 * h] += part[t][i + 2 * h] * f;
        acc[t][i + 2 * h + 1] += part[t][i + 2 * h + 1] * f;
      }
  }
}
#else
struct SliceScales {};  // per-tensor scales are applied to C (alpha)
struct ScaleReader {};
struct ScalePipe {};
__device__ __forceinline__ ScalePipe scale_pipe(const ScaleReader&, int) { return {}; }
__device__ __forceinline__ SliceScales take_scales(ScalePipe&, const ScaleReader&, int) { return {}; }
__device__ __forceinline__ void promote(float (&acc)[WG_M_TILES][ACC_N], const float (&part)[WG_M_TILES][ACC_N],
                                       const SliceScales&, const TsTile&) {
#pragma unroll
  for (int t = 0; t < WG_M_TILES; ++t)
#pragma unroll
    for (int i = 0; i < ACC_N; ++i) acc[t][i] += part[t][i];
}
#endif  // TS_BLOCK_SCALES

#if PROMOTE_OVERLAP
// One slice of the overlapped loop (PROMOTE_OVERLAP): issue the slice at k0 into `issue`, wait
// until only it is in flight, hand back the previous slice's stage, and promote that slice's
// products (`done`, with done_scales) while this one multiplies; done_scales then become this
// slice's (from the pipe, which loads the factors of the slice two after it).
__device__ __forceinline__ void fp8_overlapped_step(float (&acc)[WG_M_TILES][ACC_N], float (&issue)[WG_M_TILES][ACC_N],
                                                    float (&done)[WG_M_TILES][ACC_N], bool promote_done,
                                                    SliceScales& done_scales, ScalePipe& pipe,
                                                    const ScaleReader& reader, Ring& ring, int& held, int k0,
                                                    unsigned full_addr, unsigned empty_addr,
                                                    unsigned long long desc_a0, unsigned long long desc_b0,
                                                    const TsTile& tile, int lane) {
  mbar_wait(full_addr + 8u * ring.stage, ring.phase);
  wgmma_fence();
  const unsigned long long off = (unsigned long long)(ring.stage * (STAGE_BYTES >> 4));
  multiply_stage_fp8(issue, desc_a0 + off, desc_b0 + off, 0);
  wgmma_commit();
  wgmma_wait_for<1>(done);
  if (held >= 0) release_stage(empty_addr + 8u * held, lane);
  held = ring.stage;
  ring.next();
  if (promote_done) promote(acc, done, done_scales, tile);
  done_scales = take_scales(pipe, reader, k0 + 2 * BLOCK_K);
}
// After a slice of the overlapped loop: k0 moves on a slice; at the tile's end the buffer the
// last slice went into is waited for and promoted, and the loop ends.
__device__ __forceinline__ bool overlapped_tile_done(int& k0, const TsTile& tile, float (&acc)[WG_M_TILES][ACC_N],
                                                     float (&last)[WG_M_TILES][ACC_N], const SliceScales& scales) {
  if ((k0 += BLOCK_K) < tile.k_end) return false;
  wgmma_wait_for<0>(last);
  promote(acc, last, scales, tile);
  return true;
}
#if PROMOTE_SLICES == 2
// With two slices a promotion (per-tensor scales only: a block-scaled slice has its own
// factors), the second slice of a pair goes into the same buffer as the first, on top of its
// products while they may still be in flight (as the 16-bit loop's slices go into acc); then,
// once only it is in flight, the first's stage is handed back. Nothing is promoted here: the
// pair's sum is, during the next pair's first slice. Half the promotions' adds of one slice a
// promotion, with the same registers.
__device__ __forceinline__ void fp8_overlapped_second(float (&issue)[WG_M_TILES][ACC_N], Ring& ring, int& held,
                                                      unsigned full_addr, unsigned empty_addr,
                                                      unsigned long long desc_a0, unsigned long long desc_b0,
                                                      int lane) {
  mbar_wait(full_addr + 8u * ring.stage, ring.phase);
  wgmma_fence();
  const unsigned long long off = (unsigned long long)(ring.stage * (STAGE_BYTES >> 4));
  multiply_stage_fp8(issue, desc_a0 + off, desc_b0 + off, 1);
  wgmma_commit();
  wgmma_wait<1>();
  if (held >= 0) release_stage(empty_addr + 8u * held, lane);
  held = ring.stage;
  ring.next();
}
static_assert(!TS_BLOCK_SCALES, "block scales promote every slice");
#endif
#endif
