#include "runtime/cuda/cublaslt_gemm.h"

#include <utility>

#include "runtime/cuda/cublaslt_plan.h"

namespace tilesmith::cuda {
namespace {

std::string status_text(cublasStatus_t st) {
  switch (st) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
      return "cuBLAS status " + std::to_string(int(st));
  }
}

// Owns one cuBLASLt descriptor; destroys it with the table's function. Move-only.
template <typename T>
class LtObject {
 public:
  using Destroy = cublasStatus_t (*)(T);
  LtObject() = default;
  explicit LtObject(Destroy destroy) : destroy_(destroy) {}
  ~LtObject() {
    if (h_ && destroy_) destroy_(h_);
  }
  LtObject(LtObject&& o) noexcept : h_(std::exchange(o.h_, nullptr)), destroy_(o.destroy_) {}
  LtObject& operator=(LtObject&&) = delete;
  LtObject(const LtObject&) = delete;
  LtObject& operator=(const LtObject&) = delete;
  T* out() { return &h_; }
  T get() const { return h_; }

 private:
  T h_ = nullptr;
  Destroy destroy_ = nullptr;
};

// Records the first failing call; later calls are skipped.
class Calls {
 public:
  void operator()(cublasStatus_t st, const char* call) {
    if (status_.ok() && st != CUBLAS_STATUS_SUCCESS)
      status_ = Status::internal(std::string(call) + ": " + status_text(st));
  }
  const Status& status() const { return status_; }

 private:
  Status status_;
};

template <typename V>
cublasStatus_t set(const CublasLtApi& api, cublasLtMatmulDesc_t d,
                   cublasLtMatmulDescAttributes_t attr, const V& v) {
  return api.cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof v);
}

}  // namespace

struct LtGemm::Entry {
  explicit Entry(const CublasLtApi& api)
      : desc(api.cublasLtMatmulDescDestroy),
        a(api.cublasLtMatrixLayoutDestroy),
        b(api.cublasLtMatrixLayoutDestroy),
        d(api.cublasLtMatrixLayoutDestroy) {}
  Status status;  // ok, or why this problem cannot run (returned on every call)
  LtPlan plan;
  LtObject<cublasLtMatmulDesc_t> desc;
  LtObject<cublasLtMatrixLayout_t> a, b, d;
  cublasLtMatmulAlgo_t algo{};
  std::string problem;  // GemmProblem::describe(), for messages
  Epilogue epilogue = Epilogue::kNone;
  Layout c_layout = Layout::kRowMajor;
};

Result<std::unique_ptr<LtGemm>> LtGemm::create(DevicePtr workspace, std::size_t workspace_bytes) {
  TS_ASSIGN_OR_RETURN(const CublasLtApi* api, cublaslt_api());
  cublasLtHandle_t handle = nullptr;
  if (cublasStatus_t st = api->cublasLtCreate(&handle); st != CUBLAS_STATUS_SUCCESS)
    return Status::unavailable("cublasLtCreate failed: " + status_text(st));
  return std::unique_ptr<LtGemm>(new LtGemm(*api, handle, workspace, workspace_bytes));
}

LtGemm::LtGemm(const CublasLtApi& api, cublasLtHandle_t handle, DevicePtr workspace,
               std::size_t workspace_bytes)
    : api_(api), handle_(handle), workspace_(workspace), workspace_bytes_(workspace_bytes) {}

LtGemm::~LtGemm() {
  cache_.clear();  // descriptors before the handle
  api_.cublasLtDestroy(handle_);
}

std::string LtGemm::version() const {
  const std::size_t v = api_.cublasLtGetVersion();  // major*10000 + minor*100 + patch
  return "cuBLASLt " + std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." +
         std::to_string(v % 100);
}

LtGemm::Entry& LtGemm::entry_for(const GemmProblem& p, DevicePtr bias, ScalePointers scales) {
  auto it = cache_.find(p.key());
  if (it != cache_.end()) return *it->second;
  auto e = std::make_unique<Entry>(api_);
  e->problem = p.describe();
  e->epilogue = p.epilogue;
  e->c_layout = p.c_layout;
  e->status = build(*e, p, bias, scales);
  return *cache_.emplace(p.key(), std::move(e)).first->second;
}

