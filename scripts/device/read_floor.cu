// read_floor: how fast a bandwidth-bound GEMM can possibly be on this GPU, timed the way
// bench-best times (L2 flushed by a fill before every launch: 512 MiB here, twice the L2 in
// bench-best; one launch between two events; median of 31): a plain read of 32, 64 and 112 MiB (B of the decode shapes, A of an
// fp32 matrix-vector product) with 16-byte loads, several in flight, over a few grid shapes;
// an empty kernel (the launch alone); and how many thread-block clusters of 2, 4 or 8 blocks
// fit at once for a given shared-memory size (gemm_tma_half CLUSTER_K, gemm_decode REDUCE 1).
//
//   nvcc -O3 -arch=sm_90 -o read_floor scripts/device/read_floor.cu && ./read_floor
//
// notes/device-runs.md (run 64) has an H200's figures.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

template <int UNROLL>
__global__ void read_kernel(const uint4* __restrict__ p, size_t n16, float* out) {
  float s = 0.f;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (UNROLL - 1) * stride < n16; i += UNROLL * stride) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = __ldg(p + i + u * stride);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) s += __int_as_float(v[u].x ^ v[u].y ^ v[u].z ^ v[u].w);
  }
  for (; i < n16; i += stride) { uint4 v = __ldg(p + i); s += __int_as_float(v.x ^ v.w); }
  if (s == 1.2345f) out[0] = s;
}
__global__ void empty_kernel() {}
template <int CS> __global__ void __cluster_dims__(CS, 1, 1) cl_kernel(float* o) { extern __shared__ float sm[]; if (o) o[0] = sm[threadIdx.x]; }

int main() {
  float *flush, *out; CK(cudaMalloc(&flush, 512 << 20)); CK(cudaMalloc(&out, 4096));
  uint4* buf; size_t maxb = 128ull << 20; CK(cudaMalloc(&buf, maxb)); CK(cudaMemset(buf, 1, maxb));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  auto timeit = [&](auto launch) {
    std::vector<float> t;
    for (int r = 0; r < 31; ++r) {
      cudaMemsetAsync(flush, r, 512 << 20);
      cudaEventRecord(a); launch(); cudaEventRecord(b); cudaEventSynchronize(b);
      float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms);
    }
    std::sort(t.begin(), t.end()); return t[15];
  };
  printf("empty kernel: %.4f ms\n", timeit([&] { empty_kernel<<<1, 32>>>(); }));
  for (size_t mb : {32, 64, 112}) {
    size_t n16 = (mb << 20) / 16;
    for (int bps : {4, 8, 16}) for (int th : {256, 512}) {
      int grid = sms * bps * 256 / th;
      float ms = timeit([&] { read_kernel<4><<<grid, th>>>(buf, n16, out); });
      float ms8 = timeit([&] { read_kernel<8><<<grid, th>>>(buf, n16, out); });
      printf("read %3zu MiB grid %5d x %3d: unroll4 %.4f ms (%.0f GB/s)  unroll8 %.4f ms (%.0f GB/s)\n", mb, grid, th, ms,
             (mb << 20) / ms / 1e6, ms8, (mb << 20) / ms8 / 1e6);
    }
  }
  CK(cudaGetLastError());
  for (int smem_kb : {80, 144, 200}) {
    for (int cs : {2, 4, 8}) {
      cudaLaunchConfig_t cfg = {}; cfg.gridDim = dim3(cs * 64); cfg.blockDim = dim3(384); cfg.dynamicSmemBytes = smem_kb * 1024;
      cudaLaunchAttribute attr; attr.id = cudaLaunchAttributeClusterDimension; attr.val.clusterDim.x = cs; attr.val.clusterDim.y = 1; attr.val.clusterDim.z = 1;
      cfg.attrs = &attr; cfg.numAttrs = 1;
      int n = -1; cudaError_t e;
      if (cs == 2) { cudaFuncSetAttribute(cl_kernel<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_kb * 1024); e = cudaOccupancyMaxActiveClusters(&n, cl_kernel<2>, &cfg); }
      else if (cs == 4) { cudaFuncSetAttribute(cl_kernel<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_kb * 1024); e = cudaOccupancyMaxActiveClusters(&n, cl_kernel<4>, &cfg); }
      else { cudaFuncSetAttribute(cl_kernel<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_kb * 1024); e = cudaOccupancyMaxActiveClusters(&n, cl_kernel<8>, &cfg); }
      printf("clusters of %d, %3d KiB smem, 384 threads: %d resident (%d blocks) %s\n", cs, smem_kb, n, n * cs, cudaGetErrorString(e));
    }
  }
  return 0;
}
