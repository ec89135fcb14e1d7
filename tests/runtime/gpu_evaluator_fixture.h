#pragma once
// The GPU evaluator shared by the GPU tests of tests/runtime (label gpu): the first backend
// with a device, opened once per test suite, and the helpers that build problems and
// configs for it. A suite without a GPU is skipped with the reason. Built with
// TILESMITH_GPU_TEST_CONFIGS_ONLY the evaluator is config_check_evaluator.h's instead: the
// same tests check their configs without a GPU.

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "registry/template_library.h"
#include "runtime/backend.h"
#include "runtime/gpu_evaluator.h"
#ifdef TILESMITH_GPU_TEST_CONFIGS_ONLY
#include "tests/runtime/config_check_evaluator.h"
#endif
#include "tests/problem_maker.h"
#include "tests/template_config.h"

namespace tilesmith::gpu_test {

using testing::config_with;  // t's defaults with the given parameters set

#ifdef TILESMITH_GPU_TEST_CONFIGS_ONLY
using TestEvaluator = ConfigCheckEvaluator;
#else
using TestEvaluator = GpuEvaluator;
#endif

class GpuEvaluatorTest : public ::testing::Test {
 public:
  // The embedded templates, loaded once for every test (and the helpers outside a test).
  static const TemplateLibrary& library() {
    static const TemplateLibrary lib = std::move(TemplateLibrary::embedded()).value();
    return lib;
  }

