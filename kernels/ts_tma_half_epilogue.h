// gemm_tma_half's epilogues: how a consumer's finished accumulators leave the block. Its own
// header, not a shared one: it reads the template's macros (WG_M_TILES, ACC_N, BLOCK_N,
// EPILOGUE_SMEM, CLUSTER_K, the C type's and the epilogue's) and is included where they are
// defined. Three ways, by the config:
//  - EPILOGUE_SMEM 1: each warp stages 32-column chunks in 2 KiB of shared memory and stores
//    them in 16-byte pieces (store_tile_via_smem);
//  - EPILOGUE_SMEM 2: the tile is finished in registers and stored by the tensor memory
//    accelerator from a swizzled buffer per consumer (store_tile_via_tma);
//  - CLUSTER_K > 1: the cluster's partial tiles summed over distributed shared memory
//    (reduce_in_cluster).
// EPILOGUE_SMEM 0 stores straight from the registers (ts_wgmma_half.h's wgmma_store_tile). With
// SPLIT_K the shares of a tile first meet in one block's registers (gather_splits), which then
// stores the tile by whichever of these the config names.
#pragma once

#define SMEM_EPILOGUE (EPILOGUE_SMEM && CLUSTER_K == 1 && TS_C_ROW_MAJOR && !TS_HAS_BETA)
#if SMEM_EPILOGUE
// The shared-memory epilogue runs in chunks: a chunk is 32 columns (one 128-byte line of fp32) of
// the warp's 16 rows of one 64-row accumulator tile, so a consumer warp's tile is EPI_CHUNKS of them.
// The accumulators are registers, indexed at compile time, so putting a chunk into shared memory is
// one short unrolled copy per chunk; everything after that (alpha, bias, activation, rounding, the
// stores) is one copy of the code in a loop over chunks. Unrolled over the whole tile it was
// 128 values' worth of epilogue code in each of two paths (the kernel's code grew from 115 to
// 183 KB with bias + GELU), and the consumers ran it between K loops at the cost of the next loop's
// instruction fetches.
#define CHUNK_COLS 32
#define CHUNKS_PER_TILE (BLOCK_N / CHUNK_COLS)
#define EPI_CHUNKS (WG_M_TILES * CHUNKS_PER_TILE)
#define PIECE_VALS (16 / (int)sizeof(ts_c_t))      // values of C in one 16-byte store
#define PIECES_PER_ROW (CHUNK_COLS / PIECE_VALS)  // 4 (16-bit C) or 8 (fp32 C)
#define ROWS_PER_PASS (TS_WARP_SIZE / PIECES_PER_ROW)
static_assert(EPILOGUE_SMEM != 1 || BLOCK_N % CHUNK_COLS == 0, "whole chunks per tile (the TMA store has passes of its own)");

// Where the 16-byte granule g (0..7) of row r lies in the warp's 2 KiB buffer (16 rows of 128 bytes),
// swizzled so that neither stage_chunk's 8-byte writes nor finish_chunk's 16-byte reads conflict on
// banks: a half-warp writes two neighbouring granules of rows r..r+3, which XOR with 2 (r % 4) puts in
// four different pairs of granules; a quarter-warp reads every other granule of rows r and r + 1, and
// the low bit r % 2 puts those into the odd granules for one row and the even ones for the other.
__device__ __forceinline__ int epi_granule_offset(int r, int g) {
  return r * 128 + ((g ^ (((r & 3) << 1) | (r & 1))) << 4);
}

