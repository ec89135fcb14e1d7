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

  // Block-scaled FP8's scale tensors on the device, in cuBLASLt's A and B order and layouts
  // (lt_block_scale_arrays); both 0 for every other problem.
  struct ScalePointers {
    DevicePtr a = 0, b = 0;
  };

  // Enqueues C = epilogue(alpha*op(A)*op(B) + beta*C) on `stream` (C read when beta != 0;
  // bias: C's type, M or N entries, 0 when the problem has none). invalid_argument where
  // cuBLASLt cannot do the problem as asked (no fused form of its epilogue, no algorithm
  // for its types or layouts); unimplemented where it has no form of it at all (FP8 outside
  // NT, block scaling on a cuBLASLt before 12.9); internal when cuBLASLt reports a failure.
  Status run(const GemmProblem& p, DevicePtr a, DevicePtr b, DevicePtr c, DevicePtr bias, ScalePointers scales,
             CUstream stream);

  // "cuBLASLt 13.1.0".
  std::string version() const;

 private:
  struct Entry;
  LtGemm(const CublasLtApi& api, cublasLtHandle_t handle, DevicePtr workspace,
         std::size_t workspace_bytes);
  // The cached entry for p (built on first use); its status says why it cannot run.
  Entry& entry_for(const GemmProblem& p, DevicePtr bias, ScalePointers scales);
  Status build(Entry& e, const GemmProblem& p, DevicePtr bias, ScalePointers scales);
  Status choose_algorithm(Entry& e);

  const CublasLtApi& api_;
  cublasLtHandle_t handle_;
  DevicePtr workspace_;
  std::size_t workspace_bytes_;
  std::map<std::string, std::unique_ptr<Entry>> cache_;
};

}  // namespace tilesmith::cuda
