#pragma once
// The one exception type of the GPU wrappers. It keeps the raw code, the call's text
// and where it was made; `sticky` says the context is poisoned for good (illegal
// address, launch failure, ...), so the process must not use this device again.

#include <stdexcept>
#include <string>

namespace tilesmith {

class GpuError : public std::runtime_error {
 public:
  GpuError(std::string backend, int code, std::string code_name, std::string call, const char* file,
           int line, bool sticky, std::string detail = {}, bool resource = false);
  int code() const { return code_; }
  const std::string& code_name() const { return code_name_; }
  const std::string& call() const { return call_; }
  bool sticky() const { return sticky_; }
  // The launch asked for more than the kernel or device can give (registers, threads,
  // shared memory): a resource_error, not a fault.
  bool resource() const { return resource_; }

 private:
  int code_;
  std::string code_name_, call_;
  bool sticky_;
  bool resource_;
};

}  // namespace tilesmith