Status LtGemm::build(Entry& e, const GemmProblem& p, DevicePtr bias, ScalePointers scales) {
  TS_ASSIGN_OR_RETURN(e.plan, plan_cublaslt(p));
  const LtPlan& plan = e.plan;
  Calls call;
  call(api_.cublasLtMatmulDescCreate(e.desc.out(), plan.compute, plan.scale_type),
       "cublasLtMatmulDescCreate");
  if (!call.status().ok()) return call.status();
  const cublasLtMatmulDesc_t d = e.desc.get();
  call(set(api_, d, CUBLASLT_MATMUL_DESC_TRANSA, std::int32_t(plan.trans_a)), "setting TRANSA");
  call(set(api_, d, CUBLASLT_MATMUL_DESC_TRANSB, std::int32_t(plan.trans_b)), "setting TRANSB");
  call(set(api_, d, CUBLASLT_MATMUL_DESC_EPILOGUE, std::uint32_t(plan.epilogue)),
       "setting EPILOGUE");
  if (plan.has_bias) {
    // The heuristic reads the pointer's alignment, so the real one is set before it runs.
    call(set(api_, d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, std::int32_t(plan.bias_type)),
         "setting BIAS_DATA_TYPE");
    call(set(api_, d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, reinterpret_cast<const void*>(bias)),
         "setting BIAS_POINTER");
  }
  if (plan.block_scaled) {
    // Older libraries do not know the attribute or the mode: no block-scaled baseline there.
    const std::int32_t a_mode = plan.a_scale_mode, b_mode = plan.b_scale_mode;
    if (set(api_, d, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, a_mode) != CUBLAS_STATUS_SUCCESS ||
        set(api_, d, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, b_mode) != CUBLAS_STATUS_SUCCESS)
      return Status(StatusCode::kUnimplemented, version() + " has no block-scaled FP8 (the VEC128_32F / "
                                                            "BLK128x128_32F scale modes came with cuBLASLt 12.9)");
    call(set(api_, d, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, reinterpret_cast<const void*>(scales.a)),
         "setting A_SCALE_POINTER");
    call(set(api_, d, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, reinterpret_cast<const void*>(scales.b)),
         "setting B_SCALE_POINTER");
  }
  auto make_layout = [&](LtObject<cublasLtMatrixLayout_t>& out, const LtMatrix& m,
                         const char* what) {
    call(api_.cublasLtMatrixLayoutCreate(out.out(), m.type, m.rows, m.cols, m.ld), what);
    if (!call.status().ok() || m.order == CUBLASLT_ORDER_COL) return;
    const std::int32_t order = m.order;
    call(api_.cublasLtMatrixLayoutSetAttribute(out.get(), CUBLASLT_MATRIX_LAYOUT_ORDER, &order,
                                               sizeof order),
         what);
  };
  make_layout(e.a, plan.a, "cublasLtMatrixLayoutCreate (A)");
  make_layout(e.b, plan.b, "cublasLtMatrixLayoutCreate (B)");
  make_layout(e.d, plan.d, "cublasLtMatrixLayoutCreate (C/D)");
  if (!call.status().ok()) return call.status();
  return choose_algorithm(e);
}

