// The CUDA backend: driver API for devices, memory, modules and launches; NVRTC for
// compiling; cuBLASLt (and cuBLAS) for the baseline. Everything is reached through dlopen'd tables
// (cuda_api.h), so nothing here needs the driver to be installed to load.

#include <cstdio>
#include <cstring>
#include <map>

#include "runtime/backend.h"
#include "runtime/cuda/cu_check.h"
#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cublaslt_plan.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/cuda/nvrtc_compiler.h"
#include "runtime/cuda/tensor_map_encode.h"
#include "runtime/gpu_error.h"
#include "runtime/nvml/nvml_telemetry.h"

namespace tilesmith {
namespace cuda {
namespace {

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

class CudaFunction final : public GpuFunction {
 public:
  CudaFunction(const DriverApi& api, CUfunction fn) : api_(api), fn_(fn) {}
  FunctionAttributes attributes() const override {
    FunctionAttributes a;
    auto get = [&](CUfunction_attribute attr) {
      int v = -1;
      return api_.cuFuncGetAttribute(&v, attr, fn_) == CUDA_SUCCESS ? v : -1;
    };
    a.registers = get(CU_FUNC_ATTRIBUTE_NUM_REGS);
    a.static_shared_bytes = get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    a.local_bytes = get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
    a.max_threads_per_block = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    return a;
  }
  void set_max_dynamic_shared(std::int64_t bytes) override {
    TS_CU(api_, cuFuncSetAttribute(fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(bytes)));
  }
  CUfunction handle() const { return fn_; }

 private:
  const DriverApi& api_;
  CUfunction fn_;
};

class CudaModule final : public GpuModule {
 public:
  CudaModule(const DriverApi& api, CUmodule m) : api_(api), module_(m) {}
  ~CudaModule() override { api_.cuModuleUnload(module_); }
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  GpuFunction& function(const std::string& name) override {
    auto it = functions_.find(name);
    if (it != functions_.end()) return it->second;
    CUfunction fn = nullptr;
    TS_CU(api_, cuModuleGetFunction(&fn, module_, name.c_str()));
    return functions_.emplace(name, CudaFunction(api_, fn)).first->second;
  }