// Puts chunk ch of this lane's accumulators into buf (epi_granule_offset's layout). Chunk ch is 64-row tile ch / CHUNKS_PER_TILE, columns q * 32.. with
// q = ch % CHUNKS_PER_TILE: accumulators 16 q .. 16 q + 15 of that tile, in pairs of neighbouring columns.
__device__ __forceinline__ void stage_chunk(const float (&acc)[WG_M_TILES][ACC_N], int ch, unsigned char* buf,
                                            int lane) {
#pragma unroll
  for (int cc = 0; cc < EPI_CHUNKS; ++cc) {
    if (cc != ch) continue;
    const int t = cc / CHUNKS_PER_TILE, q = cc % CHUNKS_PER_TILE;
#pragma unroll
    for (int ii = 0; ii < CHUNK_COLS / 4; ++ii) {
      const int i = q * (CHUNK_COLS / 2) + 2 * ii;
      const int r = lane / 4 + 8 * ((i % 4) / 2);
      const int byte = (acc_col(lane, i) - q * CHUNK_COLS) * 4;  // 8-byte aligned
      *reinterpret_cast<float2*>(buf + epi_granule_offset(r, byte >> 4) + (byte & 15)) =
          make_float2(acc[t][i], acc[t][i + 1]);
    }
  }
}

// Element j of a 16-byte piece of C's type held as four 32-bit words.
__device__ __forceinline__ ts_c_t piece_element(const unsigned (&words)[4], int j) {
#if TS_C_DTYPE == 0
  return __uint_as_float(words[j]);
#else
  return (ts_c_t)(words[j / 2] >> (16 * (j % 2)));
#endif
}

// The bias values of C[m, n .. n + PIECE_VALS - 1], in one 16-byte read where the bias allows.
__device__ __forceinline__ void bias_piece(float (&b)[PIECE_VALS], int m, int n, int N, const ts_c_t* __restrict__ bias) {
#if TS_BIAS_PER_COLUMN
  const ts_c_t* p = bias + n;
  if (n + PIECE_VALS <= N && reinterpret_cast<unsigned long long>(p) % 16 == 0) {
    const uint4 raw = __ldg(reinterpret_cast<const uint4*>(p));
    const unsigned words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int j = 0; j < PIECE_VALS; ++j) b[j] = ts_c_to_float(piece_element(words, j));
    return;
  }
#endif
#pragma unroll
  for (int j = 0; j < PIECE_VALS; ++j) b[j] = n + j < N ? ts_bias_at(m, n + j, bias) : 0.0f;
}

// Stores the chunk in buf (stage_chunk's layout) to C's rows row0.. and columns col0..: each lane
// takes 16-byte pieces, PIECE_VALS values, applies alpha and the epilogue in fp32, rounds once and
// stores them with one 16-byte store where C's rows are 16-byte aligned (vec_ok), else value by value.
__device__ __forceinline__ void finish_chunk(const unsigned char* buf, int row0, int col0, int lane, bool vec_ok,
                                             ts_c_t* __restrict__ C, const ts_c_t* __restrict__ bias, int M, int N,
                                             int ldc, float alpha, float slope) {
  const int piece = lane % PIECES_PER_ROW;
#pragma unroll
  for (int pass = 0; pass < 16 / ROWS_PER_PASS; ++pass) {
    const int r = pass * ROWS_PER_PASS + lane / PIECES_PER_ROW;
    const int gm = row0 + r, gn = col0 + piece * PIECE_VALS;
    if (gm >= M || gn >= N) continue;
    float v[PIECE_VALS], b[PIECE_VALS];
#pragma unroll
    for (int g = 0; g < PIECE_VALS / 4; ++g) {
      const int granule = piece * (PIECE_VALS / 4) + g;
      const float4 x = *reinterpret_cast<const float4*>(buf + epi_granule_offset(r, granule));
      v[4 * g] = x.x;
      v[4 * g + 1] = x.y;
      v[4 * g + 2] = x.z;
      v[4 * g + 3] = x.w;
    }
    bias_piece(b, gm, gn, N, bias);
    unsigned words[4];
#ifdef TS_GELU_PACKED  // GELU two values at a time; the other epilogues keep their code as it was
#pragma unroll
    for (int k = 0; k < 4; ++k)
      words[k] = ts_epilogue_pack2(alpha * v[2 * k], alpha * v[2 * k + 1], b[2 * k], b[2 * k + 1], slope);
#else
#pragma unroll
    for (int j = 0; j < PIECE_VALS; ++j) v[j] = ts_epilogue_with(alpha * v[j], b[j], slope);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
#if TS_C_DTYPE == 0
      words[k] = __float_as_uint(v[k]);
#else
      words[k] = ts_c_pack2(v[2 * k], v[2 * k + 1]);
#endif
    }
#endif
    ts_c_t* out = C + (long long)gm * ldc + gn;
    if (vec_ok && gn + PIECE_VALS <= N) {
      *reinterpret_cast<uint4*>(out) = make_uint4(words[0], words[1], words[2], words[3]);
    } else {
#pragma unroll
      for (int j = 0; j < PIECE_VALS; ++j)
        if (gn + j < N) out[j] = piece_element(words, j);
    }
  }
}

