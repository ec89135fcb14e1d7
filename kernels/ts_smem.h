// Shared-memory addressing, used by the instruction headers and the templates: the 32-bit
// address that PTX's shared-memory instructions take (cp.async, ldmatrix, mbarrier, TMA, wgmma
// descriptors, mapa) and the XOR swizzles the templates lay their tiles out in (so that the
// rows one instruction touches fall in different banks). Layout only: no instruction is
// issued here.
#pragma once

#if !defined(TS_VENDOR_AMD)
// The shared-window address of a pointer into shared memory.
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
#endif

// Byte offset of 16-byte chunk c of row r in a tile of 128-byte rows with the 128-byte swizzle
// (the layout of TMA's and wgmma's 128-byte swizzle mode): chunk c stored at chunk c ^ (r % 8).
__device__ __forceinline__ int ts_swizzle128_offset(int r, int c) { return r * 128 + ((c ^ (r % 8)) << 4); }

// Element offset of (row, col) in a tile of 16-bit elements whose rows hold LEN elements, for
// ldmatrix and 16-byte copies: the 16-byte chunk index is XORed with a function of the row so
// that the 8 rows one ldmatrix reads at one chunk column (and the rows a warp's copies write)
// land in 8 different 16-byte bank groups, with no padding. The function has period 8 in the
// row, so moving 16 (or 8) rows down adds exactly 16 (8) rows of LEN elements.
template <int LEN>
__device__ __forceinline__ int swz(int row, int col) {
  constexpr int chunks = LEN / 8;
  constexpr int rows_per_step = chunks >= 8 ? 1 : 8 / chunks;
  constexpr int span = chunks >= 8 ? 8 : chunks;
  const int chunk = (col >> 3) ^ ((row / rows_per_step) % span);
  return row * LEN + chunk * 8 + (col & 7);
}