 private:
  const DriverApi& api_;
  CUmodule module_;
  std::map<std::string, CudaFunction> functions_;
};

class CudaEvent final : public GpuEvent {
 public:
  CudaEvent(const DriverApi& api, CUevent e) : api_(api), event_(e) {}
  ~CudaEvent() override { api_.cuEventDestroy(event_); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  CUevent handle() const { return event_; }

 private:
  const DriverApi& api_;
  CUevent event_;
};

class CudaDevice final : public GpuDevice {
 public:
  CudaDevice(const DriverApi& api, CUdevice dev, DeviceFacts facts) : api_(api), dev_(dev), facts_(std::move(facts)) {
    // The primary context is the one cuBLAS (through the CUDA runtime) also uses.
    TS_CU(api_, cuDevicePrimaryCtxRetain(&ctx_, dev_));
    TS_CU(api_, cuCtxSetCurrent(ctx_));
    TS_CU(api_, cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
  }
  ~CudaDevice() override {
    lt_.reset();
    free_lt_scales();
    if (lt_workspace_) free(lt_workspace_);
    if (blas_) cublas_->cublasDestroy(blas_);
    api_.cuStreamDestroy(stream_);
    api_.cuDevicePrimaryCtxRelease(dev_);
  }
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  const DeviceFacts& facts() const override { return facts_; }

  DevicePtr alloc(std::size_t bytes) override {
    CUdeviceptr p = 0;
    TS_CU(api_, cuMemAlloc(&p, bytes));
    return p;
  }
  void free(DevicePtr p) noexcept override { api_.cuMemFree(static_cast<CUdeviceptr>(p)); }
  void copy_to_device(DevicePtr dst, const void* src, std::size_t bytes) override {
    TS_CU(api_, cuStreamSynchronize(stream_));
    TS_CU(api_, cuMemcpyHtoD(dst, src, bytes));
  }
  void* alloc_host(std::size_t bytes) noexcept override {
    void* p = nullptr;
    return api_.cuMemAllocHost(&p, bytes) == CUDA_SUCCESS ? p : nullptr;
  }
  void free_host(void* p) noexcept override {
    if (p) api_.cuMemFreeHost(p);
  }
  void copy_to_host(void* dst, DevicePtr src, std::size_t bytes) override {
    TS_CU(api_, cuStreamSynchronize(stream_));
    TS_CU(api_, cuMemcpyDtoH(dst, src, bytes));
  }
  void copy_on_device(DevicePtr dst, DevicePtr src, std::size_t bytes) override {
    TS_CU(api_, cuMemcpyDtoDAsync(dst, src, bytes, stream_));
  }
  void fill_u32(DevicePtr dst, std::uint32_t value, std::size_t count) override {
    TS_CU(api_, cuMemsetD32Async(dst, value, count, stream_));
  }

  std::unique_ptr<GpuModule> load_module(const std::string& binary) override {
    CUmodule m = nullptr;
    TS_CU(api_, cuModuleLoadData(&m, binary.data()));
    return std::make_unique<CudaModule>(api_, m);
  }

  void launch(GpuFunction& fn, std::array<std::uint32_t, 3> grid, std::array<std::uint32_t, 3> block,
              std::uint64_t dynamic_shared_bytes, void** args) override {
    auto& f = static_cast<CudaFunction&>(fn);
    TS_CU(api_,
          cuLaunchKernel(f.handle(), grid[0], grid[1], grid[2], block[0], block[1], block[2],
                         static_cast<unsigned>(dynamic_shared_bytes), stream_, args, nullptr));
  }
  void synchronize() override { TS_CU(api_, cuStreamSynchronize(stream_)); }

  void encode_tensor_map(const TensorMapSpec& spec, DevicePtr base, void* out) override {
    static_assert(sizeof(CUtensorMap) == kTensorMapBytes, "tensor map size");
    Status st = cuda::encode_tensor_map(api_, spec, static_cast<CUdeviceptr>(base), static_cast<CUtensorMap*>(out));
    if (!st.ok())
      throw GpuError("CUDA", -1, "tensor map", "cuTensorMapEncodeTiled", __FILE__, __LINE__, false, st.message());
  }

  std::unique_ptr<GpuEvent> create_event() override {
    CUevent e = nullptr;
    TS_CU(api_, cuEventCreate(&e, CU_EVENT_DEFAULT));
    return std::make_unique<CudaEvent>(api_, e);
  }
  void record(GpuEvent& e) override {
    TS_CU(api_, cuEventRecord(static_cast<CudaEvent&>(e).handle(), stream_));
  }
  float elapsed_ms(GpuEvent& start, GpuEvent& end) override {
    TS_CU(api_, cuEventSynchronize(static_cast<CudaEvent&>(end).handle()));
    float ms = 0;
    TS_CU(api_, cuEventElapsedTime(&ms, static_cast<CudaEvent&>(start).handle(),
                                   static_cast<CudaEvent&>(end).handle()));
    return ms;
  }

  // cuBLASLt for every type, with the epilogue fused where it has one; cublasGemmEx for
  // the plain GEMM where cuBLASLt is missing or has no algorithm for it.
  Status vendor_gemm(const GemmProblem& p, DevicePtr a, DevicePtr b, DevicePtr c, DevicePtr bias,
                     const VendorBlockScales& scales) override {
    Status lt = ensure_lt();
    LtGemm::ScalePointers lt_scales;
    if (lt.ok() && p.scaling == Scaling::kBlock) {
      auto placed = place_block_scales(p, scales);
      if (placed.ok())
        lt_scales = *placed;
      else
        lt = placed.status();
    }
    if (lt.ok()) lt = lt_->run(p, a, b, c, bias, lt_scales, stream_);
    if (lt.ok()) {
      used_ = lt_->version() + " (cublasLtMatmul, heuristic algo, " +
              compute_type_name(p.a_type == DType::kF32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F) + ")";
      return lt;
    }
    const bool lt_cannot = lt.code() == StatusCode::kUnavailable || lt.code() == StatusCode::kInvalidArgument;
    if (!lt_cannot) return lt;
    if (p.epilogue != Epilogue::kNone) {
      // The caller times the plain GEMM on invalid_argument, so a missing cuBLASLt reads as "cannot fuse".
      if (lt.code() == StatusCode::kUnavailable)
        return Status::invalid("no fused " + std::string(epilogue_name(p.epilogue)) + " epilogue: " + lt.message());
      return lt;
    }
    Status ex = gemm_ex(p, a, b, c);
    if (!ex.ok()) return ex.with_context("cuBLASLt: " + lt.message() + "; then cublasGemmEx");
    return ex;
  }

  // NVML finds the device by its PCI address: NVML's index order need not be CUDA's
  // (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER).
  Result<std::unique_ptr<TelemetrySource>> open_telemetry() override {
    TS_ASSIGN_OR_RETURN(const nvml::Api* nvml, nvml::api());
    int domain = 0, bus = 0, device = 0;
    if (api_.cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev_) !=
            CUDA_SUCCESS ||
        api_.cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev_) != CUDA_SUCCESS ||
        api_.cuDeviceGetAttribute(&device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev_) != CUDA_SUCCESS)
      return Status::unavailable(
          "the CUDA driver gives no PCI address for the device, so NVML cannot find it");
    char id[32];
    std::snprintf(id, sizeof id, "%04x:%02x:%02x.0", domain, bus, device);
    TS_ASSIGN_OR_RETURN(std::unique_ptr<nvml::Telemetry> t, nvml::Telemetry::open(*nvml, id));
    return std::unique_ptr<TelemetrySource>(std::move(t));
  }