// A consumer warp's whole share of the tile (its 16 rows of each of its 64-row tiles) to C through
// buf, chunk by chunk. cw is the warp among the consumers' (0 .. 4 CONSUMERS - 1).
__device__ __forceinline__ void store_tile_via_smem(const float (&acc)[WG_M_TILES][ACC_N], unsigned char* buf,
                                                    const TsTile& tile, int cw, int lane, ts_c_t* __restrict__ C,
                                                    const ts_c_t* __restrict__ bias, int M, int N, int ldc, float alpha,
                                                    float slope) {
  const int row0 = tile.block_m + WG_FIRST_TILE(cw / 4) * 64 + 16 * (cw % 4);
  const bool vec_ok =
      (ldc * (int)sizeof(ts_c_t)) % 16 == 0 && reinterpret_cast<unsigned long long>(C) % 16 == 0;
#pragma unroll 1
  for (int ch = 0; ch < EPI_CHUNKS; ++ch) {
    stage_chunk(acc, ch, buf, lane);
    __syncwarp();
    finish_chunk(buf, row0 + (ch / CHUNKS_PER_TILE) * 64, tile.block_n + (ch % CHUNKS_PER_TILE) * CHUNK_COLS, lane,
                 vec_ok, C, bias, M, N, ldc, alpha, slope);
    __syncwarp();  // buf is read before the next chunk overwrites it
  }
}
#define EPILOGUE_BYTES (CONSUMERS * 4 * 2048)
#else
#define EPILOGUE_BYTES 0
#endif

