// The evaluator on a real GPU (label gpu; skipped with the reason where there is none):
// correct kernels pass in every layout, odd shapes, beta and epilogues; a kernel that
// skips a tile or a K slice is caught as wrong_result; a timing repeats within its
// spread; the vendor baseline validates.

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <random>

#include "registry/template_library.h"
#include "runtime/gpu_evaluator.h"
#include "tests/runtime/gpu_evaluator_fixture.h"
#include "tests/test_paths.h"

namespace tilesmith::gpu_test {


TEST_F(GpuEvaluatorTest, TiledKernelPassesInEveryLayoutAndOddShape) {
  Config c{{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"BLOCK_K", 16}, {"THREAD_M", 4}, {"THREAD_N", 8}};
  for (const char* layout : {"NN", "NT", "TN", "TT"}) {
    for (auto p : {make(1000, 999, 1001, layout), make(1, 1, 1, layout), make(17, 300, 5, layout)}) {
      Evaluation e = evaluator_->evaluate(tiled(), p, c);
      EXPECT_EQ(e.outcome, Outcome::kOk) << p.describe() << ": " << e.message;
      EXPECT_TRUE(e.accuracy.checked);
      EXPECT_GT(e.timing.samples, 19);
    }
  }
}

TEST_F(GpuEvaluatorTest, BetaColumnMajorCAndEpiloguesValidate) {
  for (Epilogue epi : {Epilogue::kNone, Epilogue::kBiasRow, Epilogue::kBiasCol, Epilogue::kRelu, Epilogue::kLeakyRelu,
                       Epilogue::kGelu, Epilogue::kBiasGelu}) {
    GemmProblem p = make(257, 129, 300, "NT");
    p.alpha = 0.75;
    p.beta = epi == Epilogue::kNone ? 1.25 : 0.0;
    p.c_layout = epi == Epilogue::kRelu ? Layout::kColMajor : Layout::kRowMajor;
    p.epilogue = epi;
    Evaluation e = evaluator_->evaluate(tiled(), p, tiled().defaults());
    EXPECT_EQ(e.outcome, Outcome::kOk) << p.describe() << ": " << e.message;
  }
}

// In fp32 and in bf16, whose tolerance is looser (C rounded to 8 significand bits): a
// skipped K tile (16 of 640) must still be far outside it.
TEST_F(GpuEvaluatorTest, SkippedTileAndSkippedKSliceAreWrongResults) {
  auto lib = TemplateLibrary::from_directory(testing::test_kernels_dir());
  ASSERT_TRUE(lib.ok()) << lib.status().to_string();
  const KernelTemplate& faulty = *lib->find("gemm_faulty");
  for (DType type : {DType::kF32, DType::kBF16}) {
    GemmProblem p = make(512, 384, 640);
    p.a_type = p.b_type = p.c_type = type;
    Evaluation control = evaluator_->evaluate(faulty, p, {{"TILE", 16}, {"FAULT", 0}});
    EXPECT_EQ(control.outcome, Outcome::kOk) << dtype_name(type) << ": " << control.message;
    Evaluation tile = evaluator_->evaluate(faulty, p, {{"TILE", 16}, {"FAULT", 1}});
    EXPECT_EQ(tile.outcome, Outcome::kWrongResult) << dtype_name(type);
    EXPECT_EQ(tile.accuracy.non_finite, 16 * 16) << dtype_name(type) << ": " << tile.message;
    std::printf("%s skipped tile: %s\n", dtype_name(type), tile.message.c_str());
    Evaluation kslice = evaluator_->evaluate(faulty, p, {{"TILE", 16}, {"FAULT", 2}});
    EXPECT_EQ(kslice.outcome, Outcome::kWrongResult) << dtype_name(type);
    EXPECT_EQ(kslice.accuracy.non_finite, 0) << dtype_name(type);
    EXPECT_GT(kslice.accuracy.over_tolerance, 0) << dtype_name(type) << ": " << kslice.message;
    std::printf("%s skipped K slice: %s\n", dtype_name(type), kslice.message.c_str());
  }
}

TEST_F(GpuEvaluatorTest, SameConfigTimedTwiceAgreesWithinTheSpread) {
  GemmProblem p = make(2048, 2048, 2048);
  Config c{{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 8}, {"THREAD_M", 8}, {"THREAD_N", 8}};
  Evaluation a = evaluator_->evaluate(tiled(), p, c);
  Evaluation b = evaluator_->evaluate(tiled(), p, c);
  ASSERT_TRUE(a.ok() && b.ok()) << a.message << b.message;
  std::printf("run 1: median %.4f ms [p20 %.4f, p80 %.4f]; run 2: median %.4f ms [p20 %.4f, p80 %.4f]\n",
              a.timing.median_ms, a.timing.p20_ms, a.timing.p80_ms, b.timing.median_ms, b.timing.p20_ms,
              b.timing.p80_ms);
  // Each median lies within the other run's spread (widened by 1% for the coarse
  // event clock on short kernels).
  EXPECT_GE(b.timing.median_ms, a.timing.p20_ms * 0.99);
  EXPECT_LE(b.timing.median_ms, a.timing.p80_ms * 1.01);
  EXPECT_GE(a.timing.median_ms, b.timing.p20_ms * 0.99);
  EXPECT_LE(a.timing.median_ms, b.timing.p80_ms * 1.01);
  EXPECT_TRUE(b.compile_cache_hit);
}

// Racing (analysis/race.h): against a bound far under the kernel's time sampling stops
// after the first 10 samples and the evaluation says so; against a bound far above it, or
// none, the kernel is sampled in full (at least min_samples) and not marked raced.
TEST_F(GpuEvaluatorTest, ACandidateClearlySlowerThanTheBoundStopsAfterTenSamples) {
  GemmProblem p = make(2048, 2048, 2048);
  Config c{{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"BLOCK_K", 8}, {"THREAD_M", 8}, {"THREAD_N", 8}};
  Evaluation raced = evaluator_->evaluate_racing(tiled(), p, c, 1e-6);
  ASSERT_TRUE(raced.ok()) << raced.message;
  EXPECT_EQ(raced.timing.samples, 10);
  ASSERT_TRUE(raced.timing.raced_above_ms.has_value());
  EXPECT_DOUBLE_EQ(*raced.timing.raced_above_ms, 1e-6);
  EXPECT_EQ(raced.message.rfind("raced: sampling stopped after 10 samples", 0), 0u) << raced.message;
  EXPECT_GT(raced.timing.median_ms, 0);
  for (double bound : {0.0, 1e6}) {
    Evaluation full = evaluator_->evaluate_racing(tiled(), p, c, bound);
    ASSERT_TRUE(full.ok()) << full.message;
    EXPECT_GE(full.timing.samples, 20) << bound;
    EXPECT_FALSE(full.timing.raced_above_ms.has_value()) << bound;
    EXPECT_EQ(full.message.find("raced"), std::string::npos) << full.message;
  }
}

TEST_F(GpuEvaluatorTest, VendorBaselineValidatesAndTimes) {
  for (const char* layout : {"NN", "TN"}) {
    auto v = evaluator_->vendor_baseline(make(1000, 999, 1001, layout));
    ASSERT_TRUE(v.ok()) << v.status().to_string();
    EXPECT_EQ(v->outcome, Outcome::kOk) << v->message;
    EXPECT_GT(v->tflops, 0);
  }
  EXPECT_GT(evaluator_->measured_bandwidth(), 1e11);
}

// The read floor (runtime/read_floor.h) on the GPU: every plain-load variant reads every
// byte once (its check sum matches; the host test ran the same indexing on the CPU), the
// floor is a real read (below the theoretical bandwidth), and it is printed next to the
// vendor's GEMM on the same problem, timed the same way: a vendor GEMM faster than the
// floor means the sweep has not found the fastest read (printed, not failed: that is the
// measurement bench-best reports).
TEST_F(GpuEvaluatorTest, ReadFloorReadsEveryByteOnceAndIsPrintedBesideTheVendor) {
  std::vector<GemmProblem> problems;
  GemmProblem p = make(16, 4096, 4096, "NT");  // a decode GEMM: B = W^T of a [4096, 4096] weight
  p.a_type = p.b_type = p.c_type = DType::kBF16;
  problems.push_back(p);
  p = make(1, 4096, 4096, "NN");  // fp32 M = 1: the 64 MiB cuBLASLt's M = 1 kernel read in 0.0234 ms (H200)
  problems.push_back(p);
  p = make(7, 1001, 999, "NN");  // tails in every segment, and C read (beta)
  p.a_type = p.b_type = DType::kF16;
  p.c_type = DType::kF32;
  p.beta = 0.5;
  problems.push_back(p);
  for (const GemmProblem& q : problems) {
    auto f = evaluator_->read_floor(q);
    ASSERT_TRUE(f.ok()) << q.describe() << ": " << f.status().to_string();
    EXPECT_EQ(f->bytes.total(), read_floor_bytes(q).total());
    EXPECT_GT(f->timing.median_ms, 0);
    EXPECT_TRUE(f->timing.l2_flushed);
    std::printf("%s: read floor %.4f ms (%.0f GB/s, %s, %.1f MB), compiled in %.0f ms%s\n", q.describe().c_str(),
                f->timing.median_ms, f->gbps, f->variant.c_str(), double(f->bytes.total()) / 1e6, f->compile_ms,
                f->compile_cache_hit ? " (cached)" : "");
    int ok = 0;
    for (const auto& v : f->variants) {
      std::printf("  %-34s %-13s screen %.4f final %.4f %s\n", v.name.c_str(), outcome_name(v.outcome), v.screen_ms,
                  v.final_ms, v.message.c_str());
      ok += v.outcome == Outcome::kOk;
      const bool plain = v.name.find("bulk") == std::string::npos && v.name.find("_pf256") == std::string::npos &&
                         v.name.find("_evict") == std::string::npos;
      if (plain) {
        EXPECT_EQ(v.outcome, Outcome::kOk) << v.name << ": " << v.message;
      }
    }
    EXPECT_GT(ok, 0);
    const double theoretical = evaluator_->device().theoretical_bandwidth();
    if (theoretical > 0) {
      EXPECT_LT(f->gbps * 1e9, 1.05 * theoretical) << "faster than the memory: not a read";
    }
    auto v = evaluator_->vendor_baseline(q);
    if (v.ok() && v->ok())
      std::printf("  vendor %.4f ms: %s\n", v->timing.median_ms,
                  v->timing.median_ms < f->timing.median_ms ? "FASTER than the read floor (the floor is not one)"
                                                            : "slower than the read floor");
  }
  EXPECT_TRUE(evaluator_->broken_reason().empty());
}

// Random valid configs of each fast template over odd shapes, every layout, beta, a
// column-major C and an epilogue: all must validate (or be refused for resources).
void GpuEvaluatorTest::sample_family(const std::string& name, std::vector<GemmProblem> problems) {
  const KernelTemplate& t = *library().find(name);
  if (problems.empty()) {
    problems = {make(1000, 999, 1001, "NN"), make(512, 384, 640, "TN"), make(16, 4096, 4096, "NN"),
                make(300, 260, 1024, "TT"), make(128, 512, 2048, "NT")};
    problems[3].beta = 0.5;
    problems[4].epilogue = Epilogue::kGelu;
    problems[4].c_layout = Layout::kColMajor;
  }
  int ok = 0, split = 0;
  sample_configs(t, problems, 42, [&](const GemmProblem& p, const Config& c, const Evaluation& e) {
    EXPECT_TRUE(e.outcome == Outcome::kOk || e.outcome == Outcome::kResourceError)
        << name << " " << p.describe() << " " << config_to_json_text(c) << ": " << outcome_name(e.outcome) << " "
        << e.message;
    ok += e.ok();
    split += e.ok() && c.at("SPLIT_K") > 1;
  });
  const int sampled = 8 * int(problems.size());
  std::printf("%s: %d of %d sampled configs ran and validated (%d with split-K)\n", name.c_str(), ok, sampled, split);
  EXPECT_GT(ok, sampled * 3 / 4) << name;
}

TEST_F(GpuEvaluatorTest, WarpFamilyValidatesAcrossItsSpace) { sample_family("gemm_warp"); }
TEST_F(GpuEvaluatorTest, AsyncFamilyValidatesAcrossItsSpace) { sample_family("gemm_async"); }
TEST_F(GpuEvaluatorTest, MatrixUnitFamilyValidatesAcrossItsSpace) { sample_family("gemm_mma"); }
// gemm_wgmma runs on sm_90 only; odd leading dimensions (1000x999x1001, TN 517x383x639)
// take its 4-byte copies (VEC 1), the other problems its 16-byte ones.
TEST_F(GpuEvaluatorTest, WarpgroupFamilyValidatesAcrossItsSpace) {
  if (evaluator_->device().arch != "sm_90") GTEST_SKIP() << "gemm_wgmma needs sm_90, this is " << evaluator_->device().arch;
  std::vector<GemmProblem> problems =
      fp32_wgmma_problems({"NN", "NN", "TT", "NT", "NN", "TN"}, make(1000, 999, 1001, "NN"), make(517, 383, 639, "TN"));
  problems[7].epilogue = Epilogue::kBiasCol;
  sample_family("gemm_wgmma", problems);
}

// gemm_tma_tf32 (3xTF32 on TMA, warp-specialised, persistent) on sm_90: every layout (a
// column-major A through the transposing split), shapes off its tiles (edges zero-filled by
// TMA), one to several persistent laps, beta, column-major C, alpha and every epilogue. It claims no resource it cannot have, so every
// sampled config must run and validate, not three quarters.
TEST_F(GpuEvaluatorTest, TmaTf32FamilyValidatesEveryConfigItServes) {
  if (evaluator_->device().arch != "sm_90") GTEST_SKIP() << "gemm_tma_tf32 needs sm_90, this is " << evaluator_->device().arch;
  const KernelTemplate& t = *library().find("gemm_tma_tf32");
  std::vector<GemmProblem> problems =
      fp32_wgmma_problems({"NN", "NN", "TT", "NT", "TN", "NT"}, make(2052, 2044, 1000, "TN"), make(1000, 1004, 996, "TT"));
  problems[5].epilogue = Epilogue::kBiasCol;
  problems[6].epilogue = Epilogue::kLeakyRelu;
  problems[7].epilogue = Epilogue::kRelu;
  problems[7].beta = -1.0;
  problems[7].c_layout = Layout::kColMajor;
  int ok = 0, split = 0, persistent_laps = 0;
  sample_configs(t, problems, 19, [&](const GemmProblem& p, const Config& c, const Evaluation& e) {
    EXPECT_EQ(e.outcome, Outcome::kOk) << p.describe() << " " << config_to_json_text(c) << ": "
                                       << outcome_name(e.outcome) << " " << e.message;
    ok += e.ok();
    split += e.ok() && c.at("SPLIT_K") > 1;
    const std::int64_t units = ((p.m + c.at("BLOCK_M") - 1) / c.at("BLOCK_M")) *
                               ((p.n + 64 * c.at("CONSUMERS") - 1) / (64 * c.at("CONSUMERS"))) * c.at("SPLIT_K");
    persistent_laps += e.ok() && c.at("PERSISTENT") == 1 && units > evaluator_->device().multiprocessors;
  });
  std::printf("gemm_tma_tf32: %d of %zu sampled configs ran and validated (%d with split-K, %d persistent over "
              "more units than SMs)\n",
              ok, 8 * problems.size(), split, persistent_laps);
  EXPECT_GT(split, 0);
  EXPECT_GT(persistent_laps, 0);
}

// Every input type x layout x epilogue a half-precision template claims, each with a
// random valid config, C's type, C's layout and beta cycling through what it serves; one
// odd shape per problem (sizes off the tiles and, for some, odd leading dimensions).
// A template reading through tensor maps (tma_strides) may refuse exactly the problems whose
// A or B rows are not a multiple of 16 bytes apart, and must say so.
void cover_half_combinations(GpuEvaluator& ev, const std::string& name, std::int64_t m_small, bool tma_strides = false) {
  const KernelTemplate* t = GpuEvaluatorTest::library().find(name);
  ASSERT_NE(t, nullptr) << name;
  std::mt19937_64 rng(7);
  const Epilogue epilogues[] = {Epilogue::kNone, Epilogue::kBiasRow, Epilogue::kBiasCol,
                                Epilogue::kRelu, Epilogue::kLeakyRelu, Epilogue::kGelu, Epilogue::kBiasGelu};
  const DType c_types[] = {DType::kF32, DType::kF16, DType::kBF16};
  int ok = 0, tried = 0, served = 0, refused = 0, i = 0;
  for (DType in : {DType::kF16, DType::kBF16})
    for (const char* layout : {"NN", "NT", "TN", "TT"})
      for (Epilogue epi : epilogues) {
        GemmProblem p;
        p.m = i % 3 == 0 ? m_small : m_small + 3 + i % 5;
        p.n = i % 4 == 1 ? 1000 : 1024 - 8 * (i % 3);
        p.k = i % 5 == 2 ? 1001 : 768 + 8 * (i % 4);
        EXPECT_TRUE(apply_layout_code(layout, p).ok());
        p.a_type = p.b_type = in;
        p.c_type = c_types[i % 3];
        p.c_layout = i % 2 ? Layout::kColMajor : Layout::kRowMajor;
        p.alpha = i % 4 == 3 ? -1.5 : 1.0;
        p.beta = i % 6 == 1 ? 0.5 : 0.0;
        p.epilogue = epi;
        ++i;
        const bool tma_cannot = tma_strides && (p.lda() * 2 % 16 != 0 || p.ldb() * 2 % 16 != 0);
        Status serves = t->can_serve(p, ev.device());
        if (tma_cannot) {
          EXPECT_FALSE(serves.ok()) << name << " " << p.describe();
          EXPECT_NE(serves.message().find("% 16 == 0"), std::string::npos) << serves.message();
          ++refused;
          continue;
        }
        if (!serves.ok()) continue;
        ++served;
        auto valid = t->space().enumerate_valid(t->context(p, &ev.device()));
        ASSERT_FALSE(valid.empty()) << p.describe();
        Config c = t->space().to_config(valid[rng() % valid.size()]);
        Evaluation e = ev.evaluate(*t, p, c);
        ++tried;
        EXPECT_TRUE(e.outcome == Outcome::kOk || e.outcome == Outcome::kResourceError)
            << name << " " << p.describe() << " " << config_to_json_text(c) << ": " << outcome_name(e.outcome) << " "
            << e.message;
        ok += e.ok();
      }
  std::printf("%s: %d of %d type x layout x epilogue combinations served (%d refused: strides TMA cannot take); %d of %d "
              "ran and validated\n", name.c_str(), served, i, refused, ok, tried);
  EXPECT_EQ(served + refused, i) << name << " should serve every combination it claims";
  EXPECT_GT(served, i / 2) << name;
  EXPECT_GT(ok, tried * 9 / 10) << name;
}

TEST_F(GpuEvaluatorTest, HalfTensorCoreTemplateValidatesEveryTypeLayoutAndEpilogue) {
  if (evaluator_->device().backend == "cuda" && std::atoi(evaluator_->device().arch.c_str() + 3) < 80)
    GTEST_SKIP() << "gemm_hmma needs sm_80+";
  cover_half_combinations(*evaluator_, "gemm_hmma", 200);
}

// gemm_wgmma_half is compiled for sm_90a: every type x layout x epilogue it claims, then the
// configs meant for large shapes (both operand orientations of the swizzled shared layout,
// N tiles of 128/192/256, two 64-row tiles per warpgroup, both MMA_PENDING and LOADS_FIRST,
// two blocks per SM) on shapes off their tiles, with K not a multiple of 64.
TEST_F(GpuEvaluatorTest, WgmmaHalfTemplateValidatesEveryTypeLayoutAndEpilogue) {
  if (evaluator_->device().arch != "sm_90") GTEST_SKIP() << "gemm_wgmma_half needs sm_90, this is " << evaluator_->device().arch;
  cover_half_combinations(*evaluator_, "gemm_wgmma_half", 200);
}

TEST_F(GpuEvaluatorTest, WgmmaHalfLargeTileConfigsValidate) {
  if (evaluator_->device().arch != "sm_90") GTEST_SKIP() << "gemm_wgmma_half needs sm_90, this is " << evaluator_->device().arch;
  const KernelTemplate& t = *library().find("gemm_wgmma_half");
  struct Tile {
    int block_m, block_n, warpgroups, stages, pending, loads_first, min_blocks;
  };
  const Tile tiles[] = {{128, 256, 2, 4, 1, 1, 1}, {128, 256, 2, 3, 1, 0, 1}, {128, 128, 2, 4, 1, 1, 1},
                        {128, 192, 2, 4, 1, 1, 1}, {64, 256, 1, 4, 1, 0, 1},  {256, 128, 2, 4, 1, 1, 1},
                        {128, 128, 2, 3, 1, 1, 2}, {128, 128, 2, 5, 0, 0, 1}};
  int i = 0;
  for (const Tile& tile : tiles)
    for (const char* layout : {"NN", "NT", "TN", "TT"}) {
      GemmProblem p = off_tile_half_problem(i, layout);
      p.c_layout = Layout::kRowMajor;  // C as this test has always had it
      p.beta = 0.0;
      ++i;
      const Config c = config_with(t, {{"BLOCK_M", tile.block_m},
                                       {"BLOCK_N", tile.block_n},
                                       {"WARPGROUPS", tile.warpgroups},
                                       {"STAGES", tile.stages},
                                       {"MMA_PENDING", tile.pending},
                                       {"LOADS_FIRST", tile.loads_first},
                                       {"MIN_BLOCKS", tile.min_blocks}});
      Evaluation e = evaluator_->evaluate(t, p, c);
      EXPECT_EQ(e.outcome, Outcome::kOk) << p.describe() << " " << config_to_json_text(c) << ": "
                                         << outcome_name(e.outcome) << " " << e.message;
    }
}

// gemm_tma_half (TMA, warp-specialised, persistent; sm_90a): every 16-bit type x layout x
// epilogue it claims on shapes off its tiles (odd leading dimensions refused with the reason).
// Its schedules one by one, and FP8, are gpu_tma_half_test.cpp's.
TEST_F(GpuEvaluatorTest, TmaHalfTemplateValidatesEveryTypeLayoutAndEpilogue) {
  if (evaluator_->device().arch != "sm_90") GTEST_SKIP() << "gemm_tma_half needs sm_90, this is " << evaluator_->device().arch;
  cover_half_combinations(*evaluator_, "gemm_tma_half", 200, /*tma_strides=*/true);
}

// gemm_gemv on matrix-vector and skinny shapes: both walks of the large operand (r- and
// k-contiguous, i.e. every layout with M or N small), every input type, C's layout, beta and
// the epilogues, sizes off every tile and odd leading dimensions (narrow loads), several
// random valid configs each, split-K among them.
TEST_F(GpuEvaluatorTest, GemvTemplateValidatesSkinnyShapesEveryLayoutAndType) {
  const KernelTemplate& t = *library().find("gemm_gemv");
  struct Shape {
    std::int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 4096, 4096}, {8, 4096, 4096}, {4096, 1, 4096}, {16, 1000, 1001},
                          {1000, 3, 999},  {5, 5, 2000},    {7, 777, 333},   {2048, 16, 512}};
  const Epilogue epilogues[] = {Epilogue::kNone, Epilogue::kBiasRow, Epilogue::kBiasCol,
                                Epilogue::kRelu, Epilogue::kLeakyRelu, Epilogue::kGelu};
  const DType types[] = {DType::kF32, DType::kBF16, DType::kF16};
  std::mt19937_64 rng(11);
  int ok = 0, tried = 0, split = 0, i = 0;
  for (const Shape& s : shapes)
    for (const char* layout : {"NN", "NT", "TN", "TT"}) {
      GemmProblem p = make(s.m, s.n, s.k, layout);
      p.a_type = p.b_type = types[i % 3];
      p.c_type = i % 4 == 1 ? DType::kF32 : p.a_type;
      p.c_layout = i % 2 ? Layout::kColMajor : Layout::kRowMajor;
      p.beta = i % 5 == 2 ? 0.5 : 0.0;
      p.alpha = i % 7 == 3 ? -1.5 : 1.0;
      p.epilogue = epilogues[i % 6];
      ++i;
      ASSERT_TRUE(t.can_serve(p, evaluator_->device()).ok()) << p.describe();
      auto valid = t.space().enumerate_valid(t.context(p, &evaluator_->device()));
      ASSERT_FALSE(valid.empty()) << p.describe();
      for (int j = 0; j < 3; ++j) {
        Config c = t.space().to_config(valid[rng() % valid.size()]);
        Evaluation e = evaluator_->evaluate(t, p, c);
        ++tried;
        EXPECT_EQ(e.outcome, Outcome::kOk) << p.describe() << " " << config_to_json_text(c) << ": "
                                           << outcome_name(e.outcome) << " " << e.message;
        ok += e.ok();
        split += e.ok() && c.at("SPLIT_K") > 1;
      }
    }
  std::printf("gemm_gemv: %d of %d sampled configs ran and validated (%d with split-K)\n", ok, tried, split);
}

