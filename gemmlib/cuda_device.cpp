// GemmDevice on the CUDA driver API (dlopen'd: runtime/cuda/cuda_api.h), its failures
// checked and told as the tuning backend's are (runtime/cuda/cu_check.h), as a Status.
// Works in the device's primary context, the one the CUDA runtime uses, so pointers from
// cudaMalloc and streams from cudaStreamCreate are valid here; each call pushes it and
// pops it again, leaving the caller's current context as it was.
//
// Threads: loaded kernels are shared (loaded once, under a mutex); everything a launch
// writes besides C (the split-K workspace, cuBLASLt's handle and workspace) belongs to the
// stream it runs on, so calls on different streams run concurrently and calls on one
// stream are enqueued one at a time, in the stream's order.

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>

#include "base/hash.h"
#include "gemmlib/device.h"
#include "gemmlib/kernel_binary.h"
#include "runtime/backend.h"
#include "runtime/compile_cache.h"
#include "runtime/cuda/cu_check.h"
#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/cuda/nvrtc_compiler.h"
#include "runtime/cuda/tensor_map_encode.h"

namespace tilesmith::gemmlib {
namespace {

using cuda::DriverApi;

// Makes the primary context current for one call and restores the caller's afterwards.
class ContextScope {
 public:
  ContextScope(const DriverApi& api, CUcontext ctx) : api_(api) { rc_ = api_.cuCtxPushCurrent(ctx); }
  ~ContextScope() {
    CUcontext popped = nullptr;
    if (rc_ == CUDA_SUCCESS) api_.cuCtxPopCurrent(&popped);
  }
  Status status() const {
    if (rc_ == CUDA_SUCCESS) return {};
    return Status::internal(
        cuda::cu_failure(api_, rc_, "cuCtxPushCurrent(ctx)", __FILE__, __LINE__).what());
  }

 private:
  const DriverApi& api_;
  CUresult rc_;
};

struct LoadedKernel {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  std::mutex attr_mu;
  // The dynamic shared memory a launch may ask for without setting the attribute: at load what the
  // default (kSharedBytesWithoutOptIn, static and dynamic together) leaves beside the kernel's static
  // shared memory, later what was opted into. Read without the lock on every launch.
  std::atomic<std::uint64_t> max_dynamic_shared = kSharedBytesWithoutOptIn;
};

struct StreamState {
  std::mutex mu;  // one call at a time enqueues on this stream
  CUdeviceptr workspace = 0;
  std::size_t workspace_bytes = 0;
  std::string workspace_user;  // kernel and shape that last used it (its counters are zero again)
  CUdeviceptr lt_workspace = 0;
  std::unique_ptr<cuda::LtGemm> lt;
  Status lt_status;
};

class CudaGemmDevice final : public GemmDevice {
 public:
  CudaGemmDevice(const DriverApi& api, CUdevice dev, CUcontext ctx, DeviceFacts facts, DeviceOptions options)
      : api_(api), dev_(dev), ctx_(ctx), facts_(std::move(facts)), options_(std::move(options)) {}

  ~CudaGemmDevice() override {
    ContextScope scope(api_, ctx_);
    for (auto& [stream, s] : streams_) {
      s->lt.reset();
      if (s->lt_workspace) api_.cuMemFree(s->lt_workspace);
      if (s->workspace) api_.cuMemFree(s->workspace);
    }
    for (auto& [key, k] : kernels_)
      if (k->module) api_.cuModuleUnload(k->module);
    api_.cuDevicePrimaryCtxRelease(dev_);
  }

  const DeviceFacts& facts() const override { return facts_; }

