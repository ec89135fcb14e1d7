// Real NVRTC and hipRTC compiles on a machine without a GPU: every template compiles
// with its defaults for sm_90 and gfx90a, sampled configs compile, errors come back as
// results with the log, known-crashing targets are refused, and the cache works. The
// Hopper schedules' own compiles and rules are in compile_hopper_test.cpp.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "registry/template_library.h"
#include "runtime/backend.h"
#include "runtime/candidate_compiler.h"
#include "runtime/compile_cache.h"
#include "tests/runtime/compile_test_support.h"
#include "tests/runtime/known_compiles.h"
#include "tests/template_config.h"

namespace tilesmith {
namespace {

using namespace compile_test;

// Whether t claims a layout with A stored as `a`.
bool claims_a_layout(const KernelTemplate& t, Layout a) {
  for (const std::string& code : t.layouts())
    if ((code[0] == 'N') == (a == Layout::kRowMajor)) return true;
  return false;
}

// An n-sized problem the template serves on `dev`: square, or with M = 16 for templates
// made for small M, in the template's first input type and the first layout it claims with
// A stored as `a`.
GemmProblem served(const KernelTemplate& t, std::int64_t n, const DeviceFacts& dev, Layout a = Layout::kRowMajor,
                   std::int64_t k = 0) {
  for (std::int64_t m : {n, std::int64_t(16)})
    for (const std::string& code : t.layouts()) {
      GemmProblem p = square(n);
      p.m = m;
      if (k) p.k = k;
      EXPECT_TRUE(apply_layout_code(code, p).ok()) << code;
      if (p.a_layout != a) continue;
      p.a_type = p.b_type = p.c_type = *parse_dtype(t.dtypes().front());
      if (t.can_serve(p, dev).ok()) return p;
    }
  ADD_FAILURE() << t.name() << " serves neither " << n << "^3 nor 16x" << n << "x" << n << " on " << dev.arch;
  return square(n);
}

// Templates that read their operands through tensor maps (TMA) serve NVIDIA sm_90 only.
bool tma_only_elsewhere(const KernelTemplate& t, const DeviceFacts& dev) {
  return !t.tensor_maps().empty() && dev.arch != "sm_90";
}

TEST(Compile, EveryTemplateCompilesWithDefaultsForSm90) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto lib = TemplateLibrary::embedded();
  for (const auto& t : lib->templates()) {
    DeviceFacts dev = nominal_facts_for_arch("sm_90");
    auto cc = compile_candidate(*nvrtc, t, served(t, 1024, dev), t.defaults(), dev);
    EXPECT_EQ(cc.evaluation.outcome, Outcome::kOk) << t.name() << ": " << cc.evaluation.message;
    EXPECT_FALSE(cc.compiled.binary.empty());
    EXPECT_GT(cc.evaluation.resources.registers, 0) << "ptxas report not parsed:\n" << cc.compiled.log;
    EXPECT_EQ(cc.evaluation.resources.spill_store_bytes, 0);
  }
}

// The PTX comes back only when asked for (autotune-loop compile --ptx), and never from the cache.
TEST(Compile, PtxComesBackWhenAskedFor) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate* t = lib->find("gemm_tiled");
  ASSERT_NE(t, nullptr);
  DeviceFacts dev = nominal_facts_for_arch("sm_80");
  auto plain = compile_candidate(*nvrtc, *t, square(256), t->defaults(), dev);
  ASSERT_EQ(plain.evaluation.outcome, Outcome::kOk) << plain.evaluation.message;
  EXPECT_TRUE(plain.compiled.ptx.empty());
  auto with_ptx = compile_candidate(*nvrtc, *t, square(256), t->defaults(), dev, CompileOutput::kBinaryAndPtx);
  ASSERT_EQ(with_ptx.evaluation.outcome, Outcome::kOk) << with_ptx.evaluation.message;
  EXPECT_NE(with_ptx.compiled.ptx.find(".target sm_80"), std::string::npos) << with_ptx.compiled.ptx.substr(0, 400);
  EXPECT_NE(with_ptx.compiled.ptx.find(".entry gemm_tiled("), std::string::npos);
  EXPECT_EQ(with_ptx.compiled.binary, plain.compiled.binary);

