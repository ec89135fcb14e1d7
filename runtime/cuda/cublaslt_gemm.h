#pragma once
// The vendor baseline through cuBLASLt: one cublasLtMatmul per call. The plan
// (cublaslt_plan.h), its descriptors and the heuristic's best algorithm are built once per
// problem (GemmProblem::key()) and cached, so a timing loop pays for the matmul only.
// Not thread-safe: one device, one thread, as GpuDevice.

#include <cuda.h>

#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "base/status.h"
#include "registry/problem.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/gpu_device.h"

namespace tilesmith::cuda {

class LtGemm {
 public:
  // Loads cuBLASLt and creates its handle; the device's context must be current.
  // `workspace` (workspace_bytes of device memory, 256-byte aligned) stays the caller's
  // and must outlive this object. unavailable when cuBLASLt cannot be loaded or created.
  static Result<std::unique_ptr<LtGemm>> create(DevicePtr workspace, std::size_t workspace_bytes);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // Enqueues C = epilogue(alpha*op(A)*op(B) + beta*C) on `stream` (C read when beta != 0;
  // bias: C's type, M or N entries, 0 when the problem has none). invalid_argument where
  // cuBLASLt cannot do the problem as asked (no fused form of its epilogue, no algorithm
  // for its types or layouts); internal when cuBLASLt reports a failure.
  Status run(const GemmProblem& p, DevicePtr a, DevicePtr b, DevicePtr c, DevicePtr bias,
             CUstream stream);

  // "cuBLASLt 13.1.0".
  std::string version() const;

 private:
  struct Entry;
  LtGemm(const CublasLtApi& api, cublasLtHandle_t handle, DevicePtr workspace,
         std::size_t workspace_bytes);
  // The cached entry for p (built on first use); its status says why it cannot run.
  Entry& entry_for(const GemmProblem& p, DevicePtr bias);
  Status build(Entry& e, const GemmProblem& p, DevicePtr bias);
  Status choose_algorithm(Entry& e);

  const CublasLtApi& api_;
  cublasLtHandle_t handle_;
  DevicePtr workspace_;
  std::size_t workspace_bytes_;
  std::map<std::string, std::unique_ptr<Entry>> cache_;
};

}  // namespace tilesmith::cuda