TEST_F(GpuEvaluatorTest, DecodeTemplateValidatesEveryTypeLayoutAndEpilogue) {
  if (evaluator_->device().backend == "cuda" && std::atoi(evaluator_->device().arch.c_str() + 3) < 80)
    GTEST_SKIP() << "gemm_decode needs sm_80+";
  cover_half_combinations(*evaluator_, "gemm_decode", 16);
}

// gemm_stream (W straight into mma fragments, NT only): M from 1 to 16 (partial 8-row tiles of X),
// N off the 16-row warp tiles, K off the 32-deep steps (the element-wise last chunk), every C type,
// both C layouts, beta, alpha and the epilogues; then sampled configs of its space (split-K with
// empty splits, K warps, prefetch, both L2 hints, on sm_90 splits summed in a cluster) on the same
// problems.
TEST_F(GpuEvaluatorTest, StreamTemplateValidatesEdgesEpiloguesAndSampledConfigs) {
  if (evaluator_->device().backend != "cuda" || std::atoi(evaluator_->device().arch.c_str() + 3) < 80)
    GTEST_SKIP() << "gemm_stream needs NVIDIA sm_80+, this is " << evaluator_->device().arch;
  const KernelTemplate& t = *library().find("gemm_stream");
  const Epilogue epilogues[] = {Epilogue::kNone, Epilogue::kBiasRow, Epilogue::kBiasCol, Epilogue::kRelu,
                                Epilogue::kLeakyRelu, Epilogue::kGelu, Epilogue::kBiasGelu};
  const std::int64_t ms[] = {1, 5, 16, 12, 9, 16};
  std::vector<GemmProblem> problems;
  for (int i = 0; i < 12; ++i) {
    GemmProblem p = varied_half_problem(ms[i % 6], i % 4 == 1 ? 1000 : 2056 - 8 * (i % 3), i % 3 == 2 ? 1000 : 1032 + 512 * (i % 2),
                                        "NT", i);
    p.c_layout = i % 2 ? Layout::kColMajor : Layout::kRowMajor;
    p.alpha = i % 4 == 3 ? -1.5 : 1.0;
    p.epilogue = epilogues[i % 7];
    problems.push_back(p);
  }
  const Config fixed[] = {t.defaults(),
                          config_with(t, {{"BLOCK_M", 8}, {"WARPS_N", 1}, {"WARPS_K", 8}, {"UNROLL", 1}, {"SPLIT_K", 16}}),
                          config_with(t, {{"BLOCK_M", 8}, {"WARPS_N", 4}, {"WARPS_K", 1}, {"SPLIT_K", 1}, {"PREFETCH", 1}}),
                          config_with(t, {{"BLOCK_M", 16}, {"UNROLL", 8}, {"PREFETCH", 1}, {"HINT", 2}, {"SPLIT_K", 3}}),
                          // 1024 threads: 32 warps' partials summed through shared memory.
                          config_with(t, {{"BLOCK_M", 16}, {"WARPS_N", 4}, {"WARPS_K", 8}, {"UNROLL", 1}, {"SPLIT_K", 2}}),
                          // sm_90: the split summed in a cluster of 8 (K warps first), and of 3 blocks
                          // sharing 8 units (a block sums several).
                          config_with(t, {{"BLOCK_M", 8}, {"WARPS_N", 1}, {"WARPS_K", 8}, {"UNROLL", 1}, {"SPLIT_K", 8},
                                          {"REDUCE", 1}}),
                          config_with(t, {{"BLOCK_M", 16}, {"WARPS_N", 4}, {"WARPS_K", 1}, {"SPLIT_K", 3}, {"PREFETCH", 1},
                                          {"REDUCE", 1}})};
  int ok = 0, tried = 0;
  for (const GemmProblem& p : problems)
    for (const Config& c : fixed) {
      if (!t.space().validate(c, t.context(p, &evaluator_->device())).ok()) continue;
      Evaluation e = evaluator_->evaluate(t, p, c);
      ++tried;
      EXPECT_EQ(e.outcome, Outcome::kOk) << p.describe() << " " << config_to_json_text(c) << ": "
                                         << outcome_name(e.outcome) << " " << e.message;
      ok += e.ok();
    }
  sample_configs(t, problems, 11, [&](const GemmProblem& p, const Config& c, const Evaluation& e) {
    ++tried;
    EXPECT_EQ(e.outcome, Outcome::kOk) << p.describe() << " " << config_to_json_text(c) << ": "
                                       << outcome_name(e.outcome) << " " << e.message;
    ok += e.ok();
  });
  std::printf("gemm_stream: %d of %d evaluations ran and validated\n", ok, tried);
  EXPECT_GE(tried, 12 * 8 + 12);  // at least one fixed config per problem
}

