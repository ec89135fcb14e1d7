#pragma once
// A stand-in for the GPU evaluator that checks what can be checked without a GPU: every config
// a GPU test hands it is valid for its problem on a 132-SM sm_90 (an H100/H200) and renders.
// gpu_tma_half_configs_test builds gpu_tma_half_test.cpp against it, so that a change to the
// template's rules that leaves a GPU test with a config the space now refuses fails here, in
// every test run, rather than on the next device call. Nothing is compiled, run or timed.

#include "registry/template_library.h"
#include "runtime/evaluation.h"
#include "tests/runtime/compile_test_support.h"

namespace tilesmith::gpu_test {

class ConfigCheckEvaluator {
 public:
  ConfigCheckEvaluator() : device_(compile_test::hopper_facts()) {}
  const DeviceFacts& device() const { return device_; }
  // kOk where c is valid for p and renders; kInvalid with the reason otherwise.
  Evaluation evaluate(const KernelTemplate& t, const GemmProblem& p, const Config& c) const {
    Evaluation e;
    const Status valid = t.space().validate(c, t.context(p, &device_));
    if (!valid.ok()) {
      e.message = valid.message();
      return e;
    }
    auto rendered = t.render(p, c, device_);
    if (!rendered.ok()) {
      e.message = rendered.status().message();
      return e;
    }
    e.outcome = Outcome::kOk;
    return e;
  }

 private:
  DeviceFacts device_;
};

}  // namespace tilesmith::gpu_test
