#include "runtime/backend.h"

namespace tilesmith {
namespace {

// Stands in for a vendor whose headers were missing at build time.
class UnbuiltBackend final : public Backend {
 public:
  UnbuiltBackend(std::string name, std::string why) : name_(std::move(name)), why_(std::move(why)) {}
  std::string name() const override { return name_; }
  Result<std::vector<DeviceFacts>> devices() override { return Status::unavailable(why_); }
  Result<std::shared_ptr<Compiler>> compiler() override { return Status::unavailable(why_); }
  Result<std::unique_ptr<GpuDevice>> open_device(int) override { return Status::unavailable(why_); }

 private:
  std::string name_, why_;
};

}  // namespace

#if !TILESMITH_HAVE_CUDA
std::unique_ptr<Backend> make_cuda_backend() {
  return std::make_unique<UnbuiltBackend>("cuda", "this build has no CUDA support (the CUDA toolkit was not found at build time)");
}
#endif
#if !TILESMITH_HAVE_HIP
std::unique_ptr<Backend> make_hip_backend() {
  return std::make_unique<UnbuiltBackend>("hip", "this build has no HIP support (HIP headers were not found at build time)");
}
#endif

Result<std::unique_ptr<Backend>> make_backend(const std::string& name) {
  if (name == "cuda") return make_cuda_backend();
  if (name == "hip") return make_hip_backend();
  return Status::invalid("unknown backend '" + name + "' (expected cuda, hip or replay)");
}

}  // namespace tilesmith