  std::string vendor_name() const override {
    if (!used_.empty()) return used_;
    std::string lt = lt_ ? lt_->version() : std::string("cuBLASLt");
    return lt + " (cublasLtMatmul, heuristic algo; fp32: CUBLAS_COMPUTE_32F_PEDANTIC, fp16/bf16: CUBLAS_COMPUTE_32F)";
  }

 private:
  // 32 MiB of workspace lets the heuristic pick split-K and stream-K kernels, as cuBLAS
  // itself reserves on Hopper; allocated once, on first use.
  static constexpr std::size_t kLtWorkspaceBytes = std::size_t(32) << 20;

  // The block-scale grids in cuBLASLt's layouts on the device, uploaded once per problem and grids
  // (a timing loop calls vendor_gemm for every launch).
  Result<LtGemm::ScalePointers> place_block_scales(const GemmProblem& p, const VendorBlockScales& scales) {
    if (!scales.a || !scales.b) return Status::invalid("block-scaled " + p.describe() + " without its scale grids");
    const std::string key = p.key();
    if (key != lt_scales_key_ || scales.a != lt_scales_from_[0] || scales.b != lt_scales_from_[1]) {
      TS_ASSIGN_OR_RETURN(LtPlan plan, plan_cublaslt(p));
      TS_ASSIGN_OR_RETURN(LtScaleArrays arrays, lt_block_scale_arrays(p, plan, *scales.a, *scales.b));
      free_lt_scales();
      for (int i = 0; i < 2; ++i) {
        const std::vector<float>& host = i == 0 ? arrays.a : arrays.b;
        lt_scales_[i] = alloc(host.size() * sizeof(float));
        copy_to_device(lt_scales_[i], host.data(), host.size() * sizeof(float));
      }
      lt_scales_key_ = key;
      lt_scales_from_[0] = scales.a;
      lt_scales_from_[1] = scales.b;
    }
    return LtGemm::ScalePointers{lt_scales_[0], lt_scales_[1]};
  }
  void free_lt_scales() noexcept {
    for (DevicePtr& d : lt_scales_)
      if (d) free(d), d = 0;
    lt_scales_key_.clear();
    lt_scales_from_[0] = lt_scales_from_[1] = nullptr;
  }

