// Thread-block cluster pieces shared by the sm_90 templates: the cluster barrier, a block's
// rank in its cluster, and a 16-byte read of another block's shared memory (DSMEM), as used
// by split-K reductions that sum partial tiles inside a cluster instead of through global
// memory. NVIDIA sm_90+ only; the including template guards its use.
#pragma once

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

// 16 bytes at the same shared-memory offset as `local`, in block `rank` of the cluster.
__device__ __forceinline__ float4 ts_ld_cluster4(const float* local, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(remote)
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(local))), "r"(rank));
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(remote)
               : "memory");
  return v;
}
