// The block's warps as a grid: a BLOCK_M x BLOCK_N block tile cut into WARPS_M x WARPS_N warp
// tiles of WARP_M x WARP_N (warp w at row w / WARPS_N, column w % WARPS_N of the grid), and the
// THREADS that makes. Shared by the warp-tiled templates whatever their instruction (the FFMA
// tile of ts_warp_tile.h, gemm_mma, gemm_hmma); ts_tile.h, which needs THREADS, comes after.
//
// The grid's parameters, which the including template may define first (the search does: each
// template's JSON declares them), else these defaults; a template whose default differs defines
// its own first (gemm_hmma's WARP_N 64).
#pragma once
#include "ts_gemm_common.h"

#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef WARP_M
#define WARP_M 64
#endif
#ifndef WARP_N
#define WARP_N 32
#endif

#define WARPS_M (BLOCK_M / WARP_M)
#define WARPS_N (BLOCK_N / WARP_N)
#define THREADS (WARPS_M * WARPS_N * TS_WARP_SIZE)