  Status launch(const Package& pkg, const Launch& l, const GemmProblem& p, const GemmArgs& args) override {
    ContextScope scope(api_, ctx_);
    TS_RETURN_IF_ERROR(scope.status());
    TS_ASSIGN_OR_RETURN(LoadedKernel * k, kernel(pkg, l));
    if (l.dynamic_shared_bytes > k->max_dynamic_shared.load()) {
      std::lock_guard lock(k->attr_mu);
      if (l.dynamic_shared_bytes > k->max_dynamic_shared.load()) {
        TS_CU_STATUS(
            api_, cuFuncSetAttribute(k->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     static_cast<int>(l.dynamic_shared_bytes)));
        k->max_dynamic_shared = l.dynamic_shared_bytes;
      }
    }
    CUstream stream = static_cast<CUstream>(args.stream);
    StreamState& s = stream_state(stream);
    std::lock_guard lock(s.mu);
    CUdeviceptr ws = 0;
    if (l.workspace_bytes > 0) {
      if (s.workspace_bytes < l.workspace_bytes) {
        // The old buffer may still be in use by work queued earlier on this stream.
        if (s.workspace) {
          TS_CU_STATUS(api_, cuStreamSynchronize(stream));
          api_.cuMemFree(s.workspace);
          s.workspace = 0;
          s.workspace_bytes = 0;
        }
        TS_CU_STATUS(api_, cuMemAlloc(&s.workspace, l.workspace_bytes));
        s.workspace_bytes = l.workspace_bytes;
        s.workspace_user.clear();
      }
      // Split-K kernels reset their tile counters for the next launch of the same kernel
      // and shape; any other user of the buffer may have left anything there.
      const std::string user = l.kernel_key + "|" + p.key();
      if (s.workspace_user != user) {
        TS_CU_STATUS(api_, cuMemsetD32Async(s.workspace, 0, (l.workspace_bytes + 3) / 4, stream));
        s.workspace_user = user;
      }
      ws = s.workspace;
    }
    CUdeviceptr a = reinterpret_cast<CUdeviceptr>(args.a), b = reinterpret_cast<CUdeviceptr>(args.b),
                c = reinterpret_cast<CUdeviceptr>(args.c), bias = reinterpret_cast<CUdeviceptr>(args.bias);
    int m = int(p.m), n = int(p.n), kk = int(p.k), lda = int(p.lda()), ldb = int(p.ldb()), ldc = int(p.ldc());
    float alpha = float(p.alpha), beta = float(p.beta), slope = float(p.epilogue_slope);
    std::vector<void*> params = {&a, &b, &c, &bias, &ws, &m, &n, &kk, &lda, &ldb, &ldc, &alpha, &beta, &slope};
    // Tensor maps for these pointers, by value after the ABI's parameters.
    std::vector<CUtensorMap> maps(l.tensor_maps.size());
    for (std::size_t i = 0; i < maps.size(); ++i) {
      const TensorMapSpec& spec = l.tensor_maps[i];
      TS_RETURN_IF_ERROR(cuda::encode_tensor_map(api_, spec, spec.operand == 'A' ? a : spec.operand == 'B' ? b : c,
                                                 &maps[i]));
      params.push_back(&maps[i]);
    }
    TS_CU_STATUS(
        api_, cuLaunchKernel(k->function, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1],
                             l.block[2], static_cast<unsigned>(l.dynamic_shared_bytes), stream,
                             params.data(), nullptr));
    return {};
  }

  Status vendor(const GemmProblem& p, const GemmArgs& args) override {
    ContextScope scope(api_, ctx_);
    TS_RETURN_IF_ERROR(scope.status());
    CUstream stream = static_cast<CUstream>(args.stream);
    StreamState& s = stream_state(stream);
    std::lock_guard lock(s.mu);
    if (!s.lt && s.lt_status.ok()) {
      TS_CU_STATUS(api_, cuMemAlloc(&s.lt_workspace, kLtWorkspaceBytes));
      auto lt = cuda::LtGemm::create(s.lt_workspace, kLtWorkspaceBytes);
      if (lt.ok()) {
        s.lt = std::move(lt).value();
      } else {
        s.lt_status = lt.status();
        api_.cuMemFree(s.lt_workspace);
        s.lt_workspace = 0;
      }
    }
    if (!s.lt)
      return Status(StatusCode::kUnimplemented, "no tuned kernel serves " + p.describe() +
                                                    " and cuBLASLt is unavailable: " + s.lt_status.message());
    Status st = s.lt->run(p, reinterpret_cast<DevicePtr>(args.a), reinterpret_cast<DevicePtr>(args.b),
                          reinterpret_cast<DevicePtr>(args.c), reinterpret_cast<DevicePtr>(args.bias),
                          cuda::LtGemm::ScalePointers{}, stream);  // the library's calls carry no block scales
    if (st.code() == StatusCode::kInvalidArgument)
      return Status(StatusCode::kUnimplemented,
                    "no tuned kernel serves " + p.describe() + " and " + s.lt->version() + " cannot: " + st.message());
    return st;
  }

 private:
  // As the tuner's baseline: room for cuBLASLt's split-K and stream-K algorithms.
  static constexpr std::size_t kLtWorkspaceBytes = std::size_t(32) << 20;

  StreamState& stream_state(CUstream stream) {
    std::lock_guard lock(streams_mu_);
    auto& s = streams_[stream];
    if (!s) s = std::make_unique<StreamState>();
    return *s;
  }

