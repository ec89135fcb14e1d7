// block_placement: where the GPU puts the blocks of a one-wave grid (one block per SM: 200 KiB of dynamic
// shared memory). Prints %smid per block for a plain launch and for clusters of two (twice each: the placement
// repeats), and SM/cluster per block for as many clusters of 16 and of 8 as fit at once (the blocks of a cluster
// always share a GPC, so these group the SMs into GPCs). Read together: which blocks run side by side in one
// GPC, and so which tiles of a persistent GEMM share that GPC's path to L2 (notes/open-ends.md, fifty-second
// session: gemm_tma_half's pairs).
//
//   nvcc -O2 -arch=sm_90a -cudart static -o block_placement scripts/device/block_placement.cu && ./block_placement
//
// notes/device-runs.md (run 302) has an H200's output and what it says.
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
__device__ unsigned smid() { unsigned r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r; }
__device__ unsigned cid() { unsigned r; asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r)); return r; }
__global__ void plain(unsigned* out) { extern __shared__ char s[]; if (threadIdx.x == 0) { out[blockIdx.x] = smid(); s[0] = 1; } }
__global__ void __cluster_dims__(2, 1, 1) pair(unsigned* out) { extern __shared__ char s[]; if (threadIdx.x == 0) { out[blockIdx.x] = smid(); s[0] = 1; } }
__global__ void big(unsigned* out) { if (threadIdx.x == 0) { out[2 * blockIdx.x] = smid(); out[2 * blockIdx.x + 1] = cid(); } }
int main() {
  unsigned* d; cudaMalloc(&d, 4096 * 4);
  std::vector<unsigned> h(4096);
  const int smem = 200 * 1024;  // one block per SM
  cudaFuncSetAttribute(plain, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncSetAttribute(pair, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  for (int rep = 0; rep < 2; ++rep) {
    cudaMemset(d, 0xff, 4096 * 4);
    plain<<<132, 128, smem>>>(d); cudaDeviceSynchronize();
    cudaMemcpy(h.data(), d, 132 * 4, cudaMemcpyDeviceToHost);
    printf("plain%d:", rep); for (int i = 0; i < 132; ++i) printf(" %u", h[i]); printf("\n");
    cudaMemset(d, 0xff, 4096 * 4);
    pair<<<132, 128, smem>>>(d); cudaDeviceSynchronize();
    cudaMemcpy(h.data(), d, 132 * 4, cudaMemcpyDeviceToHost);
    printf("pair%d:", rep); for (int i = 0; i < 132; ++i) printf(" %u", h[i]); printf("\n");
  }
  for (int cs : {16, 8}) {
    cudaFuncSetAttribute(big, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    cudaFuncSetAttribute(big, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = cs; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
    cfg.attrs = at; cfg.numAttrs = 1; cfg.blockDim = dim3(128); cfg.dynamicSmemBytes = smem;
    int nclusters = 0; cfg.gridDim = dim3(cs); cudaOccupancyMaxActiveClusters(&nclusters, big, &cfg);
    cfg.gridDim = dim3(cs * nclusters);
    cudaMemset(d, 0xff, 4096 * 4);
    cudaError_t e = cudaLaunchKernelEx(&cfg, big, d); cudaDeviceSynchronize();
    cudaMemcpy(h.data(), d, 2 * cs * nclusters * 4, cudaMemcpyDeviceToHost);
    printf("cluster%d (%d active, %s):", cs, nclusters, cudaGetErrorString(e));
    for (int i = 0; i < cs * nclusters; ++i) printf(" %u/%u", h[2 * i], h[2 * i + 1]); printf("\n");
  }
  return 0;
}