  Status ensure_lt() {
    if (lt_) return {};
    if (!lt_status_.ok()) return lt_status_;  // tried before: the same answer
    if (!lt_workspace_) lt_workspace_ = alloc(kLtWorkspaceBytes);
    auto r = LtGemm::create(lt_workspace_, kLtWorkspaceBytes);
    if (!r.ok()) {
      lt_status_ = r.status();
      free(lt_workspace_);
      lt_workspace_ = 0;
      return lt_status_;
    }
    lt_ = std::move(r).value();
    return {};
  }

  Status gemm_ex(const GemmProblem& p, DevicePtr a, DevicePtr b, DevicePtr c) {
    if (dtype_is_fp8(p.a_type))
      return Status(StatusCode::kUnimplemented, std::string("cublasGemmEx takes no scaled ") + dtype_name(p.a_type) + " inputs");
    TS_RETURN_IF_ERROR(ensure_blas());
    const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
    const bool a_row = p.a_layout == Layout::kRowMajor, b_row = p.b_layout == Layout::kRowMajor;
    // fp32 stays pedantic (no TF32 or other reduced-precision shortcut); half inputs use the
    // tensor cores with fp32 accumulation, as the templates do.
    const bool half = p.a_type != DType::kF32;
    const cudaDataType ab = cuda_data_type(p.a_type), ct = cuda_data_type(p.c_type);
    const cublasComputeType_t compute = half ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_PEDANTIC;
    // No reduced-precision split-K reductions either: fp32 accumulation throughout.
    cublas_->cublasSetMathMode(
        blas_, half ? cublasMath_t(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)
                    : CUBLAS_PEDANTIC_MATH);
    // cuBLAS is column-major. A column-major C is computed directly; a row-major C is
    // the column-major C^T = B^T A^T. A row-major operand, read column-major, is
    // already transposed, which picks each op.
    cublasStatus_t st;
    if (p.c_layout == Layout::kColMajor) {
      st = cublas_->cublasGemmEx(blas_, a_row ? CUBLAS_OP_T : CUBLAS_OP_N, b_row ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 int(p.m), int(p.n), int(p.k), &alpha, reinterpret_cast<void*>(a), ab, int(p.lda()),
                                 reinterpret_cast<void*>(b), ab, int(p.ldb()), &beta, reinterpret_cast<void*>(c), ct,
                                 int(p.ldc()), compute, CUBLAS_GEMM_DEFAULT);
    } else {
      st = cublas_->cublasGemmEx(blas_, b_row ? CUBLAS_OP_N : CUBLAS_OP_T, a_row ? CUBLAS_OP_N : CUBLAS_OP_T,
                                 int(p.n), int(p.m), int(p.k), &alpha, reinterpret_cast<void*>(b), ab, int(p.ldb()),
                                 reinterpret_cast<void*>(a), ab, int(p.lda()), &beta, reinterpret_cast<void*>(c), ct,
                                 int(p.ldc()), compute, CUBLAS_GEMM_DEFAULT);
    }
    if (st != CUBLAS_STATUS_SUCCESS)
      return Status::internal("cublasGemmEx (" + std::string(dtype_name(p.a_type)) + " inputs, " + dtype_name(p.c_type) +
                              " C) failed with status " + std::to_string(int(st)));
    int ver = 0;
    cublas_->cublasGetVersion(blas_, &ver);
    used_ = "cuBLAS " + std::to_string(ver / 10000) + "." + std::to_string((ver / 100) % 100) + "." +
            std::to_string(ver % 100) + " (cublasGemmEx, " + compute_type_name(compute) + ")";
    return {};
  }

  Status ensure_blas() {
    if (blas_) return {};
    TS_ASSIGN_OR_RETURN(cublas_, cublas_api());
    if (cublas_->cublasCreate(&blas_) != CUBLAS_STATUS_SUCCESS) {
      blas_ = nullptr;
      return Status::unavailable("cublasCreate failed");
    }
    cublas_->cublasSetStream(blas_, reinterpret_cast<cudaStream_t>(stream_));
    // Pedantic math: no TF32 or other reduced-precision shortcut in the baseline.
    cublas_->cublasSetMathMode(blas_, CUBLAS_PEDANTIC_MATH);
    return {};
  }