// gemm_stream on FP8 (NVIDIA sm_89+): e4m3, e5m2 and both mixed pairs, unscaled and per-tensor, M
// from 1 to 16, N off the warp tiles, K off the 64-deep steps (16-byte pieces past K in the last
// chunk), every C type, beta, alpha and the epilogues, under the default config and ones with
// split-K, K warps, prefetch and the L2 hints.
TEST_F(GpuEvaluatorTest, StreamTemplateOnFp8ValidatesTypesScalesAndEdges) {
  if (evaluator_->device().backend != "cuda" || std::atoi(evaluator_->device().arch.c_str() + 3) < 89)
    GTEST_SKIP() << "gemm_stream's FP8 needs NVIDIA sm_89+, this is " << evaluator_->device().arch;
  const KernelTemplate& t = *library().find("gemm_stream");
  const int tried = expect_stream_fp8_validates(  // every type pair, unscaled and per-tensor
      t, {t.defaults(),
          config_with(t, {{"BLOCK_M", 8}, {"WARPS_N", 1}, {"WARPS_K", 2}, {"UNROLL", 1}, {"SPLIT_K", 4}}),
          config_with(t, {{"BLOCK_M", 16}, {"WARPS_K", 1}, {"UNROLL", 4}, {"PREFETCH", 1}, {"HINT", 2}, {"SPLIT_K", 2}}),
          config_with(t, {{"BLOCK_M", 8}, {"WARPS_N", 4}, {"WARPS_K", 1}, {"SPLIT_K", 1}, {"HINT", 1}}),
          config_with(t, {{"BLOCK_M", 16}, {"WARPS_N", 2}, {"WARPS_K", 2}, {"UNROLL", 2}, {"SPLIT_K", 4}, {"REDUCE", 1}})});
  // K steps are 64 deep in FP8: the configs are chosen so that K warps and splits fit K = 1040,
  // and BLOCK_M 16 serves M > 8 (the defaults, the prefetching config, the cluster's split on
  // sm_90), BLOCK_M 8 every M.
  EXPECT_GE(tried, 8 * 2 + 4 * 2 + (evaluator_->device().arch == "sm_90" ? 4 : 0));
}

