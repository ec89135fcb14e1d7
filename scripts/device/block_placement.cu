// block_placement: where the GPU puts the blocks of a one-wave grid (one block per SM: 200 KiB of dynamic
// shared memory). Prints %smid per block for a plain launch and for clusters of two (twice each: the placement
// repeats), and SM/cluster per block for as many clusters of 16, 8, 4 and 2 as fit at once, three times each.
// The blocks of a cluster always share a GPC, so SMs that shared a cluster are joined into groups: the GPCs,
// as far as the launches tell them apart (an SM only ever in pairs stays a group of its TPC). Read together:
// which blocks run side by side in one GPC, and so which tiles of a persistent GEMM share that GPC's path to L2
// (notes/open-ends.md, fifty-second and fifty-third sessions: gemm_tma_half's pairs).
// With a path, also writes the groups as a kernel header (ts_gpc_table.h: SM -> group, each group's first SM
// index in group order and its size), which notes/experiments/cluster-gpc-claim.patch includes.
//
//   nvcc -O2 -arch=sm_90a -cudart static -o block_placement scripts/device/block_placement.cu
//   ./block_placement [KERNELS_DIR/ts_gpc_table.h]
//
// notes/device-runs.md has an H200's output and what it says (runs 302 and 308).
#include <cstdio>
#include <map>
#include <numeric>
#include <vector>
#include <cuda_runtime.h>
__device__ unsigned smid() { unsigned r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r; }
__device__ unsigned cid() { unsigned r; asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r)); return r; }
__global__ void plain(unsigned* out) { extern __shared__ char s[]; if (threadIdx.x == 0) { out[blockIdx.x] = smid(); s[0] = 1; } }
__global__ void __cluster_dims__(2, 1, 1) pair(unsigned* out) { extern __shared__ char s[]; if (threadIdx.x == 0) { out[blockIdx.x] = smid(); s[0] = 1; } }
__global__ void big(unsigned* out) { if (threadIdx.x == 0) { out[2 * blockIdx.x] = smid(); out[2 * blockIdx.x + 1] = cid(); } }
static std::vector<int> parent;
static int find(int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
int main(int argc, char** argv) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  parent.resize(sms);
  std::iota(parent.begin(), parent.end(), 0);
  unsigned* d; cudaMalloc(&d, 4096 * 4);
  std::vector<unsigned> h(4096);
  const int smem = 200 * 1024;  // one block per SM
  cudaFuncSetAttribute(plain, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncSetAttribute(pair, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  for (int rep = 0; rep < 2; ++rep) {
    cudaMemset(d, 0xff, 4096 * 4);
    plain<<<sms, 128, smem>>>(d); cudaDeviceSynchronize();
    cudaMemcpy(h.data(), d, sms * 4, cudaMemcpyDeviceToHost);
    printf("plain%d:", rep); for (int i = 0; i < sms; ++i) printf(" %u", h[i]); printf("\n");
    cudaMemset(d, 0xff, 4096 * 4);
    pair<<<sms, 128, smem>>>(d); cudaDeviceSynchronize();
    cudaMemcpy(h.data(), d, sms * 4, cudaMemcpyDeviceToHost);
    printf("pair%d:", rep); for (int i = 0; i < sms; ++i) printf(" %u", h[i]); printf("\n");
  }
  cudaFuncSetAttribute(big, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  cudaFuncSetAttribute(big, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  for (int rep = 0; rep < 3; ++rep)
    for (int cs : {16, 8, 4, 2}) {
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
      for (int c = 0; c < nclusters; ++c)
        for (int i = 1; i < cs; ++i)
          if (h[2 * c * cs] < unsigned(sms) && h[2 * (c * cs + i)] < unsigned(sms)) parent[find(h[2 * (c * cs + i)])] = find(h[2 * c * cs]);
    }
  std::map<int, int> group;  // a root SM -> its group's number, in the order of the groups' first SMs
  std::vector<int> of(sms), size;
  for (int s = 0; s < sms; ++s) {
    auto it = group.find(find(s));
    if (it == group.end()) { it = group.emplace(find(s), int(size.size())).first; size.push_back(0); }
    of[s] = it->second; ++size[it->second];
  }
  printf("%d groups:", int(size.size()));
  for (size_t g = 0; g < size.size(); ++g) {
    printf(" ["); for (int s = 0; s < sms; ++s) if (of[s] == int(g)) printf(" %d", s); printf(" ]");
  }
  printf("\n");
  if (argc > 1) {
    FILE* f = fopen(argv[1], "w");
    if (!f) { perror(argv[1]); return 1; }
    fprintf(f, "// SM -> GPC as scripts/device/block_placement.cu found them on this GPU\n#pragma once\n#define TS_GPC_SMS %d\n#define TS_GPC_COUNT %d\n", sms, int(size.size()));
    fprintf(f, "__device__ const unsigned char ts_gpc_of_sm[%d] = {", sms);
    for (int s = 0; s < sms; ++s) fprintf(f, "%s%d", s ? "," : "", of[s]);
    fprintf(f, "};\n__device__ const short ts_gpc_before[%d] = {", int(size.size()));
    for (size_t g = 0, before = 0; g < size.size(); before += size[g], ++g) fprintf(f, "%s%zu", g ? "," : "", before);
    fprintf(f, "};\n__device__ const short ts_gpc_size[%d] = {", int(size.size()));
    for (size_t g = 0; g < size.size(); ++g) fprintf(f, "%s%d", g ? "," : "", size[g]);
    fprintf(f, "};\n");
    fclose(f);
  }
  return 0;
}