  const auto dir = std::filesystem::temp_directory_path() / ("ts_ptx_cache_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  CompileCache cache(nvrtc, dir, CompileCache::kDefaultMaxBytes);
  compile_candidate(cache, *t, square(256), t->defaults(), dev);  // fills the cache
  auto again = compile_candidate(cache, *t, square(256), t->defaults(), dev, CompileOutput::kBinaryAndPtx);
  EXPECT_FALSE(again.compiled.cache_hit);
  EXPECT_FALSE(again.compiled.ptx.empty());
  // The PTX alone passes the cache by too, and leaves its binary as it was.
  auto ptx_only = compile_candidate(cache, *t, square(256), t->defaults(), dev, CompileOutput::kPtxOnly);
  EXPECT_FALSE(ptx_only.compiled.cache_hit);
  EXPECT_TRUE(ptx_only.compiled.binary.empty());
  auto hit = compile_candidate(cache, *t, square(256), t->defaults(), dev);
  EXPECT_TRUE(hit.compiled.cache_hit);
  EXPECT_EQ(hit.compiled.binary, plain.compiled.binary);
  std::filesystem::remove_all(dir);
}

TEST(Compile, EveryTemplateCompilesForGfx90aWithTheWavefrontPath) {
  REQUIRE_COMPILER(hiprtc, "hip");
  auto lib = TemplateLibrary::embedded();
  DeviceFacts amd = nominal_facts_for_arch("gfx90a");
  for (const auto& t : lib->templates()) {
    if (tma_only_elsewhere(t, amd)) continue;
    // The defaults must be valid for a 64-wide wavefront too.
    auto cc = compile_candidate(*hiprtc, t, served(t, 1024, amd), t.defaults(), amd);
    EXPECT_EQ(cc.evaluation.outcome, Outcome::kOk) << t.name() << ": " << cc.evaluation.message << "\n"
                                                   << cc.compiled.log;
    EXPECT_FALSE(cc.compiled.binary.empty());
  }
}

TEST(Compile, SampledValidConfigsCompileOnBothCompilers) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto hiprtc = compiler_or_skip("hip");
  auto lib = TemplateLibrary::embedded();
  KnownCompiles known("SampledValidConfigsCompileOnBothCompilers");
  for (const auto& t : lib->templates())
  for (const char* arch : {"sm_90", "gfx90a"}) {
    if (arch[0] == 'g' && !hiprtc) continue;
    Compiler& c = arch[0] == 's' ? *nvrtc : *hiprtc;
    DeviceFacts dev = nominal_facts_for_arch(arch);
    if (tma_only_elsewhere(t, dev)) continue;
    const GemmProblem p = served(t, 2048, dev);
    auto valid = t.space().enumerate_valid(t.context(p, &dev));
    ASSERT_GT(valid.size(), 10u);
    std::mt19937_64 rng(7);
    for (int i = 0; i < 3; ++i) {
      Config cfg = t.space().to_config(valid[rng() % valid.size()]);
      auto cc = known.compile(c, t, p, cfg, dev);
      EXPECT_EQ(cc.evaluation.outcome, Outcome::kOk) << arch << " " << config_to_json_text(cfg) << ": "
                                                     << cc.evaluation.message;
    }
  }
}