// gemm_stream on block-scaled FP8 (1 x 128 factors for X, 128 x 128 for W, TS_BLOCK_SCALES): the
// same problems (N off the 128-row blocks of W's factors, K with a partial last block and pieces
// past K in the last chunk), block-scaled; a factor load a step (UNROLL 1) or a two-step pair
// (UNROLL 2, 4, 8), K warps, splits that start mid-block, prefetch and the L2 hints. The reference
// applies the same factors in fp32.
TEST_F(GpuEvaluatorTest, StreamTemplateOnFp8ValidatesBlockScales) {
  if (evaluator_->device().backend != "cuda" || std::atoi(evaluator_->device().arch.c_str() + 3) < 89)
    GTEST_SKIP() << "gemm_stream's FP8 needs NVIDIA sm_89+, this is " << evaluator_->device().arch;
  const KernelTemplate& t = *library().find("gemm_stream");
  const int tried = expect_stream_fp8_validates(
      t,
      {t.defaults(),
       config_with(t, {{"BLOCK_M", 8}, {"WARPS_N", 1}, {"WARPS_K", 2}, {"UNROLL", 1}, {"SPLIT_K", 4}}),
       config_with(t, {{"BLOCK_M", 16}, {"WARPS_K", 1}, {"UNROLL", 4}, {"PREFETCH", 1}, {"HINT", 2}, {"SPLIT_K", 2}}),
       config_with(t, {{"BLOCK_M", 8}, {"WARPS_N", 4}, {"WARPS_K", 1}, {"UNROLL", 8}, {"SPLIT_K", 1}, {"HINT", 1}}),
       config_with(t, {{"BLOCK_M", 16}, {"WARPS_N", 1}, {"WARPS_K", 8}, {"UNROLL", 1}, {"SPLIT_K", 1}}),
       // sm_90: the split summed in a cluster, a factor load a step.
       config_with(t, {{"BLOCK_M", 8}, {"WARPS_N", 2}, {"WARPS_K", 2}, {"UNROLL", 1}, {"SPLIT_K", 4}, {"REDUCE", 1}})},
      Scaling::kBlock);
  // BLOCK_M 16 serves M > 8 (four of the problems), BLOCK_M 8 every M.
  EXPECT_GE(tried, 4 * 5 + 4 * 2 + (evaluator_->device().arch == "sm_90" ? 8 : 0));
}