// EPILOGUE_SMEM 2 (16-bit C, no split-K): the consumer's tile leaves through the tensor memory
// accelerator. Per 64-row tile and pass of PASS_N columns (64; else 32 where BLOCK_N is a multiple
// of it: the 96-, 160- and 224-wide tiles; else 48: 144 and 240; else 16: 80, 112, 176 and 208) the
// consumer's threads apply alpha, the bias and the activation to their accumulators in registers,
// round them in pairs and write them with stmatrix to the consumer's 8 KiB buffer in the layout C's
// map reads (64 rows of 128 bytes holding PASS_N values, 128-byte swizzled: the 16-byte piece of a
// row XORed with the row's index mod 8, which also keeps the eight rows of each matrix off each
// other's banks); one thread then issues the store. The store runs on while the consumer goes on
// (the next pass, or the next tile's multiply): only the next write into the buffer waits for it to
// have been read. The passes are unrolled: rolled, each pass picked its accumulators by run-time
// index, which ptxas does with a select per value and pass (over half of the epilogue's
// instructions with 4 passes).
// Rows and columns past C's edge are clipped by the unit, so partial tiles need nothing here.
#define TMA_STORE (SMEM_EPILOGUE && EPILOGUE_SMEM == 2)
#if TMA_STORE
// C's box: 64 rows x PASS_N columns (the JSON's map); fewer, wider passes where the width allows.
#define PASS_N (BLOCK_N % 64 == 0 ? 64 : BLOCK_N % 32 == 0 ? 32 : BLOCK_N % 48 == 0 ? 48 : 16)
#define PASS_VALS (PASS_N / 2)  // a thread's accumulators in a pass
static_assert(sizeof(ts_c_t) == 2 && BLOCK_N % 16 == 0, "TMA store: 16-bit C, passes of whole 16-column pieces");
#define TMA_PASSES_N (BLOCK_N / PASS_N)
__device__ __forceinline__ void consumer_sync(int c) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(2 + c), "n"(WARPGROUP_THREADS) : "memory");
}
// The tile's bias, read when the tile starts and kept in shared memory for the epilogue: read
// in the epilogue, the loads' latency stalled it (ncu, run 179: with bias + GELU the kernel took
// 14% more cycles at 4096^3, the consumers waiting on them); kept in registers across the
// multiply, 128 x 256 tiles spilled. Each of the consumer's 128 threads loads one 32-bit word
// before the multiply (two columns' or one row's values; 0 past C's edge, where the store is
// clipped anyway) and writes it to the consumer's 512 bytes after it.
#define TMA_BIAS_BYTES 512
static_assert(STAGE_BYTES % 1024 == 0, "C's buffers follow the stages 1024-byte aligned (the 128-byte swizzle)");
static_assert(BLOCK_N <= 256 && 64 * WG_M_TILES <= 256, "a consumer's bias: 256 16-bit values");
__device__ __forceinline__ unsigned load_tile_bias(const TsTile& tile, int c, int ct, const ts_c_t* __restrict__ bias,
                                                   int M, int N) {
#if TS_BIAS_PER_COLUMN
  const int gn = tile.block_n + 2 * ct;
  if (2 * ct >= BLOCK_N) return 0u;
  const unsigned lo = gn < N ? bias[gn] : 0u, hi = gn + 1 < N ? bias[gn + 1] : 0u;
  return lo | hi << 16;
#elif TS_BIAS_PER_ROW
  const int gm = tile.block_m + WG_FIRST_TILE(c) * 64 + ct;
  return ct < 64 * WG_M_TILES && gm < M ? bias[gm] : 0u;
#else
  (void)tile, (void)c, (void)ct, (void)bias, (void)M, (void)N;
  return 0u;
#endif
}
__device__ __forceinline__ void stash_tile_bias(unsigned word, unsigned at, int ct) {
#if TS_BIAS_PER_COLUMN
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at + 4 * ct), "r"(word) : "memory");
#elif TS_BIAS_PER_ROW
  asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(at + 2 * ct), "h"((unsigned short)word) : "memory");
#else
  (void)word, (void)at, (void)ct;
#endif
}
// A pass's bias values of this thread, read from the stash in one go before they are used (the
// C buffer's writes between them would otherwise order each read after the previous write).
struct PassBias {
#if TS_BIAS_PER_COLUMN
  unsigned pair[PASS_N / 8];  // columns 8 jj + 2 (lane % 4) and the next of the pass
#elif TS_BIAS_PER_ROW
  float row[2];  // rows 16 w + lane / 4 and 8 below of the pass
#endif
  __device__ __forceinline__ void load(unsigned at, int t, int q, int w, int lane) {
#if TS_BIAS_PER_COLUMN
#pragma unroll
    for (int jj = 0; jj < PASS_N / 8; ++jj)
      asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(pair[jj]) : "r"(at + 2 * (PASS_N * q + 8 * jj + 2 * (lane % 4))));
#elif TS_BIAS_PER_ROW
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      unsigned short b;
      asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(b) : "r"(at + 2 * (64 * t + 16 * w + lane / 4 + 8 * h)));
      row[h] = ts_c_to_float(ts_c_t(b));
    }