// Leading dimensions that are not multiples of 4 take the narrow-copy paths (VEC 1), which
// a square problem never samples; A in both layouts, on both compilers.
TEST(Compile, OddLeadingDimensionsCompileOnBothCompilers) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto hiprtc = compiler_or_skip("hip");
  auto lib = TemplateLibrary::embedded();
  KnownCompiles known("OddLeadingDimensionsCompileOnBothCompilers");
  for (const auto& t : lib->templates())
    for (const char* arch : {"sm_90", "gfx90a"})
      for (Layout a : {Layout::kRowMajor, Layout::kColMajor}) {
        if (arch[0] == 'g' && !hiprtc) continue;
        Compiler& c = arch[0] == 's' ? *nvrtc : *hiprtc;
        DeviceFacts dev = nominal_facts_for_arch(arch);
        if (tma_only_elsewhere(t, dev) || !claims_a_layout(t, a)) continue;
        // 999 or 16 rows, 999 columns, K 1001, in the first layout the template claims with this A.
        GemmProblem odd;
        Status serves = Status::ok_status();
        std::string why;  // every refusal
        for (std::int64_t m : {std::int64_t(1000), std::int64_t(16)}) {
          for (const std::string& code : t.layouts()) {
            odd = square(999);
            odd.m = m;
            odd.k = 1001;
            EXPECT_TRUE(apply_layout_code(code, odd).ok());
            odd.a_type = odd.b_type = odd.c_type = *parse_dtype(t.dtypes().front());
            if (odd.a_layout != a) continue;
            serves = t.can_serve(odd, dev);
            why += serves.message() + "\n";
            break;
          }
          if (serves.ok()) break;
        }
        if (!t.tensor_maps().empty()) {
          EXPECT_FALSE(serves.ok()) << t.name() << " " << odd.describe();
        }
        if (!serves.ok()) {
          // TMA cannot describe rows 1998 or 2002 bytes apart, and gemm_stream loads whole 16-byte
          // pieces of every row: refused before compiling, naming the alignment rule.
          EXPECT_TRUE(why.find("% 16 == 0") != std::string::npos || why.find("% 8 == 0") != std::string::npos)
              << t.name() << ": " << why;
          continue;
        }
        auto valid = t.space().enumerate_valid(t.context(odd, &dev));
        ASSERT_FALSE(valid.empty()) << t.name() << " " << arch << " " << odd.describe();
        std::mt19937_64 rng(11);
        Config cfg = t.space().to_config(valid[rng() % valid.size()]);
        auto cc = known.compile(c, t, odd, cfg, dev);
        EXPECT_EQ(cc.evaluation.outcome, Outcome::kOk) << arch << " " << odd.describe() << " "
                                                       << config_to_json_text(cfg) << ": " << cc.evaluation.message;
      }
}

// A template compiled for one architecture's own NVIDIA target (nvidia_arch_suffix, such as
// gemm_wgmma_half's sm_90a) serves no other NVIDIA GPU: such a pair is skipped, not failed.
bool arch_specific_elsewhere(const KernelTemplate& t, const DeviceFacts& dev) {
  if (dev.backend != "cuda" || t.nvidia_arch_suffix().empty()) return false;
  for (std::int64_t m : {std::int64_t(512), std::int64_t(16)}) {
    GemmProblem p = square(512);
    p.m = m;
    p.a_type = p.b_type = p.c_type = *parse_dtype(t.dtypes().front());
    if (t.can_serve(p, dev).ok()) return false;
  }
  return true;
}