// The vendor line in half precision: every layout, C in each type, and the epilogues it
// fuses (bias, ReLU, GELU, bias + GELU) or, for LeakyReLU, the plain GEMM with the reason.
TEST_F(GpuEvaluatorTest, VendorBaselineInHalfPrecisionValidatesFusedAndPlain) {
  int i = 0;
  for (DType in : {DType::kF16, DType::kBF16})
    for (const char* layout : {"NN", "NT", "TN", "TT"})
      for (Epilogue epi : {Epilogue::kNone, Epilogue::kBiasRow, Epilogue::kBiasCol, Epilogue::kRelu, Epilogue::kGelu,
                           Epilogue::kLeakyRelu, Epilogue::kBiasGelu}) {
        GemmProblem p = make(300, 260 + 8 * (i % 2), 1001, layout);
        p.a_type = p.b_type = in;
        p.c_type = i % 3 == 0 ? DType::kF32 : in;
        p.c_layout = i % 2 ? Layout::kColMajor : Layout::kRowMajor;
        p.beta = i % 5 == 0 ? 0.5 : 0.0;
        p.epilogue = epi;
        ++i;
        auto v = evaluator_->vendor_baseline(p);
        ASSERT_TRUE(v.ok()) << p.describe() << ": " << v.status().to_string();
        EXPECT_EQ(v->outcome, Outcome::kOk) << p.describe() << ": " << v->message;
        if (epi == Epilogue::kLeakyRelu) {
          EXPECT_NE(v->message.find("plain GEMM"), std::string::npos) << v->message;
        }
        if (i % 12 == 1) std::printf("vendor %s: %.2f TFLOP/s %s\n", p.describe().c_str(), v->tflops, v->message.c_str());
      }
}