#endif
    (void)at, (void)t, (void)q, (void)w, (void)lane;
  }
  // The bias of the pass's value j (its accumulator layout: see store_tile_via_tma).
  __device__ __forceinline__ float of(int j) const {
#if TS_BIAS_PER_COLUMN
    return ts_c_to_float(ts_c_t(j % 2 ? pair[j / 4] >> 16 : pair[j / 4] & 0xffffu));
#elif TS_BIAS_PER_ROW
    return row[(j % 4) / 2];
#else
    (void)j;
    return 0.0f;
#endif
  }
};
// A pass's PASS_VALS accumulators of this thread (v) finished (alpha, bias, activation) and
// rounded in pairs: words[j / 2] holds values j and j + 1, which in the accumulator layout are
// row 16 w + lane / 4 (+ 8 for j % 4 >= 2), columns 8 (j / 4) + 2 (lane % 4) and the next of the pass.
__device__ __forceinline__ void finish_pass(unsigned (&words)[PASS_VALS / 2], const float (&v)[PASS_VALS],
                                            unsigned bias_at, int t, int q, int w, int lane, float alpha,
                                            float slope) {
  PassBias b;
  b.load(bias_at, t, q, w, lane);
#pragma unroll
  for (int j = 0; j < PASS_VALS; j += 2)
    words[j / 2] = ts_epilogue_pack2(alpha * v[j], alpha * v[j + 1], b.of(j), b.of(j + 1), slope);
}
// buf: the consumer's 8 KiB for C (1024-byte aligned); bias_at: its 512 bytes of bias (bias_word:
// this thread's, loaded when the tile started).
__device__ __forceinline__ void store_tile_via_tma(const float (&acc)[WG_M_TILES][ACC_N], unsigned bias_word,
                                                   unsigned buf, unsigned bias_at, const TsTile& tile, int c, int w,
                                                   int lane, bool issuer, const TsTensorMap* map_c, float alpha,
                                                   float slope) {
  // The previous tile's passes have read the bias (they are behind a consumer_sync).
  stash_tile_bias(bias_word, bias_at, 32 * w + lane);
#pragma unroll
  for (int pass = 0; pass < WG_M_TILES * TMA_PASSES_N; ++pass) {
    const int t = pass / TMA_PASSES_N, q = pass % TMA_PASSES_N;
    const int row0 = tile.block_m + (WG_FIRST_TILE(c) + t) * 64, col0 = tile.block_n + PASS_N * q;
    // The pass's PASS_VALS accumulators of this thread (the loop is unrolled: register names).
    float v[PASS_VALS];
#pragma unroll
    for (int j = 0; j < PASS_VALS; ++j) v[j] = acc[t][q * PASS_VALS + j];
    // The pass's values are finished and rounded while the previous pass's store may still be
    // reading the buffer; only the writes wait for it. (Pass 0 with a bias waits first: its
    // bias is read from the stash the consumer's threads have just written.)
    unsigned words[PASS_VALS / 2];
    const bool early = !(TS_BIAS_PER_COLUMN || TS_BIAS_PER_ROW) || pass > 0;
    if (early) finish_pass(words, v, bias_at, t, q, w, lane, alpha, slope);
    if (issuer) tma_store_wait_read();  // the previous pass's store has read the buffer
    consumer_sync(c);  // (pass 0: the stash is written)
    if (!early) finish_pass(words, v, bias_at, t, q, w, lane, alpha, slope);
    // Four 8 x 8 matrices a stmatrix: rows 16 w + 8 h .. + 7 (h = matrix % 2), the 16-byte
    // piece 2 k + matrix / 2 of those rows. Lane l addresses row l % 8 of matrix l / 8; the
    // words of matrix (piece g, half h) are words[2 g + h]. Rows are 128 bytes whatever PASS_N: with
    // the 128-byte swizzle the unit reads a 64-byte box row from a 128-byte row (measured on an H200),
    // and so the 32- and 96-byte rows of the 16- and 48-column passes.
    const int r = 16 * w + 8 * ((lane / 8) % 2) + lane % 8;
#pragma unroll
    for (int k = 0; k < PASS_N / 16; ++k) {
      const unsigned piece = 2 * k + lane / 16;
      stsm_x4(buf + r * 128 + ((piece ^ (lane % 8)) << 4), words[4 * k], words[4 * k + 1], words[4 * k + 2],
              words[4 * k + 3]);
    }
    tma_store_fence();
    consumer_sync(c);
    if (issuer) tma_store_box(map_c, buf, col0, row0);
  }
}
#endif