  const DriverApi& api_;
  CUdevice dev_;
  DeviceFacts facts_;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  const CublasApi* cublas_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::unique_ptr<LtGemm> lt_;
  Status lt_status_;             // why cuBLASLt is unavailable, once tried
  DevicePtr lt_workspace_ = 0;   // owned; freed after lt_
  DevicePtr lt_scales_[2] = {0, 0};  // owned: place_block_scales's copies
  std::string lt_scales_key_;
  const std::vector<float>* lt_scales_from_[2] = {nullptr, nullptr};
  std::string used_;             // what the last vendor_gemm ran, for vendor_name()
};

Result<DeviceFacts> read_facts(const DriverApi& api, int ordinal, const std::string& rtc_version) {
  CUdevice dev;
  if (api.cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS) return Status::not_found("no CUDA device " + std::to_string(ordinal));
  DeviceFacts f;
  f.backend = "cuda";
  f.ordinal = ordinal;
  char name[256] = {};
  api.cuDeviceGetName(name, sizeof name, dev);
  f.name = name;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    api.cuDeviceGetAttribute(&v, a, dev);
    return v;
  };
  int major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  int minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  f.arch = "sm_" + std::to_string(major) + std::to_string(minor);
  f.multiprocessors = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  f.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  f.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  f.shared_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  f.shared_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  f.registers_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  f.registers_per_multiprocessor = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  f.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  f.clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  f.memory_clock_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  f.memory_bus_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  size_t total = 0;
  api.cuDeviceTotalMem(&total, dev);
  f.global_memory_bytes = static_cast<std::int64_t>(total);
  int driver = 0;
  api.cuDriverGetVersion(&driver);
  f.driver_version = "CUDA " + version_text(driver);
  f.runtime_version = rtc_version;
  f.fp32_lanes_per_multiprocessor = fp32_lanes_for_arch(f.arch);
  return f;
}

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }

  Result<std::vector<DeviceFacts>> devices() override {
    TS_ASSIGN_OR_RETURN(const DriverApi* api, init());
    int count = 0;
    CUresult rc = api->cuDeviceGetCount(&count);
    if (rc != CUDA_SUCCESS || count == 0) return Status::unavailable("the NVIDIA driver found no GPU");
    std::string rtc = rtc_version();
    std::vector<DeviceFacts> out;
    for (int i = 0; i < count; ++i) {
      TS_ASSIGN_OR_RETURN(DeviceFacts f, read_facts(*api, i, rtc));
      out.push_back(std::move(f));
    }
    return out;
  }

  Result<std::shared_ptr<Compiler>> compiler() override { return make_nvrtc_compiler(); }

  Result<std::unique_ptr<GpuDevice>> open_device(int ordinal) override {
    TS_ASSIGN_OR_RETURN(const DriverApi* api, init());
    TS_ASSIGN_OR_RETURN(DeviceFacts f, read_facts(*api, ordinal, rtc_version()));
    CUdevice dev;
    api->cuDeviceGet(&dev, ordinal);
    try {
      return std::unique_ptr<GpuDevice>(std::make_unique<CudaDevice>(*api, dev, std::move(f)));
    } catch (const GpuError& e) {
      return Status::unavailable(std::string("opening CUDA device: ") + e.what());
    }
  }

 private:
  Result<const DriverApi*> init() {
    TS_ASSIGN_OR_RETURN(const DriverApi* api, driver_api());
    CUresult rc = api->cuInit(0);
    if (rc == CUDA_ERROR_NO_DEVICE) return Status::unavailable("the NVIDIA driver is installed but found no GPU");
    if (rc != CUDA_SUCCESS)
      return Status::unavailable(cu_failure(*api, rc, "cuInit(0)", __FILE__, __LINE__).what());
    return api;
  }
  static std::string rtc_version() {
    auto c = make_nvrtc_compiler();
    return c.ok() ? (*c)->version() : "nvrtc unavailable";
  }
};

}  // namespace
}  // namespace cuda

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<cuda::CudaBackend>(); }

}  // namespace tilesmith
