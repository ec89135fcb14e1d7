// The HIP backend: HIP runtime (module API) for devices, memory and launches; hipRTC
// for compiling; hipBLAS, when the user's ROCm has it, for the baseline. Everything is
// dlopen'd (hip_api.h). Written for ROCm on MI200/MI300 class GPUs; on machines
// without an AMD GPU only the compiler path runs.

#include <cstring>
#include <map>
#include <vector>

#include "runtime/backend.h"
#include "runtime/gpu_error.h"
#include "runtime/hip/hip_api.h"
#include "runtime/rocm_smi/rocm_smi_telemetry.h"
#include "runtime/hip/hiprtc_compiler.h"

namespace tilesmith {
namespace hip {
namespace {

bool is_sticky(hipError_t rc) {
  switch (rc) {
    case hipErrorIllegalAddress:
    case hipErrorLaunchFailure:
    case hipErrorAssert:
    case hipErrorLaunchTimeOut:
    case hipErrorECCNotCorrectable:
    case hipErrorPriorLaunchFailure:
      return true;
    default:
      return false;
  }
}

bool is_resource(hipError_t rc) {
  return rc == hipErrorLaunchOutOfResources || rc == hipErrorOutOfMemory || rc == hipErrorInvalidValue;
}

[[noreturn]] void throw_hip(const HipApi& api, hipError_t rc, const char* call, const char* file, int line) {
  const char* name = api.hipGetErrorName(rc);
  const char* text = api.hipGetErrorString(rc);
  throw GpuError("HIP", static_cast<int>(rc), name ? name : "?", call, file, line, is_sticky(rc), text ? text : "",
                 is_resource(rc));
}

#define TS_HIP(call)                                                   \
  do {                                                                 \
    hipError_t ts_rc_ = (api_.call);                                   \
    if (ts_rc_ != hipSuccess) throw_hip(api_, ts_rc_, #call, __FILE__, __LINE__); \
  } while (0)

class HipFunction final : public GpuFunction {
 public:
  HipFunction(const HipApi& api, hipFunction_t fn) : api_(api), fn_(fn) {}
  FunctionAttributes attributes() const override {
    FunctionAttributes a;
    auto get = [&](hipFunction_attribute attr) {
      int v = -1;
      return api_.hipFuncGetAttribute(&v, attr, fn_) == hipSuccess ? v : -1;
    };
    a.registers = get(HIP_FUNC_ATTRIBUTE_NUM_REGS);
    a.static_shared_bytes = get(HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    a.local_bytes = get(HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
    a.max_threads_per_block = get(HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    return a;
  }
  // AMD GPUs give a block its whole LDS without an opt-in; launches beyond it fail.
  void set_max_dynamic_shared(std::int64_t) override {}
  hipFunction_t handle() const { return fn_; }

 private:
  const HipApi& api_;
  hipFunction_t fn_;
};

class HipModule final : public GpuModule {
 public:
  HipModule(const HipApi& api, hipModule_t m) : api_(api), module_(m) {}
  ~HipModule() override { (void)api_.hipModuleUnload(module_); }
  HipModule(const HipModule&) = delete;
  HipModule& operator=(const HipModule&) = delete;
  GpuFunction& function(const std::string& name) override {
    auto it = functions_.find(name);
    if (it != functions_.end()) return it->second;
    hipFunction_t fn = nullptr;
    TS_HIP(hipModuleGetFunction(&fn, module_, name.c_str()));
    return functions_.emplace(name, HipFunction(api_, fn)).first->second;
  }

 private:
  const HipApi& api_;
  hipModule_t module_;
  std::map<std::string, HipFunction> functions_;
};

class HipEvent final : public GpuEvent {
 public:
  HipEvent(const HipApi& api, hipEvent_t e) : api_(api), event_(e) {}
  ~HipEvent() override { (void)api_.hipEventDestroy(event_); }
  HipEvent(const HipEvent&) = delete;
  HipEvent& operator=(const HipEvent&) = delete;
  hipEvent_t handle() const { return event_; }

 private:
  const HipApi& api_;
  hipEvent_t event_;
};

class HipDevice final : public GpuDevice {
 public:
  HipDevice(const HipApi& api, int ordinal, DeviceFacts facts) : api_(api), facts_(std::move(facts)) {
    TS_HIP(hipSetDevice(ordinal));
    TS_HIP(hipStreamCreateWithFlags(&stream_, hipStreamNonBlocking));
  }
  ~HipDevice() override {
    if (blas_ && hipblas_) hipblas_->hipblasDestroy(blas_);
    (void)api_.hipStreamDestroy(stream_);
  }
  HipDevice(const HipDevice&) = delete;
  HipDevice& operator=(const HipDevice&) = delete;

  const DeviceFacts& facts() const override { return facts_; }
  DevicePtr alloc(std::size_t bytes) override {
    void* p = nullptr;
    TS_HIP(hipMalloc(&p, bytes));
    return reinterpret_cast<DevicePtr>(p);
  }
  void free(DevicePtr p) noexcept override { (void)api_.hipFree(ptr(p)); }
  void copy_to_device(DevicePtr dst, const void* src, std::size_t bytes) override {
    TS_HIP(hipStreamSynchronize(stream_));
    TS_HIP(hipMemcpyHtoD(ptr(dst), const_cast<void*>(src), bytes));
  }
  void* alloc_host(std::size_t bytes) noexcept override {
    void* p = nullptr;
    return api_.hipHostMalloc(&p, bytes, 0) == hipSuccess ? p : nullptr;
  }
  void free_host(void* p) noexcept override {
    if (p) (void)api_.hipHostFree(p);
  }
  void copy_to_host(void* dst, DevicePtr src, std::size_t bytes) override {
    TS_HIP(hipStreamSynchronize(stream_));
    TS_HIP(hipMemcpyDtoH(dst, ptr(src), bytes));
  }
  void copy_on_device(DevicePtr dst, DevicePtr src, std::size_t bytes) override {
    TS_HIP(hipMemcpyDtoDAsync(ptr(dst), ptr(src), bytes, stream_));
  }
  void fill_u32(DevicePtr dst, std::uint32_t value, std::size_t count) override {
    TS_HIP(hipMemsetD32Async(ptr(dst), static_cast<int>(value), count, stream_));
  }
  std::unique_ptr<GpuModule> load_module(const std::string& binary) override {
    hipModule_t m = nullptr;
    TS_HIP(hipModuleLoadData(&m, binary.data()));
    return std::make_unique<HipModule>(api_, m);
  }
  void launch(GpuFunction& fn, std::array<std::uint32_t, 3> grid, std::array<std::uint32_t, 3> block,
              std::uint64_t dynamic_shared_bytes, void** args) override {
    auto& f = static_cast<HipFunction&>(fn);
    TS_HIP(hipModuleLaunchKernel(f.handle(), grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                 static_cast<unsigned>(dynamic_shared_bytes), stream_, args, nullptr));
  }
  void synchronize() override { TS_HIP(hipStreamSynchronize(stream_)); }
  std::unique_ptr<GpuEvent> create_event() override {
    hipEvent_t e = nullptr;
    TS_HIP(hipEventCreate(&e));
    return std::make_unique<HipEvent>(api_, e);
  }
  void record(GpuEvent& e) override { TS_HIP(hipEventRecord(static_cast<HipEvent&>(e).handle(), stream_)); }
  float elapsed_ms(GpuEvent& start, GpuEvent& end) override {
    TS_HIP(hipEventSynchronize(static_cast<HipEvent&>(end).handle()));
    float ms = 0;
    TS_HIP(hipEventElapsedTime(&ms, static_cast<HipEvent&>(start).handle(), static_cast<HipEvent&>(end).handle()));
    return ms;
  }

  // hipblasSgemm for fp32, hipblasGemmEx (fp32 accumulation) for half inputs; hipBLAS
  // fuses no epilogue, so any epilogue is invalid_argument and the caller times the plain GEMM.
  Status vendor_gemm(const GemmProblem& p, DevicePtr a, DevicePtr b, DevicePtr c, DevicePtr bias,
                     const VendorBlockScales& scales) override {
    (void)bias;
    (void)scales;
    if (p.scaling == Scaling::kBlock)
      return Status(StatusCode::kUnimplemented, "no hipBLAS baseline for block-scaled FP8");
    TS_RETURN_IF_ERROR(ensure_blas());
    const bool fp32 = p.a_type == DType::kF32 && p.b_type == DType::kF32 && p.c_type == DType::kF32;
    if (fp32 && p.epilogue == Epilogue::kNone) return sgemm(p, a, b, c);
    TS_ASSIGN_OR_RETURN(GemmExArgs x, plan_gemm_ex(p, hipblas_->gemm_ex_abi));
    if (!hipblas_->gemm_ex)
      return Status::unavailable(hipblas_->library_path + " lacks " + hipblas_->gemm_ex_symbol);
    const float alpha = float(p.alpha), beta = float(p.beta);
    const void* first = ptr(x.swap_operands ? b : a);
    const void* second = ptr(x.swap_operands ? a : b);
    int st = hipblas_->gemm_ex(blas_, x.trans_a, x.trans_b, x.m, x.n, x.k, &alpha, first, x.a_type, x.lda, second,
                               x.b_type, x.ldb, &beta, ptr(c), x.c_type, x.ldc, x.compute_type, kHipblasGemmDefault);
    if (st != 0)
      return Status::internal(std::string(hipblas_->gemm_ex_symbol) + " (" + dtype_name(p.a_type) + " inputs, " +
                              dtype_name(p.c_type) + " C) failed with hipBLAS status " + std::to_string(st));
    return {};
  }
  // ROCm SMI finds the device by its PCI address: its index order need not be HIP's
  // (HIP_VISIBLE_DEVICES). The same zeroed, generous buffer as read_facts: the runtime may
  // write a larger structure than these headers declare.
  Result<std::unique_ptr<TelemetrySource>> open_telemetry() override {
    TS_ASSIGN_OR_RETURN(const rocm_smi::Api* smi, rocm_smi::api());
    std::vector<unsigned char> storage(sizeof(hipDeviceProp_t) + 8192, 0);
    auto* prop = reinterpret_cast<hipDeviceProp_t*>(storage.data());
    if (api_.hipGetDeviceProperties(prop, facts_.ordinal) != hipSuccess)
      return Status::unavailable("the HIP runtime gives no PCI address for the device, so ROCm SMI cannot find it");
    const std::uint64_t id = rocm_smi::bdf_id(prop->pciDomainID, prop->pciBusID, prop->pciDeviceID);
    TS_ASSIGN_OR_RETURN(std::unique_ptr<rocm_smi::Telemetry> t, rocm_smi::Telemetry::open(*smi, id));
    return std::unique_ptr<TelemetrySource>(std::move(t));
  }

  std::string vendor_name() const override {
    std::string ex = hipblas_ ? hipblas_->gemm_ex_symbol : "hipblasGemmEx";
    return "hipBLAS (fp32: hipblasSgemm; fp16/bf16: " + ex + ", fp32 compute)";
  }

 private:
  Status ensure_blas() {
    if (blas_) return {};
    TS_ASSIGN_OR_RETURN(hipblas_, hipblas_api());
    if (hipblas_->hipblasCreate(&blas_) != 0) {
      blas_ = nullptr;
      return Status::unavailable("hipblasCreate failed");
    }
    hipblas_->hipblasSetStream(blas_, stream_);
    return {};
  }

  Status sgemm(const GemmProblem& p, DevicePtr a, DevicePtr b, DevicePtr c) {
    const float alpha = float(p.alpha), beta = float(p.beta);
    const bool a_row = p.a_layout == Layout::kRowMajor, b_row = p.b_layout == Layout::kRowMajor;
    const auto* A = reinterpret_cast<const float*>(a);
    const auto* B = reinterpret_cast<const float*>(b);
    auto* C = reinterpret_cast<float*>(c);
    constexpr int N = HipblasApi::kOpN, T = HipblasApi::kOpT;
    // Column-major, as cuBLAS: see hipblas_gemm_ex.h for how the ops are chosen.
    int st = p.c_layout == Layout::kColMajor
                 ? hipblas_->hipblasSgemm(blas_, a_row ? T : N, b_row ? T : N, int(p.m), int(p.n), int(p.k), &alpha, A,
                                          int(p.lda()), B, int(p.ldb()), &beta, C, int(p.ldc()))
                 : hipblas_->hipblasSgemm(blas_, b_row ? N : T, a_row ? N : T, int(p.n), int(p.m), int(p.k), &alpha, B,
                                          int(p.ldb()), A, int(p.lda()), &beta, C, int(p.ldc()));
    if (st != 0) return Status::internal("hipblasSgemm failed with status " + std::to_string(st));
    return {};
  }

  static void* ptr(DevicePtr p) { return reinterpret_cast<void*>(p); }
  const HipApi& api_;
  DeviceFacts facts_;
  hipStream_t stream_ = nullptr;
  const HipblasApi* hipblas_ = nullptr;
  HipblasApi::Handle blas_ = nullptr;
};

std::string version_text(int v) {
  // HIP encodes versions as major*10000000 + minor*100000 + patch.
  return std::to_string(v / 10000000) + "." + std::to_string((v / 100000) % 100) + "." + std::to_string(v % 100000);
}

Result<DeviceFacts> read_facts(const HipApi& api, int ordinal, const std::string& rtc_version) {
  // The runtime may write a larger structure than the headers we were built with
  // declare; a generous zeroed buffer keeps such a write inside our memory.
  std::vector<unsigned char> storage(sizeof(hipDeviceProp_t) + 8192, 0);
  auto* prop = reinterpret_cast<hipDeviceProp_t*>(storage.data());
  hipError_t rc = api.hipGetDeviceProperties(prop, ordinal);
  if (rc != hipSuccess) return Status::unavailable(std::string("hipGetDeviceProperties failed: ") + api.hipGetErrorName(rc));
  DeviceFacts f;
  f.backend = "hip";
  f.ordinal = ordinal;
  f.name = prop->name;
  std::string arch = prop->gcnArchName;  // "gfx90a:sramecc+:xnack-"
  f.arch = arch.substr(0, arch.find(':'));
  f.multiprocessors = prop->multiProcessorCount;
  f.warp_size = prop->warpSize;
  f.max_threads_per_block = prop->maxThreadsPerBlock;
  f.shared_per_block = static_cast<std::int64_t>(prop->sharedMemPerBlock);
  f.shared_per_block_optin = static_cast<std::int64_t>(prop->sharedMemPerBlock);
  f.registers_per_block = prop->regsPerBlock;
  f.l2_bytes = prop->l2CacheSize;
  f.clock_khz = prop->clockRate;
  f.memory_clock_khz = prop->memoryClockRate;
  f.memory_bus_bits = prop->memoryBusWidth;
  f.global_memory_bytes = static_cast<std::int64_t>(prop->totalGlobalMem);
  int driver = 0, runtime = 0;
  (void)api.hipDriverGetVersion(&driver);
  (void)api.hipRuntimeGetVersion(&runtime);
  f.driver_version = "HIP " + version_text(runtime) + " (driver " + std::to_string(driver) + ")";
  f.runtime_version = rtc_version;
  f.fp32_lanes_per_multiprocessor = fp32_lanes_for_arch(f.arch);
  return f;
}

class HipBackend final : public Backend {
 public:
  std::string name() const override { return "hip"; }

  Result<std::vector<DeviceFacts>> devices() override {
    TS_ASSIGN_OR_RETURN(const HipApi* api, init());
    int count = 0;
    hipError_t rc = api->hipGetDeviceCount(&count);
    if (rc != hipSuccess || count == 0) return Status::unavailable("the HIP runtime found no AMD GPU");
    std::vector<DeviceFacts> out;
    for (int i = 0; i < count; ++i) {
      TS_ASSIGN_OR_RETURN(DeviceFacts f, read_facts(*api, i, rtc_version()));
      out.push_back(std::move(f));
    }
    return out;
  }

  Result<std::shared_ptr<Compiler>> compiler() override { return make_hiprtc_compiler(); }

  Result<std::unique_ptr<GpuDevice>> open_device(int ordinal) override {
    TS_ASSIGN_OR_RETURN(const HipApi* api, init());
    TS_ASSIGN_OR_RETURN(DeviceFacts f, read_facts(*api, ordinal, rtc_version()));
    try {
      return std::unique_ptr<GpuDevice>(std::make_unique<HipDevice>(*api, ordinal, std::move(f)));
    } catch (const GpuError& e) {
      return Status::unavailable(std::string("opening HIP device: ") + e.what());
    }
  }

 private:
  Result<const HipApi*> init() {
    TS_ASSIGN_OR_RETURN(const HipApi* api, hip_api());
    hipError_t rc = api->hipInit(0);
    if (rc == hipErrorNoDevice || rc == hipErrorInvalidDevice)
      return Status::unavailable("the HIP runtime is installed but found no AMD GPU (" +
                                 std::string(api->hipGetErrorName(rc)) + ")");
    if (rc != hipSuccess) return Status::unavailable(std::string("hipInit failed: ") + api->hipGetErrorName(rc));
    return api;
  }
  static std::string rtc_version() {
    auto c = make_hiprtc_compiler();
    return c.ok() ? (*c)->version() : "hiprtc unavailable";
  }
};

}  // namespace
}  // namespace hip

std::unique_ptr<Backend> make_hip_backend() { return std::make_unique<hip::HipBackend>(); }

}  // namespace tilesmith