// The layout the partial tiles of K clusters and split-K share: fragment-major, [item][thread], an
// item being 4 accumulators of one consumer thread (columns n, n + 1 of rows m and m + 8), so that
// every write and read of a warp is whole 16-byte pieces (512 bytes in a row).
#define ACC_ITEMS (WG_M_TILES * ACC_N / 4)  // a thread's items
__device__ __forceinline__ float4 acc_item(const float (&acc)[WG_M_TILES][ACC_N], int f) {
  const float* a = &acc[f / (ACC_N / 4)][4 * (f % (ACC_N / 4))];
  return make_float4(a[0], a[1], a[2], a[3]);
}

#if CLUSTER_K > 1
// The tile's sum over the cluster (CLUSTER_K > 1), called by every consumer thread once the
// tile's wgmma groups are done. Partials are kept fragment-major (above), so both the writes and
// the cluster's reads are whole 16-byte pieces without bank conflicts; block r sums items
// r * kPer.. over ranks 0..CLUSTER_K-1 and skips those wholly outside C (most of a 64-row
// tile when M = 16) without reading them.
__device__ __forceinline__ void reduce_in_cluster(const float (&acc)[WG_M_TILES][ACC_N], unsigned char* smem,
                                                  const TsTile& tile, int ctid, ts_c_t* __restrict__ C,
                                                  const ts_c_t* __restrict__ bias, int M, int N, int ldc,
                                                  float alpha, float beta, float slope) {
  constexpr int kItems = ACC_ITEMS * TS_TILE_THREADS;
  constexpr int kPer = (kItems + CLUSTER_K - 1) / CLUSTER_K;
  float* part = reinterpret_cast<float*>(smem);
  TS_TILE_SYNC();  // every consumer's wgmma has read the stages this partial overwrites
#pragma unroll
  for (int f = 0; f < ACC_ITEMS; ++f)
    *reinterpret_cast<float4*>(part + (f * TS_TILE_THREADS + ctid) * 4) = acc_item(acc, f);
  ts_cluster_sync();
  const int rank = (int)ts_cluster_rank();
  for (int item = rank * kPer + ctid; item < min(kItems, (rank + 1) * kPer); item += TS_TILE_THREADS) {
    const int f = item / TS_TILE_THREADS, th = item % TS_TILE_THREADS;
    const int t = f / (ACC_N / 4), i = 4 * (f % (ACC_N / 4));
    const int wg = th / WARPGROUP_THREADS, w = (th / TS_WARP_SIZE) % 4, ln = th % TS_WARP_SIZE;
    const int gm = tile.block_m + acc_row(wg, w, ln, t, i), gn = tile.block_n + acc_col(ln, i);
    if (gm >= M || gn >= N) continue;  // so are its other three values
    float4 p[CLUSTER_K];
#pragma unroll
    for (int r = 0; r < CLUSTER_K; ++r) p[r] = ts_ld_cluster4(part + item * 4, r);
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int r = 0; r < CLUSTER_K; ++r) {  // rank order: deterministic
      sum.x += p[r].x;
      sum.y += p[r].y;
      sum.z += p[r].z;
      sum.w += p[r].w;
    }
    ts_store_c(C, gm, gn, ldc, sum.x, alpha, beta, bias, slope);
    if (gn + 1 < N) ts_store_c(C, gm, gn + 1, ldc, sum.y, alpha, beta, bias, slope);
    if (gm + 8 < M) {
      ts_store_c(C, gm + 8, gn, ldc, sum.z, alpha, beta, bias, slope);
      if (gn + 1 < N) ts_store_c(C, gm + 8, gn + 1, ldc, sum.w, alpha, beta, bias, slope);
    }
  }
  ts_cluster_sync();  // no block leaves while another still reads its shared memory
}
#endif

