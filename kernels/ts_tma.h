// Hopper tensor-memory-accelerator pieces shared by the TMA templates (gemm_tma_half,
// gemm_tma_tf32): the tensor map as a kernel parameter, mbarriers (init, the producer's
// expect-bytes arrival, plain arrivals, parity waits), one box copy into shared memory (optionally
// multicast to a cluster), the lane of a warp that issues them, the ring of STAGES slots that
// producer and consumers walk in step, and the register split of a warp-specialised block
// (setmaxnreg). The including template defines STAGES first.
#pragma once
#include "ts_smem.h"

// A CUtensorMap as the kernel receives it (by value, 64-byte aligned); only its address is used.
struct __align__(64) TsTensorMap {
  unsigned long long opaque[16];
};

// Brings a tensor map (a kernel parameter) into the TMA unit's cache before the first copy.
__device__ __forceinline__ void prefetch_tensormap(const TsTensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// Each operation on a barrier or a stage takes its shared-window address (smem_addr); a
// template's loops compute those from addresses taken once outside them, since converting a
// pointer costs a read of the block's cluster id on every use. The pointer forms are for
// code that runs once.
__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// After the barriers' initialisation, before any thread of the cluster (or the TMA unit) uses them.
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
// The producer's arrival, announcing the bytes the stage's copies will deliver.
__device__ __forceinline__ void mbar_expect_bytes(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_expect_bytes(unsigned long long* bar, unsigned bytes) {
  mbar_expect_bytes(smem_addr(bar), bytes);
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) { mbar_arrive(smem_addr(bar)); }
// Waits until the barrier's phase with this parity has completed.
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) { mbar_wait(smem_addr(bar), parity); }

// One box of a tensor map at (c0 along the contiguous dimension, c1 along the other)
// into shared memory at dst, completing on the barrier at bar.
__device__ __forceinline__ void tma_load_box(unsigned dst, const TsTensorMap* map, int c0, int c1, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::
          "r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_load_box(void* dst, const TsTensorMap* map, int c0, int c1,
                                             unsigned long long* bar) {
  tma_load_box(smem_addr(dst), map, c0, c1, smem_addr(bar));
}

// The same box written into the shared memory of every block of the cluster in cta_mask (at
// dst's offset), completing on the barrier at bar's offset in each.
__device__ __forceinline__ void tma_load_box_multicast(unsigned dst, const TsTensorMap* map, int c0, int c1,
                                                       unsigned bar, unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
      : "memory");
}
__device__ __forceinline__ void tma_load_box_multicast(void* dst, const TsTensorMap* map, int c0, int c1,
                                                       unsigned long long* bar, unsigned short cta_mask) {
  tma_load_box_multicast(smem_addr(dst), map, c0, c1, smem_addr(bar), cta_mask);
}

// The reverse direction (C): a box of the map at (c0, c1) from shared memory at src, in the issuing
// thread's bulk group. Before the copy the writers of src fence their generic-proxy writes for
// the async proxy (tma_store_fence) and synchronise; before src is written again the issuing
// thread waits until the group has read it (tma_store_wait_read), and before the block exits
// until it is done (tma_store_wait_all).
__device__ __forceinline__ void tma_store_box(const TsTensorMap* map, unsigned src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(src), "r"(c0), "r"(c1)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void tma_store_fence() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void tma_store_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
__device__ __forceinline__ void tma_store_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// Whether this lane is the one elect.sync picks among the warp's (all 32 active): the way a
// converged warp lets one lane issue TMA copies. ptxas knows that the elected lane is alone, so
// each copy compiles to one instruction; issued under `tid == 0` instead, every copy became a
// loop over the active lanes (elect, copy, branch back: six instructions and a branch each).
__device__ __forceinline__ bool elect_one_lane() {
  unsigned elected;
  asm volatile("{\n.reg .pred p;\nelect.sync _|p, 0xffffffff;\nselp.u32 %0, 1, 0, p;\n}\n" : "=r"(elected));
  return elected != 0;
}

// Stage and phase of a ring of STAGES slots: a slot's barrier completes once per lap.
struct Ring {
  int stage = 0;
  unsigned phase = 0;
  __device__ __forceinline__ void next() {
    if (++stage == STAGES) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

// Warp specialisation: a warpgroup that only issues copies gives registers back
// (setmaxnreg.dec), the ones that multiply take them (setmaxnreg.inc), within the SM's 64 Ki.
template <int regs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(regs));
}
template <int regs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(regs));
}
