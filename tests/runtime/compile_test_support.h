// Helpers of the compile tests (compile_test.cpp, compile_hopper_test.cpp): real NVRTC and
// hipRTC compilers where the machine has them, problems, and the Hopper schedules' checks.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <utility>

#include "registry/template_library.h"
#include "runtime/backend.h"
#include "runtime/candidate_compiler.h"

namespace tilesmith::compile_test {

// The backend's compiler, or nullptr where this machine has none.
inline std::shared_ptr<Compiler> compiler_or_skip(const char* backend) {
  auto b = make_backend(backend);
  auto c = (*b)->compiler();
  if (!c.ok()) return nullptr;
  return *c;
}

#define REQUIRE_COMPILER(var, backend)                                                  \
  auto var = compiler_or_skip(backend);                                                 \
  if (!var) GTEST_SKIP() << backend << " compiler unavailable: "                        \
                         << (*make_backend(backend))->compiler().status().message()

inline GemmProblem square(std::int64_t n) {
  GemmProblem p;
  p.m = p.n = p.k = n;
  return p;
}

// An H100/H200 (132 SMs) and an all-bf16 problem of M x 4096 x 4096, for the gemm_tma_half tests.
inline DeviceFacts hopper_facts() {
  DeviceFacts dev = nominal_facts_for_arch("sm_90");
  dev.multiprocessors = 132;
  return dev;
}
inline GemmProblem bf16_problem(std::int64_t m, const char* layout) {
  GemmProblem p = square(4096);
  p.m = m;
  p.a_type = p.b_type = p.c_type = DType::kBF16;
  EXPECT_TRUE(apply_layout_code(layout, p).ok());
  return p;
}

// c is a valid config of t for p, and compiles under NVRTC without spilling (and, on Hopper,
// without ptxas serialising the wgmma groups it cannot prove independent of other code).
inline void expect_valid_and_compiled(Compiler& nvrtc, const KernelTemplate& t, const GemmProblem& p,
                                      const Config& c, const DeviceFacts& dev) {
  const Status valid = t.space().validate(c, t.context(p, &dev));
  ASSERT_TRUE(valid.ok()) << valid.message();
  auto cc = compile_candidate(nvrtc, t, p, c, dev);
  EXPECT_EQ(cc.evaluation.outcome, Outcome::kOk) << cc.evaluation.message << "\n" << cc.compiled.log;
  EXPECT_EQ(cc.evaluation.resources.spill_store_bytes, 0) << config_to_json_text(c) << " " << scaling_name(p.scaling) << " " << epilogue_name(p.epilogue);
  EXPECT_EQ(cc.compiled.log.find("serialized"), std::string::npos)
      << config_to_json_text(c) << " " << scaling_name(p.scaling) << "\n" << cc.compiled.log;
}
// c with the given parameters set.
inline Config changed(Config c, std::initializer_list<std::pair<const char*, int>> changes) {
  for (auto [name, value] : changes) c[name] = value;
  return c;
}
// Each of these one-parameter changes of c is refused by t's rules for p.
inline void expect_changes_refused(const KernelTemplate& t, const GemmProblem& p, const DeviceFacts& dev,
                                   const Config& c, std::initializer_list<std::pair<const char*, int>> changes) {
  for (auto [name, value] : changes) {
    Config bad = c;
    bad[name] = value;
    EXPECT_FALSE(t.space().validate(bad, t.context(p, &dev)).ok()) << name << " " << value;
  }
}

}  // namespace tilesmith::compile_test
