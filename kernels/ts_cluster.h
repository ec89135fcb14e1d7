// Thread-block cluster pieces shared by the sm_90 templates: the cluster barrier, a block's
// rank in its cluster, addresses in another block's shared memory (DSMEM: mapa), a 16-byte
// read there, as used by split-K reductions that sum partial tiles inside a cluster instead
// of through global memory, and an arrival on another block's mbarrier (a consumer releasing
// a stage that a multicast fills in both blocks).
// NVIDIA sm_90+ only; the including template guards its use.
#pragma once
#if !defined(TS_VENDOR_AMD)
#include "ts_smem.h"

// Every thread of every block of the cluster: arrive (releasing this thread's shared-memory
// writes to the cluster), then wait for all (acquiring theirs).
__device__ __forceinline__ void ts_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

__device__ __forceinline__ unsigned ts_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// The shared::cluster address of the shared-window address `local` in block `rank` of the cluster.
__device__ __forceinline__ unsigned ts_cluster_map(unsigned local, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
}
__device__ __forceinline__ unsigned ts_cluster_map(const void* local, unsigned rank) {
  return ts_cluster_map(smem_addr(local), rank);
}

// 16 bytes at the same shared-memory offset as `local`, in block `rank` of the cluster.
__device__ __forceinline__ float4 ts_ld_cluster4(const float* local, unsigned rank) {
  const unsigned remote = ts_cluster_map(local, rank);
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(remote)
               : "memory");
  return v;
}

// An arrival on the mbarrier at bar's offset in block `rank`, for a thread that has only read
// the shared memory the barrier guards (a consumer whose wgmma reads of a stage are complete):
// the default release at block scope orders those reads. A release at cluster scope would also
// wait for the thread's earlier global stores (the previous tile's C) to reach cluster scope,
// on every stage of every tile.
__device__ __forceinline__ void ts_mbar_arrive_cluster(unsigned bar, unsigned rank) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(ts_cluster_map(bar, rank)) : "memory");
}
#endif  // !TS_VENDOR_AMD
