// ldmatrix (NVIDIA sm_75+): 8x8 matrices of 16-bit elements from shared memory straight into
// the fragment layout mma.sync takes, one instruction per warp instead of a load per element;
// stmatrix (sm_90+) the other way, from that layout (which is also wgmma's accumulators', once
// packed to 16 bits) into shared memory, one instruction per four matrices instead of a store per pair.
// Lane l gives the shared address (smem_addr) of row l % 8 of matrix l / 8 (x2: lanes 0-15 give
// them, the others repeat them); register j of every lane holds its part of matrix j: lane
// (g = lane / 4, c = lane % 4) gets elements (g, 2c) and (g, 2c + 1). The .trans forms
// transpose each matrix on the way, so an operand stored the other way round (MN-major where
// the MMA wants K-major) needs no transpose pass. NVIDIA only.
#pragma once
#if !defined(TS_VENDOR_AMD)
#include "ts_smem.h"

__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x2(unsigned& r0, unsigned& r1, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr));
}
__device__ __forceinline__ void ldsm_x2_trans(unsigned& r0, unsigned& r1, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr));
}
// Lane l gives the address of row l % 8 of matrix l / 8; register j of every lane holds its
// pair of matrix j, (g, 2c) and (g, 2c + 1) as above.
__device__ __forceinline__ void stsm_x4(unsigned addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};\n" ::"r"(addr), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}
#endif  // !TS_VENDOR_AMD