Status LtGemm::choose_algorithm(Entry& e) {
  LtObject<cublasLtMatmulPreference_t> pref(api_.cublasLtMatmulPreferenceDestroy);
  Calls call;
  call(api_.cublasLtMatmulPreferenceCreate(pref.out()), "cublasLtMatmulPreferenceCreate");
  if (!call.status().ok()) return call.status();
  const std::uint64_t ws = workspace_bytes_;
  call(api_.cublasLtMatmulPreferenceSetAttribute(
           pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
       "setting MAX_WORKSPACE_BYTES");
  const std::uint32_t schemes = e.plan.reduction_schemes;
  call(api_.cublasLtMatmulPreferenceSetAttribute(
           pref.get(), CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes),
       "setting REDUCTION_SCHEME_MASK");
  if (!call.status().ok()) return call.status();

  cublasLtMatmulHeuristicResult_t best{};
  int found = 0;
  // C and D are one buffer with one layout.
  cublasStatus_t st =
      api_.cublasLtMatmulAlgoGetHeuristic(handle_, e.desc.get(), e.a.get(), e.b.get(), e.d.get(),
                                          e.d.get(), pref.get(), 1, &best, &found);
  if (st == CUBLAS_STATUS_SUCCESS && found > 0 && best.state == CUBLAS_STATUS_SUCCESS) {
    e.algo = best.algo;
    return {};
  }
  // No algorithm: say what was asked, and in words where the epilogue is the reason.
  std::string why;
  if (e.plan.has_bias && e.plan.d.order == CUBLASLT_ORDER_ROW)
    why = std::string("cuBLASLt cannot fuse ") + epilogue_name(e.epilogue) + " into a " +
          (e.c_layout == Layout::kRowMajor ? "row" : "column") +
          "-major C: its bias runs along the rows of D, which puts D in CUBLASLT_ORDER_ROW, and it "
          "has no "
          "algorithm for a bias with that order (" +
          e.problem + ")";
  else if (e.epilogue != Epilogue::kNone)
    why =
        "cuBLASLt has no algorithm for " + e.problem + " with a fused " + epilogue_name(e.epilogue);
  else
    why = "cuBLASLt has no algorithm for " + e.problem;
  why += " [" + e.plan.describe() + "; heuristic: " + status_text(st) + ", " +
         std::to_string(found) + " found]";
  return Status::invalid(why);
}

Status LtGemm::run(const GemmProblem& p, DevicePtr a, DevicePtr b, DevicePtr c, DevicePtr bias,
                   ScalePointers scales, CUstream stream) {
  const bool wants_bias = epilogue_has_bias(p.epilogue);
  if (wants_bias && bias == 0)
    return Status::invalid(std::string(epilogue_name(p.epilogue)) + " without a bias buffer");
  if (p.scaling == Scaling::kBlock && (scales.a == 0 || scales.b == 0))
    return Status::invalid("block-scaled " + p.describe() + " without its scale tensors");
  Entry& e = entry_for(p, bias, scales);
  if (!e.status.ok()) return e.status;
  if (e.plan.block_scaled) {  // the buffers may have moved since the entry was built
    const void* sa = reinterpret_cast<const void*>(scales.a);
    const void* sb = reinterpret_cast<const void*>(scales.b);
    if (cublasStatus_t st = set(api_, e.desc.get(), CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, sa);
        st != CUBLAS_STATUS_SUCCESS)
      return Status::internal("setting A_SCALE_POINTER: " + status_text(st));
    if (cublasStatus_t st = set(api_, e.desc.get(), CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, sb);
        st != CUBLAS_STATUS_SUCCESS)
      return Status::internal("setting B_SCALE_POINTER: " + status_text(st));
  }
  if (e.plan.has_bias) {
    const void* ptr = reinterpret_cast<const void*>(bias);
    if (cublasStatus_t st = set(api_, e.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, ptr);
        st != CUBLAS_STATUS_SUCCESS)
      return Status::internal("setting BIAS_POINTER: " + status_text(st));
  }
  const float alpha = static_cast<float>(p.alpha * e.plan.alpha_scale), beta = static_cast<float>(p.beta);
  const void* first = reinterpret_cast<const void*>(e.plan.swap_operands ? b : a);
  const void* second = reinterpret_cast<const void*>(e.plan.swap_operands ? a : b);
  void* cd = reinterpret_cast<void*>(c);
  cublasStatus_t st = api_.cublasLtMatmul(handle_, e.desc.get(), &alpha, first, e.a.get(), second,
                                          e.b.get(), &beta, cd, e.d.get(), cd, e.d.get(), &e.algo,
                                          reinterpret_cast<void*>(workspace_), workspace_bytes_,
                                          reinterpret_cast<cudaStream_t>(stream));
  if (st != CUBLAS_STATUS_SUCCESS)
    return Status::internal("cublasLtMatmul (" + e.problem + ") failed: " + status_text(st));
  return {};
}

}  // namespace tilesmith::cuda
