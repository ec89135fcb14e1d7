// Global -> shared copies for the pipelined templates: cp.async on NVIDIA sm_80+ (the
// data goes straight to shared memory, no staging registers, several groups in flight);
// elsewhere (AMD, older NVIDIA) ordinary loads and stores with the same interface, so a
// template keeps one schedule for both. From the instruction up: the typed cp.async forms,
// copies of a few elements and of 16-byte pieces of 16-bit elements with zero fill past the
// matrix edge, a thread's share of an operand tile's copies, the commit/wait protocol, and
// the multistage K loop built on it.
#pragma once
#include "ts_smem.h"

#if defined(TS_VENDOR_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TS_ASYNC_COPY 1
#else
#define TS_ASYNC_COPY 0
#endif

#if TS_ASYNC_COPY
// 16 bytes to shared address saddr, through L2 only (.cg: the only form for 16 bytes); the
// first src_bytes (0..16) are read and the rest zero-filled. src must be 16-byte aligned.
template <typename T>
__device__ __forceinline__ void cp_async_16(unsigned saddr, const T* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr), "l"(src), "r"(src_bytes));
}
// The same, asking L2 to fetch the whole 128-byte line (.L2::128B: the neighbouring pieces
// are read next by other threads).
template <typename T>
__device__ __forceinline__ void cp_async_16_l2_128(unsigned saddr, const T* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(saddr), "l"(src), "r"(src_bytes));
}
// A 16-byte piece wholly inside the source: no zero-fill operand.
template <typename T>
__device__ __forceinline__ void cp_async_16_l2_128(unsigned saddr, const T* src) {
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(saddr), "l"(src));
}
// 4 or 8 bytes (.ca, through L1 as well: .cg takes 16 only), src_bytes read, the rest zeros.
template <int bytes, typename T>
__device__ __forceinline__ void cp_async_ca(unsigned saddr, const T* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(saddr), "l"(src), "n"(bytes), "r"(src_bytes));
}
#endif

// Copies `elems` elements (of 2 or 4 bytes) from global to shared; the first `valid`
// (0..elems) are read and the rest are zeros. src must be aligned to the copy's size; when
// valid is 0 it is not read at all. A copy below 4 bytes has no cp.async form: ordinary loads.
template <int elems, typename T>
__device__ __forceinline__ void ts_copy(T* dst, const T* src, int valid) {
  constexpr int bytes = elems * (int)sizeof(T);
#if TS_ASYNC_COPY
  if constexpr (bytes >= 4) {
    const unsigned saddr = smem_addr(dst);
    const int src_bytes = valid * (int)sizeof(T);  // the hardware zero-fills past src_bytes
    if constexpr (bytes == 16)
      cp_async_16(saddr, src, src_bytes);
    else
      cp_async_ca<bytes>(saddr, src, src_bytes);
  } else
#endif
  {
#pragma unroll
    for (int i = 0; i < elems; ++i) dst[i] = i < valid ? src[i] : T(0);
  }
}

// How many of a copy's `elems` elements lie inside the matrix, `left` being the distance
// from the copy's first element to the edge.
__device__ __forceinline__ int ts_inside(int left, int elems) { return left <= 0 ? 0 : (left < elems ? left : elems); }

// Copies one 8-element (16-byte) piece of 16-bit elements from global to shared; the first
// `valid` (0..8) are read, the rest are zeros; src is not read when valid is 0. vec is the
// width of the global accesses: 8, one 16-byte cp.async; 2 (a leading dimension not a
// multiple of 8), four 4-byte cp.async; 1 (an odd leading dimension: rows start 2-byte
// aligned), eight 2-byte loads and one 16-byte store (no cp.async form exists below 4 bytes).
// Every thread copies whole pieces, so a piece needs one address whatever vec is.
// l2_line: the 16-byte copies ask L2 for the whole 128-byte line.
template <int vec, bool l2_line = false, typename D, typename T>
__device__ __forceinline__ void ts_copy_piece(D* dst, const T* src, int valid) {
  static_assert(sizeof(T) == 2 && (vec == 8 || vec == 2 || vec == 1), "pieces of 16-bit elements, 16/4/2-byte reads");
#if TS_ASYNC_COPY
  if constexpr (vec == 8) {
    const unsigned saddr = smem_addr(dst);
    if constexpr (l2_line)
      cp_async_16_l2_128(saddr, src, valid * 2);
    else
      cp_async_16(saddr, src, valid * 2);
  } else if constexpr (vec == 2) {
    const unsigned saddr = smem_addr(dst);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int v = ts_inside(valid - 2 * j, 2);
      cp_async_ca<4>(saddr + 4 * j, v ? src + 2 * j : src, v * 2);
    }
  } else