#if SPLIT_K > 1
// Split-K: the shares of K of one tile meet in the block that finishes its multiply last, which
// then stores the whole tile as an unsplit block does (any epilogue: registers, chunks, the TMA
// store). Each block takes a ticket once its multiply is done; all but the last write their
// accumulators to their share's slot fragment-major (above: no bounds to check), and count
// themselves written with one release by one thread. The last waits for that count, which only
// blocks past their multiply still owe (so it never waits on one that has not
// started, whatever the grid), adds the others' slots to its registers in share order (the same
// sum whichever share is last) and resets both counters for the next launch.
// This replaced partials written element by element to an M x N slab, a fence in every thread and a
// last block that read its own partial back and stored C value by value: a quarter of the consumer
// warps' samples at 512 x 1280 x 8192 in two shares (ncu, run 273).
// Workspace: a ticket and a written count per tile (zero before the first launch), then SPLIT_K
// slots of BLOCK_M x BLOCK_N floats per tile.
#define SPLIT_SLOT_FLOATS (BLOCK_M * BLOCK_N)
__device__ __forceinline__ void split_count_written(int* counter) {
  asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(counter) : "memory");
}
__device__ __forceinline__ int split_written_count(const int* counter) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(counter) : "memory");
  return v;
}
// Returns whether this block stores the tile (then acc holds the sum over all shares).
__device__ __forceinline__ bool gather_splits(float (&acc)[WG_M_TILES][ACC_N], const TsTile& tile, int ctid,
                                              float* __restrict__ workspace, int M) {
  const int tiles = (M + BLOCK_M - 1) / BLOCK_M * tile.tiles_n, at = tile.tile_m * tile.tiles_n + tile.tile_n;
  int* tickets = reinterpret_cast<int*>(workspace);
  int* written = tickets + tiles;
  float4* slot0 = reinterpret_cast<float4*>(workspace + ((2 * tiles + 3) & ~3) +
                                            (long long)at * SPLIT_K * SPLIT_SLOT_FLOATS) + ctid;
  __shared__ int ticket;
  if (ctid == 0) ticket = atomicAdd(&tickets[at], 1);
  TS_TILE_SYNC();
  if (ticket != SPLIT_K - 1) {
    float4* mine = slot0 + tile.split * (SPLIT_SLOT_FLOATS / 4);
#pragma unroll
    for (int f = 0; f < ACC_ITEMS; ++f) mine[f * TS_TILE_THREADS] = acc_item(acc, f);
    TS_TILE_SYNC();  // every thread's slot written (and ticket read) before the count says so
    if (ctid == 0) split_count_written(&written[at]);
    return false;
  }
  if (ctid == 0) {
    while (split_written_count(&written[at]) != SPLIT_K - 1) {
    }
    tickets[at] = 0;
    written[at] = 0;
  }
  TS_TILE_SYNC();
  // A few items at a time, every other share's loads issued before any is added (latency: this
  // block alone finishes the tile; about 8 float4s in flight a thread, 2 (or SPLIT_K - 1) beside 96
  // or more accumulators, where more spilled), the shares added in order 0..SPLIT_K-1.
  constexpr int kInFlight = WG_M_TILES * ACC_N >= 96 ? 2 : 8;
  constexpr int kGroup = SPLIT_K >= kInFlight ? 1 : kInFlight / SPLIT_K;
#pragma unroll
  for (int g = 0; g < ACC_ITEMS; g += kGroup) {
    float4 part[SPLIT_K][kGroup];
#pragma unroll
    for (int s = 0; s < SPLIT_K; ++s)
#pragma unroll
      for (int j = 0; j < kGroup; ++j)
        if (g + j < ACC_ITEMS && s != tile.split)
          part[s][j] = ts_load_l2_4(reinterpret_cast<const float*>(slot0 + s * (SPLIT_SLOT_FLOATS / 4) + (g + j) * TS_TILE_THREADS));
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      if (g + j >= ACC_ITEMS) break;
      const int t = (g + j) * 4 / ACC_N, i = (g + j) * 4 % ACC_N;
      const float4 own = acc_item(acc, g + j);
      float4 sum = tile.split == 0 ? own : part[0][j];
#pragma unroll
      for (int s = 1; s < SPLIT_K; ++s) {
        const float4 x = s == tile.split ? own : part[s][j];
        sum.x += x.x;
        sum.y += x.y;
        sum.z += x.z;
        sum.w += x.w;
      }
      acc[t][i] = sum.x;
      acc[t][i + 1] = sum.y;
      acc[t][i + 2] = sum.z;
      acc[t][i + 3] = sum.w;
    }
  }
  return true;
}
#endif