  Result<Compiler*> compiler() {
    // Called with kernels_mu_ held.
    if (!compiler_) {
      auto nvrtc = cuda::make_nvrtc_compiler();
      if (!nvrtc.ok()) return nvrtc.status();
      compiler_ = std::make_shared<CompileCache>(*nvrtc, options_.cache_dir, CompileCache::kDefaultMaxBytes);
    }
    return compiler_.get();
  }

  Result<LoadedKernel*> kernel(const Package& pkg, const Launch& l) {
    std::lock_guard lock(kernels_mu_);
    auto it = kernels_.find(l.kernel_key);
    if (it != kernels_.end()) return it->second.get();
    auto k = std::make_unique<LoadedKernel>();
    ModuleLoader load = [&](const std::string& binary) -> Status {
      CUmodule m = nullptr;
      CUresult rc = api_.cuModuleLoadData(&m, binary.data());
      if (rc != CUDA_SUCCESS)
        return Status::internal(
            cuda::cu_failure(api_, rc, "cuModuleLoadData", __FILE__, __LINE__).what());
      CUfunction f = nullptr;
      rc = api_.cuModuleGetFunction(&f, m, l.entry.c_str());
      if (rc != CUDA_SUCCESS) {
        api_.cuModuleUnload(m);
        return Status::internal(cuda::cu_failure(api_, rc,
                                                 ("cuModuleGetFunction(" + l.entry + ")").c_str(),
                                                 __FILE__, __LINE__)
                                    .what());
      }
      k->module = m;
      k->function = f;
      int static_bytes = 0;
      if (api_.cuFuncGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f) == CUDA_SUCCESS &&
          static_bytes > 0)
        k->max_dynamic_shared = std::uint64_t(kSharedBytesWithoutOptIn - std::min<std::int64_t>(static_bytes, kSharedBytesWithoutOptIn));
      return {};
    };
    std::vector<std::string> notes;
    auto origin = load_launch_kernel(pkg, l, [this] { return compiler(); }, load, notes);
    for (const auto& n : notes) options_.log(1, "kernel " + l.kernel_key + ": " + n);
    if (!origin.ok()) return origin.status();
    if (!notes.empty() || !l.package_kernel) options_.log(0, "kernel " + l.kernel_key + ": using the one " + *origin);
    return (kernels_[l.kernel_key] = std::move(k)).get();
  }

  const DriverApi& api_;
  CUdevice dev_;
  CUcontext ctx_;
  DeviceFacts facts_;
  DeviceOptions options_;
  std::mutex kernels_mu_;
  std::map<std::string, std::unique_ptr<LoadedKernel>> kernels_;
  std::shared_ptr<Compiler> compiler_;
  std::mutex streams_mu_;
  std::map<CUstream, std::unique_ptr<StreamState>> streams_;
};

}  // namespace

Result<std::unique_ptr<GemmDevice>> open_cuda_gemm_device(int ordinal, const DeviceOptions& options) {
  auto where = [&](const Status& s) { return s.with_context("CUDA device " + std::to_string(ordinal)); };
  auto backend = make_backend("cuda");
  if (!backend.ok()) return where(backend.status());
  // devices() loads the driver (dlopen) and reads every device's facts; its unavailable
  // names the loader's error on a machine without the NVIDIA driver.
  auto devices = (*backend)->devices();
  if (!devices.ok())
    return Status::unavailable("no usable NVIDIA GPU (" + devices.status().message() +
                               "): install the NVIDIA driver, or run where a GPU is visible");
  if (ordinal < 0 || ordinal >= int(devices->size()))
    return Status::invalid("device ordinal " + std::to_string(ordinal) + " is out of range: the driver sees " +
                           std::to_string(devices->size()) + " GPU(s)");
  TS_ASSIGN_OR_RETURN(const DriverApi* api, cuda::driver_api());
  CUdevice dev = 0;
  CUresult rc = api->cuDeviceGet(&dev, ordinal);
  if (rc != CUDA_SUCCESS)
    return where(
        Status::unavailable(cuda::cu_failure(*api, rc, "cuDeviceGet", __FILE__, __LINE__).what()));
  CUcontext ctx = nullptr;
  rc = api->cuDevicePrimaryCtxRetain(&ctx, dev);
  if (rc != CUDA_SUCCESS)
    return where(Status::unavailable(
        cuda::cu_failure(*api, rc, "cuDevicePrimaryCtxRetain", __FILE__, __LINE__).what()));
  return std::unique_ptr<GemmDevice>(
      std::make_unique<CudaGemmDevice>(*api, dev, ctx, (*devices)[ordinal], options));
}

}  // namespace tilesmith::gemmlib