#endif
  {
    if constexpr (vec == 8) {
      if (valid == 8) {
        *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
        return;
      }
    }
    unsigned w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const unsigned lo = 2 * j < valid ? src[2 * j] : 0u, hi = 2 * j + 1 < valid ? src[2 * j + 1] : 0u;
      w[j] = lo | (hi << 16);
    }
    *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

// One whole 8-element piece, inside the matrix (no bound, no zero fill).
template <int vec, bool l2_line = false, typename D, typename T>
__device__ __forceinline__ void ts_copy_full_piece(D* dst, const T* src) {
#if TS_ASYNC_COPY
  if constexpr (vec == 8) {
    if constexpr (l2_line)
      cp_async_16_l2_128(smem_addr(dst), src);
    else
      cp_async_16(smem_addr(dst), src, 16);
  } else
#endif
  {
    ts_copy_piece<vec, l2_line>(dst, src, 8);
  }
}

// How ts_copy_tile copies: `vec` elements a copy (ts_copy).
template <int vec>
struct TsCopyElems {
  template <typename T>
  __device__ __forceinline__ static void copy(T* dst, const T* src, int valid) {
    ts_copy<vec>(dst, src, valid);
  }
};

// How ts_copy_tile copies: one 8-element piece of 16-bit elements a copy, read `vec` elements
// at a time (ts_copy_piece).
template <int vec>
struct TsCopyPiece {
  template <typename T>
  __device__ __forceinline__ static void copy(T* dst, const T* src, int valid) {
    ts_copy_piece<vec>(dst, src, valid);
  }
};

// This thread's copies of one operand's slice: the rows x cols tile at (row0, col0) of x (A's
// BLOCK_M x BLOCK_K at (block_m, k0), B's BLOCK_K x BLOCK_N at (k0, block_n)), stored row-major
// (rows ld apart) or column-major (columns ld apart). Each copy takes `per` consecutive elements
// along the contiguous dimension, consecutive threads (of `threads`) consecutive copies; rows
// at or past row_end and columns at or past col_end are zeros (a copy across the edge reads
// what lies inside). at(r, c): where element (r, c) of the tile goes in shared memory.
template <bool row_major, int rows, int cols, int per, int threads, typename Copy, typename T, typename At>
__device__ __forceinline__ void ts_copy_tile(At at, const T* __restrict__ x, int ld, int row0, int row_end, int col0,
                                             int col_end, int tid) {
  constexpr int kCopies = rows * cols / per;
#pragma unroll
  for (int i = 0; i < (kCopies + threads - 1) / threads; ++i) {
    const int idx = tid + i * threads;
    if (kCopies % threads != 0 && idx >= kCopies) break;
    if (row_major) {
      const int r = idx / (cols / per), c = (idx % (cols / per)) * per;
      const int gr = row0 + r, gc = col0 + c;
      const int valid = gr < row_end ? ts_inside(col_end - gc, per) : 0;
      Copy::copy(at(r, c), valid ? x + (long long)gr * ld + gc : x, valid);
    } else {
      const int c = idx / (rows / per), r = (idx % (rows / per)) * per;
      const int gr = row0 + r, gc = col0 + c;
      const int valid = gc < col_end ? ts_inside(row_end - gr, per) : 0;
      Copy::copy(at(r, c), valid ? x + (long long)gc * ld + gr : x, valid);
    }
  }
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
