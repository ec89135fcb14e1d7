// The fault-injection templates compile like any other (NVRTC sm_90, hipRTC gfx90a),
// on a machine without a GPU, so the gpu tests fail only for the faults they inject.

#include <gtest/gtest.h>

#include "registry/template_library.h"
#include "runtime/backend.h"
#include "runtime/candidate_compiler.h"
#include "tests/test_paths.h"

namespace tilesmith {
namespace {

std::shared_ptr<Compiler> compiler_or_null(const char* backend) {
  auto b = make_backend(backend);
  if (!b.ok()) return nullptr;
  auto c = (*b)->compiler();
  return c.ok() ? *c : nullptr;
}

void compile_every_fault(const char* backend, const char* arch) {
  auto compiler = compiler_or_null(backend);
  if (!compiler) GTEST_SKIP() << backend << " compiler unavailable";
  auto lib = TemplateLibrary::from_directory(testing::test_kernels_dir());
  ASSERT_TRUE(lib.ok()) << lib.status().to_string();
  const KernelTemplate* gpu = lib->find("fault_gpu");
  const KernelTemplate* process = lib->find("fault_process");
  ASSERT_NE(gpu, nullptr);
  ASSERT_NE(process, nullptr);
  GemmProblem p;
  p.m = p.n = p.k = 256;
  DeviceFacts dev = nominal_facts_for_arch(arch);
  for (int fault = 0; fault <= 5; ++fault) {
    Config c = gpu->defaults();
    c["FAULT"] = fault;
    auto cc = compile_candidate(*compiler, *gpu, p, c, dev);
    EXPECT_EQ(cc.evaluation.outcome, Outcome::kOk)
        << arch << " FAULT=" << fault << ": " << cc.evaluation.message << "\n"
        << cc.compiled.log;
    EXPECT_FALSE(cc.compiled.binary.empty());
    if (fault == 5) {
      EXPECT_EQ(cc.rendered.dynamic_shared_bytes, 1u << 20);
    }
  }
  auto cc = compile_candidate(*compiler, *process, p, process->defaults(), dev);
  EXPECT_EQ(cc.evaluation.outcome, Outcome::kOk) << cc.evaluation.message << "\n"
                                                 << cc.compiled.log;
}

TEST(WorkerFaultKernels, CompileWithNvrtcForSm90) { compile_every_fault("cuda", "sm_90"); }
TEST(WorkerFaultKernels, CompileWithHipRtcForGfx90a) { compile_every_fault("hip", "gfx90a"); }

}  // namespace
}  // namespace tilesmith