 protected:
  static void SetUpTestSuite() {
#ifdef TILESMITH_GPU_TEST_CONFIGS_ONLY
    evaluator_ = std::make_unique<ConfigCheckEvaluator>();
#else
    for (const char* name : {"cuda", "hip"}) {
      auto b = std::move(make_backend(name)).value();
      auto devs = b->devices();
      if (!devs.ok()) {
        why_ += std::string(name) + ": " + devs.status().message() + "; ";
        continue;
      }
      GpuEvaluatorOptions o;
      o.timing.max_sampling_ms = 300;
      auto ev = GpuEvaluator::open(*b, 0, o);
      if (!ev.ok()) {
        why_ += ev.status().message();
        continue;
      }
      backend_ = std::move(b);
      evaluator_ = std::move(ev).value();
      break;
    }
#endif
  }
  static void TearDownTestSuite() {
    evaluator_.reset();
    backend_.reset();
  }
  void SetUp() override {
    if (!evaluator_) GTEST_SKIP() << "no GPU: " << why_;
  }
  static GemmProblem make(std::int64_t m, std::int64_t n, std::int64_t k, const char* layout = "NN") {
    return testing::make_problem(m, n, k, layout);
  }
  // The i-th shape off the large tiles (520 or 1000 rows, 776 or 1000 columns, K 1000 or
  // 1032), varied as varied_half_problem: for the large-tile config tests.
  static GemmProblem off_tile_half_problem(int i, const char* layout) {
    return varied_half_problem(i % 2 ? 1000 : 520, i % 3 ? 776 : 1000, i % 2 ? 1000 : 1032, layout, i);
  }
  // Problem i of an FP8 test (NT, the layout FP8 matrix instructions read): A and B types from
  // the four pairs (each type alone, both mixes) by i / 2, unscaled or per-tensor (scales 1/16
  // and 3) by i, C in bf16, fp32 or fp16, alpha -1.5 every fourth; epilogue and beta are the caller's.
  static GemmProblem varied_fp8_problem(std::int64_t m, std::int64_t n, std::int64_t k, int i) {
    static constexpr std::pair<DType, DType> kTypes[] = {{DType::kE4M3, DType::kE4M3},
                                                         {DType::kE5M2, DType::kE5M2},
                                                         {DType::kE4M3, DType::kE5M2},
                                                         {DType::kE5M2, DType::kE4M3}};
    static constexpr DType kCTypes[] = {DType::kBF16, DType::kF32, DType::kF16};
    GemmProblem p = make(m, n, k, "NT");
    p.a_type = kTypes[(i / 2) % 4].first;
    p.b_type = kTypes[(i / 2) % 4].second;
    p.c_type = kCTypes[i % 3];
    if (i % 2) {
      p.scaling = Scaling::kPerTensor;
      p.scale_a = 0.0625;
      p.scale_b = 3.0;
    }
    p.alpha = i % 4 == 1 ? -1.5 : 1.0;
    return p;
  }
  // Problem i of a config test: fp16 or bf16 in, C in fp32 or the input type, row- or
  // column-major, beta 0 or 0.5, cycling with i.
  static GemmProblem varied_half_problem(std::int64_t m, std::int64_t n, std::int64_t k, const char* layout, int i) {
    GemmProblem p = make(m, n, k, layout);
    p.a_type = p.b_type = i % 2 ? DType::kF16 : DType::kBF16;
    p.c_type = i % 3 == 0 ? DType::kF32 : p.a_type;
    p.c_layout = i % 5 == 4 ? Layout::kColMajor : Layout::kRowMajor;
    p.beta = i % 7 == 3 ? 0.5 : 0.0;
    return p;
  }
  // gemm_stream's FP8 decode problems (with `scaling`, or varied_fp8_problem's own where none):
  // M from 1 to 16, N 1000 or 2056 (off the warp tiles and the 128-row blocks), K 2000, 1040 or
  // 2064 (off the 64-deep steps and the 128-deep blocks), every type pair and C type, both C
  // layouts, beta and the epilogues. Each evaluates on every config of `configs` t's rules allow
  // for it; returns how many did.
  static int expect_stream_fp8_validates(const KernelTemplate& t, const std::vector<Config>& configs,
                                         std::optional<Scaling> scaling = std::nullopt) {
    const Epilogue epilogues[] = {Epilogue::kNone, Epilogue::kBiasRow, Epilogue::kGelu, Epilogue::kBiasCol,
                                  Epilogue::kBiasGelu};
    const std::int64_t ms[] = {1, 5, 16, 12, 9, 16, 8, 3};
    int tried = 0;
    for (int i = 0; i < 8; ++i) {
      GemmProblem p = varied_fp8_problem(ms[i], i % 2 ? 2056 : 1000, i % 3 == 0 ? 2000 : 1040 + 1024 * (i % 2), i);
      if (scaling) {
        p.scaling = *scaling;
        p.scale_a = p.scale_b = 1.0;
      }
      p.c_layout = i % 4 == 3 ? Layout::kColMajor : Layout::kRowMajor;
      p.beta = i % 5 == 2 ? 0.5 : 0.0;
      p.epilogue = epilogues[i % 5];
      EXPECT_TRUE(p.validate().ok()) << p.describe() << ": " << p.validate().message();
      for (const Config& c : configs) {
        if (!t.space().validate(c, t.context(p, &evaluator_->device())).ok()) continue;
        ++tried;
        Evaluation e = evaluator_->evaluate(t, p, c);
        EXPECT_EQ(e.outcome, Outcome::kOk) << p.describe() << " " << config_to_json_text(c) << ": "
                                           << outcome_name(e.outcome) << " " << e.message;
      }
    }
    return tried;
  }
  // c is a valid config of t for p, and validates on the GPU.
  static void expect_valid_and_validated(const KernelTemplate& t, const GemmProblem& p, const Config& c) {
    Status valid = t.space().validate(c, t.context(p, &evaluator_->device()));
    ASSERT_TRUE(valid.ok()) << p.describe() << " " << config_to_json_text(c) << ": " << valid.message();
    Evaluation e = evaluator_->evaluate(t, p, c);
    EXPECT_EQ(e.outcome, Outcome::kOk) << p.describe() << " " << config_to_json_text(c) << ": "
                                       << outcome_name(e.outcome) << " " << e.message;
  }
  // The fp32 wgmma templates' problems: six shapes off the tiles in the given layouts, then
  // the two given; beta 0.5 on the third, GELU into a column-major C on the fourth, alpha -1.5
  // and a row bias on the fifth.
  static std::vector<GemmProblem> fp32_wgmma_problems(const std::array<const char*, 6>& layouts, GemmProblem seventh,
                                                      GemmProblem eighth) {
    std::vector<GemmProblem> p = {make(1000, 996, 1004, layouts[0]), make(16, 4096, 4096, layouts[1]),
                                  make(300, 260, 1024, layouts[2]),  make(128, 512, 2048, layouts[3]),
                                  make(72, 200, 36, layouts[4]),     make(516, 384, 640, layouts[5]),
                                  seventh,                           eighth};
    p[2].beta = 0.5;
    p[3].epilogue = Epilogue::kGelu;
    p[3].c_layout = Layout::kColMajor;
    p[4].alpha = -1.5;
    p[4].epilogue = Epilogue::kBiasRow;
    return p;
  }
  // Evaluates 8 random valid configs of t per problem (drawn with `seed`), handing each
  // problem, config and evaluation to check.
  template <typename Check>
  static void sample_configs(const KernelTemplate& t, const std::vector<GemmProblem>& problems, std::uint64_t seed,
                             Check check) {
    std::mt19937_64 rng(seed);
    for (const auto& p : problems) {
      auto valid = t.space().enumerate_valid(t.context(p, &evaluator_->device()));
      ASSERT_FALSE(valid.empty()) << p.describe();
      for (int i = 0; i < 8; ++i) {
        Config c = t.space().to_config(valid[rng() % valid.size()]);
        check(p, c, evaluator_->evaluate(t, p, c));
      }
    }
  }
  static const KernelTemplate& tiled() { return *library().find("gemm_tiled"); }
  // Samples 8 valid configs per problem (default problems: odd shapes, every layout, beta,
  // column-major C, an epilogue).
  static void sample_family(const std::string& name, std::vector<GemmProblem> problems = {});
  static inline std::unique_ptr<Backend> backend_;
  static inline std::unique_ptr<TestEvaluator> evaluator_;
  static inline std::string why_;
};

}  // namespace tilesmith::gpu_test