// Templates that serve half precision compile for every input type x C type they claim, in
// every layout, on sm_80 and sm_90 (NVRTC) and gfx90a (hipRTC: the CDNA MFMA path, which
// no GPU here runs); an sm_90a template only on sm_90 and gfx90a.
TEST(Compile, HalfPrecisionTemplatesCompileForEveryTypeTheyClaim) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto hiprtc = compiler_or_skip("hip");
  auto lib = TemplateLibrary::embedded();
  KnownCompiles known("HalfPrecisionTemplatesCompileForEveryTypeTheyClaim");
  int compiled = 0;
  for (const auto& t : lib->templates()) {
    if (t.dtypes() == std::vector<std::string>{"fp32"}) continue;
    std::vector<std::string> c_types = t.c_dtypes();
    int i = 0;
    for (const char* arch : {"sm_80", "sm_90", "gfx90a"}) {
      if (arch[0] == 'g' && !hiprtc) continue;
      Compiler& c = arch[0] == 's' ? *nvrtc : *hiprtc;
      DeviceFacts dev = nominal_facts_for_arch(arch);
      if (arch_specific_elsewhere(t, dev) || tma_only_elsewhere(t, dev)) continue;
      for (const std::string& in : t.dtypes())
        for (const std::string& layout : t.layouts()) {
          // 8-bit inputs are read K-major only (the wgmma forms for FP8): NT; FP8 matrix
          // instructions need sm_89+ (and are NVIDIA's OCP formats only).
          const bool fp8 = dtype_is_fp8(*parse_dtype(in));
          if (fp8 && (layout != "NT" || std::string(arch) != "sm_90")) continue;
          GemmProblem p = served(t, 512, dev);
          if (fp8) p.k = 4096;  // whole 64-deep steps for every K warp of gemm_stream's defaults
          ASSERT_TRUE(apply_layout_code(layout, p).ok());
          p.a_type = p.b_type = *parse_dtype(in);
          p.c_type = c_types.empty() ? p.a_type : *parse_dtype(c_types[i++ % c_types.size()]);
          auto cc = known.compile(c, t, p, t.defaults(), dev);
          EXPECT_EQ(cc.evaluation.outcome, Outcome::kOk) << t.name() << " " << arch << " " << p.describe() << ": "
                                                         << cc.evaluation.message << "\n" << cc.compiled.log;
          compiled += cc.evaluation.outcome == Outcome::kOk;
        }
    }
  }
  std::printf("%d half-precision candidates compile\n", compiled);
  EXPECT_GE(compiled, 2 * 4 * 3) << "gemm_hmma: two input types, four layouts, sm_80, sm_90 and gfx90a";
}


TEST(Compile, ErrorsAreResultsWithTheLogVerbatim) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  CompileRequest req{"broken.hip", "extern \"C\" __global__ void broken(float* x) { x[0] = undefined_name; }\n", {},
                     "sm_90", "broken"};
  CompileResult r = nvrtc->compile(req);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("undefined_name"), std::string::npos) << r.log;
  EXPECT_NE(compile_log_excerpt(r.log).find("error"), std::string::npos);
  EXPECT_FALSE(nvrtc->check_target("gfx90a").ok());
}

TEST(Compile, TargetsKnownToCrashHipRtcAreRefusedUpFront) {
  REQUIRE_COMPILER(hiprtc, "hip");
  // Asking this hipRTC (ROCm 5.2) for gfx942 would abort the process; it must be refused.
  CompileRequest req{"k.hip", "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n", {}, "gfx942", "k"};
  CompileResult r = hiprtc->compile(req);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("known to crash"), std::string::npos) << r.log;
  EXPECT_TRUE(hiprtc->check_target("gfx90a").ok());
}

TEST(CompileCache, HitsMissesAndStaysWithinItsBound) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto dir = std::filesystem::temp_directory_path() / ("ts_cache_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_tiled");
  DeviceFacts dev = nominal_facts_for_arch("sm_90");
  {
    CompileCache cache(nvrtc, dir, CompileCache::kDefaultMaxBytes);
    auto first = compile_candidate(cache, t, square(512), t.defaults(), dev);
    auto second = compile_candidate(cache, t, square(512), t.defaults(), dev);
    ASSERT_EQ(first.evaluation.outcome, Outcome::kOk);
    EXPECT_FALSE(first.compiled.cache_hit);
    EXPECT_TRUE(second.compiled.cache_hit);
    EXPECT_EQ(first.compiled.binary, second.compiled.binary);
    EXPECT_EQ(first.evaluation.resources.registers, second.evaluation.resources.registers);
    // Another problem layout is another source macro: another key.
    GemmProblem tn = square(512);
    ASSERT_TRUE(apply_layout_code("TN", tn).ok());
    EXPECT_FALSE(compile_candidate(cache, t, tn, t.defaults(), dev).compiled.cache_hit);
  }
  {
    // A bound smaller than two entries keeps at most one.
    CompileCache tiny(nvrtc, dir, 20 * 1024);
    tiny.evict();
    std::uint64_t total = 0;
    for (auto& e : std::filesystem::directory_iterator(dir)) total += std::filesystem::file_size(e.path());
    EXPECT_LE(total, 20u * 1024);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tilesmith