// cuBLASLt's FP8 line (sm_89 / sm_90): the framework layout NT, both C layouts, e4m3 x e4m3 and
// e4m3 x e5m2, unscaled and per-tensor scaled (the scales on alpha), C in bf16, fp16 and fp32,
// with and without a fused bias: each result validated against the exact FP8 reference.
TEST_F(GpuEvaluatorTest, VendorBaselineInFp8ValidatesUnscaledPerTensorAndBlockScaled) {
  const std::string arch = evaluator_->device().arch;
  if (arch != "sm_90" && arch != "sm_89") GTEST_SKIP() << "cuBLASLt FP8 needs sm_89 or sm_90, this is " << arch;
  int i = 0;
  for (DType b_type : {DType::kE4M3, DType::kE5M2})
    for (Scaling scaling : {Scaling::kNone, Scaling::kPerTensor, Scaling::kBlock})
      for (DType c_type : {DType::kBF16, DType::kF16, DType::kF32}) {
        GemmProblem p = make(256 + 16 * (i % 3), 512, 1024, "NT");
        p.a_type = DType::kE4M3;
        p.b_type = b_type;
        p.c_type = c_type;
        p.c_layout = i % 2 ? Layout::kColMajor : Layout::kRowMajor;
        p.scaling = scaling;
        if (scaling == Scaling::kPerTensor) p.scale_a = 0.0625, p.scale_b = 3.0;
        p.epilogue = i % 4 == 3 ? (p.c_layout == Layout::kRowMajor ? Epilogue::kBiasCol : Epilogue::kBiasRow)
                                : Epilogue::kNone;
        if (scaling == Scaling::kBlock) p.k = 1008;  // a partial last K block (the scales' padding)
        ++i;
        ASSERT_TRUE(p.validate().ok()) << p.describe() << ": " << p.validate().message();
        auto v = evaluator_->vendor_baseline(p);
        if (scaling == Scaling::kBlock && arch != "sm_90") {  // cuBLASLt's block scaling is Hopper's only
          EXPECT_FALSE(v.ok() && v->outcome == Outcome::kWrongResult) << p.describe() << ": " << v->message;
          continue;
        }
        ASSERT_TRUE(v.ok()) << p.describe() << ": " << v.status().to_string();
        EXPECT_EQ(v->outcome, Outcome::kOk) << p.describe() << ": " << v->message;
        std::printf("vendor %s: %.2f TFLOP/s, relative error %.3g %s\n", p.describe().c_str(), v->tflops,
                    v->accuracy.rel_error_norm, v->message.c_str());
      }
}

TEST_F(GpuEvaluatorTest, ResourceErrorsAreNamedNotCrashes) {
  // 1024 threads each holding 16x16 accumulators cannot fit the register file.
  GemmProblem p = make(512, 512, 512);
  Config c{{"BLOCK_M", 256}, {"BLOCK_N", 256}, {"BLOCK_K", 4}, {"THREAD_M", 8}, {"THREAD_N", 8}};
  Evaluation e = evaluator_->evaluate(tiled(), p, c);
  EXPECT_TRUE(e.outcome == Outcome::kOk || e.outcome == Outcome::kResourceError || e.outcome == Outcome::kInvalid)
      << outcome_name(e.outcome) << ": " << e.message;
  std::printf("256x256 tile, 1024 threads: %s %s (registers %d)\n", outcome_name(e.outcome), e.message.c_str(),
              e.resources.registers);
}

}  // namespace tilesmith::gpu_test
