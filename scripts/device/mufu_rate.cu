// mufu_rate: how many tanh / exp2 results an SM gives a clock on its special-function pipe (MUFU),
// for fp32 and for the packed half forms (tanh.approx.f16x2 / .bf16x2, ex2.approx.f16x2). Why: a
// fused GELU epilogue spends one tanh a value, and whether a packed form halves that work decides
// whether GELU in half precision is worth writing (notes/open-ends.md, fortieth session). Each
// thread keeps eight independent chains so that the pipe's rate, not its latency, is measured.
//
//   nvcc -O2 -arch=sm_90 -cudart static -o mufu_rate scripts/device/mufu_rate.cu && ./mufu_rate
//
// notes/device-runs.md (run 236) has an H200's figures: 15.95 values an SM a clock for every form.
#include <cstdio>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
constexpr int ITERS = 4096;
__global__ void tanh_f32(float* out, float seed) {
  float v[8];
  for (int i = 0; i < 8; ++i) v[i] = seed * (threadIdx.x + i);
  for (int it = 0; it < ITERS; ++it)
#pragma unroll
    for (int i = 0; i < 8; ++i) asm volatile("tanh.approx.f32 %0, %0;" : "+f"(v[i]));
  float s = 0; for (int i = 0; i < 8; ++i) s += v[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
// The packed forms: one kernel, the type (how two floats are packed and read back) and the
// instruction as a policy.
struct Half2 {
  static __device__ unsigned pack(float a, float b) { __half2 h = __floats2half2_rn(a, b); return *reinterpret_cast<unsigned*>(&h); }
  static __device__ float sum(unsigned v) { __half2 h = *reinterpret_cast<__half2*>(&v); return __low2float(h) + __high2float(h); }
};
struct Bf162 {
  static __device__ unsigned pack(float a, float b) { __nv_bfloat162 h = __floats2bfloat162_rn(a, b); return *reinterpret_cast<unsigned*>(&h); }
  static __device__ float sum(unsigned v) { __nv_bfloat162 h = *reinterpret_cast<__nv_bfloat162*>(&v); return __low2float(h) + __high2float(h); }
};
struct TanhF16x2 : Half2 { static __device__ void op(unsigned& v) { asm volatile("tanh.approx.f16x2 %0, %0;" : "+r"(v)); } };
struct TanhBf16x2 : Bf162 { static __device__ void op(unsigned& v) { asm volatile("tanh.approx.bf16x2 %0, %0;" : "+r"(v)); } };
struct Ex2F16x2 : Half2 { static __device__ void op(unsigned& v) { asm volatile("ex2.approx.f16x2 %0, %0;" : "+r"(v)); } };
template <typename Op>
__global__ void packed(float* out, float seed) {
  unsigned v[8];
  for (int i = 0; i < 8; ++i) v[i] = Op::pack(-seed * threadIdx.x, -seed * i);  // ex2 of these stays finite
  for (int it = 0; it < ITERS; ++it)
#pragma unroll
    for (int i = 0; i < 8; ++i) Op::op(v[i]);
  float s = 0; for (int i = 0; i < 8; ++i) s += Op::sum(v[i]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
template <typename K> void run(const char* name, K k, int values_per_op, float* out, int sms) {
  int blocks = sms * 4, threads = 256;
  k<<<blocks, threads>>>(out, 0.001f);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  cudaEventRecord(a);
  for (int r = 0; r < 5; ++r) k<<<blocks, threads>>>(out, 0.001f);
  cudaEventRecord(b); cudaEventSynchronize(b);
  float ms; cudaEventElapsedTime(&ms, a, b); ms /= 5;
  int clk; cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
  double instr = double(blocks) * threads / 32 * ITERS * 8;  // warp instructions
  double values = instr * 32 * values_per_op;
  // values per SM per clock at the clock the kernel ran at is unknown; report against the nominal clock
  printf("%-12s %8.3f ms  %.2f Gvalues/s  %.2f values/SM/clk (nominal %d MHz)  %s\n", name, ms, values / ms / 1e6,
         values / (ms * 1e-3) / sms / (clk * 1e3), clk / 1000, cudaGetErrorString(cudaGetLastError()));
}
int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  float* out; cudaMalloc(&out, sms * 4 * 256 * sizeof(float));
  for (int rep = 0; rep < 2; ++rep) {
    run("tanh f32", tanh_f32, 1, out, sms);
    run("tanh f16x2", packed<TanhF16x2>, 2, out, sms);
    run("tanh bf16x2", packed<TanhBf16x2>, 2, out, sms);
    run("ex2 f16x2", packed<Ex2F16x2>, 2, out, sms);
  }
  return 0;
}
