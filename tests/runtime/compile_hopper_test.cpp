// Real NVRTC compiles of the Hopper schedules on a machine without a GPU: gemm_tma_half's
// clusters (along M, N and K), ping-pong, narrow boxes, FP8 (unscaled, per-tensor and block
// scales) and the TMA-store epilogue, each with the rules that keep them where they work; and
// gemm_stream's FP8 on sm_89 and up.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "registry/template_library.h"
#include "runtime/candidate_compiler.h"
#include "tests/runtime/compile_test_support.h"
#include "tests/template_config.h"

namespace tilesmith {
namespace {

using namespace compile_test;

// gemm_tma_half's 2-block clusters (B multicast) compile under NVRTC; the rules keep them
// away from split-K and from tiles with one B box.
TEST(Compile, TmaClusterConfigsCompileAndTheirRulesHold) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_tma_half");
  const DeviceFacts dev = hopper_facts();
  const GemmProblem p = bf16_problem(4096, "NT");
  Config c = t.defaults();
  c["BLOCK_N"] = 256;
  c["CLUSTER_M"] = 2;
  expect_valid_and_compiled(*nvrtc, t, p, c, dev);
  auto r = t.render(p, c, dev);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->grid[0], 132u) << "66 clusters of 2";
  expect_changes_refused(t, p, dev, c, {{"SPLIT_K", 2}, {"CLUSTER_N", 2}});

  // Pairs along N share A: the same grid, and no pair along both.
  c["CLUSTER_M"] = 1;
  c["CLUSTER_N"] = 2;
  expect_valid_and_compiled(*nvrtc, t, p, c, dev);
  r = t.render(p, c, dev);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->grid[0], 132u) << "66 clusters of 2";
  expect_changes_refused(t, p, dev, c, {{"SPLIT_K", 2}, {"CLUSTER_M", 2}, {"PINGPONG", 1}});

  // A pair of 64 x 64 tiles at M = 128 (a prefill chunk or a batch of decode steps): the two row
  // tiles share their single B box, which the first block multicasts; the pair along N shares A's.
  const GemmProblem p128 = bf16_problem(128, "NT");
  Config pair = t.defaults();
  pair["BLOCK_M"] = 64;
  pair["BLOCK_N"] = 64;
  pair["CONSUMERS"] = 1;
  pair["CLUSTER_M"] = 2;
  expect_valid_and_compiled(*nvrtc, t, p128, pair, dev);
  r = t.render(p128, pair, dev);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->grid[0], 128u) << "64 clusters of 2 on 2 x 64 tiles";
  pair["CLUSTER_M"] = 1;
  pair["CLUSTER_N"] = 2;
  expect_valid_and_compiled(*nvrtc, t, p128, pair, dev);

  // A config recorded before CLUSTER_N existed is brought up to date with its default, 1: the
  // pairs along M it may name behave as they did.
  c.erase("CLUSTER_N");
  const ConfigUpdate u = t.update_config(c);
  EXPECT_EQ(u.filled, (Config{{"CLUSTER_N", 1}}));
  EXPECT_TRUE(t.space().validate(u.config, t.context(p, &dev)).ok());
}

// gemm_tma_half's K clusters (split-K summed through distributed shared memory) compile under
// NVRTC for a decode shape, launch CLUSTER_K blocks per tile, and keep away from the other
// splits, the persistent grid and K too short for two slices per block.
TEST(Compile, TmaClusterKConfigsCompileAndTheirRulesHold) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_tma_half");
  const DeviceFacts dev = hopper_facts();
  GemmProblem p = bf16_problem(16, "NN");
  p.n = 3584;  // 14 tiles of 256 columns: 112 blocks of 8, one wave
  Config c = t.defaults();
  c["BLOCK_M"] = 64;
  c["BLOCK_N"] = 256;
  c["CONSUMERS"] = 1;
  c["PERSISTENT"] = 0;
  c["EPILOGUE_SMEM"] = 0;
  c["CLUSTER_K"] = 8;
  c["GROUP_M"] = 1;  // one row of tiles
  expect_valid_and_compiled(*nvrtc, t, p, c, dev);
  auto r = t.render(p, c, dev);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->grid[0], 112u) << "14 tiles of 256 columns, 8 blocks each";
  EXPECT_GE(r->dynamic_shared_bytes, 64u * 256u * 4u) << "room for the fp32 partial tile";
  expect_changes_refused(t, p, dev, c, {{"SPLIT_K", 2}, {"PERSISTENT", 1}, {"EPILOGUE_SMEM", 1}, {"CLUSTER_M", 2}});
  GemmProblem short_k = p;
  short_k.k = 960;  // 15 slices of 64: fewer than two per block of 8
  ASSERT_TRUE(apply_layout_code("NN", short_k).ok());
  EXPECT_FALSE(t.space().validate(c, t.context(short_k, &dev)).ok());
  const GemmProblem many_tiles = bf16_problem(4096, "NN");  // 1024 tiles: no reason to split K
  EXPECT_FALSE(t.space().validate(c, t.context(many_tiles, &dev)).ok());
  // All the blocks in one wave: clusters of 4 or 8 with large shared memory fit 120 blocks at once
  // on 132 SMs, pairs fill every SM.
  GemmProblem wide = p;
  wide.n = 4096;  // 16 tiles of 256 columns: 128 blocks in clusters of 8 would run as two waves
  EXPECT_FALSE(t.space().validate(c, t.context(wide, &dev)).ok());
  Config pairs = c;
  pairs["BLOCK_N"] = 64;  // 64 tiles
  pairs["CLUSTER_K"] = 2;
  EXPECT_TRUE(t.space().validate(pairs, t.context(wide, &dev)).ok()) << "128 blocks in pairs";
  pairs["CLUSTER_K"] = 4;
  EXPECT_FALSE(t.space().validate(pairs, t.context(wide, &dev)).ok()) << "256 blocks";
}

// gemm_tma_half splits K only where the split shortens the schedule counted in waves of one unit
// an SM: fewer tiles than SMs, and fewer waves of units than splits. Over the model benchmark's
// searches on an H200 no split outside that came within 11.6% of its shape's best (1,941 of 2,934).
TEST(Compile, TmaSplitKOnlyWhereItShortensTheSchedule) {
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_tma_half");
  const DeviceFacts dev = hopper_facts();  // 132 SMs
  GemmProblem p = bf16_problem(512, "NT");
  p.n = 1280;  // 40 tiles of 128 x 128
  ASSERT_TRUE(apply_layout_code("NT", p).ok());
  Config c = t.defaults();
  c["BLOCK_M"] = 128;
  c["BLOCK_N"] = 128;
  c["EPILOGUE_SMEM"] = 0;
  c["PERSISTENT"] = 1;
  auto valid = [&](const GemmProblem& q, int split_k, int persistent) {
    return t.space().validate(changed(c, {{"SPLIT_K", split_k}, {"PERSISTENT", persistent}}), t.context(q, &dev)).ok();
  };
  EXPECT_TRUE(valid(p, 2, 1)) << "80 units: one wave instead of two";
  EXPECT_TRUE(valid(p, 4, 1)) << "160 units: two waves instead of four";
  EXPECT_TRUE(valid(p, 4, 0)) << "160 blocks, a unit each";
  EXPECT_FALSE(valid(p, 2, 0)) << "one block a unit needs more units than SMs";
  GemmProblem wider = p;
  wider.n = 2176;  // 68 tiles: 136 units in two take two waves, as the whole tiles do
  EXPECT_FALSE(valid(wider, 2, 1));
  EXPECT_TRUE(valid(wider, 4, 1)) << "272 units: three waves instead of four";
  wider.n = 4224;  // 132 tiles, a whole wave
  EXPECT_FALSE(valid(wider, 4, 1));
  EXPECT_FALSE(valid(wider, 8, 1));
  // The rule reads the device: on 40 SMs the 40 tiles are a whole wave.
  DeviceFacts small = dev;
  small.multiprocessors = 40;
  EXPECT_FALSE(t.space().validate(changed(c, {{"SPLIT_K", 2}}), t.context(p, &small)).ok());
}

// gemm_tma_half's ping-pong consumers (whole tiles in turn) compile for both tiles that fit one
// consumer's registers, and the rules keep them to two consumers on a persistent grid.
TEST(Compile, TmaPingPongConfigsCompileAndTheirRulesHold) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_tma_half");
  const DeviceFacts dev = hopper_facts();
  const GemmProblem p = bf16_problem(4096, "NN");
  for (auto [bm, bn] : {std::pair{128, 128}, {64, 256}}) {
    Config c = t.defaults();
    c["BLOCK_M"] = bm;
    c["BLOCK_N"] = bn;
    c["PINGPONG"] = 1;
    expect_valid_and_compiled(*nvrtc, t, p, c, dev);
    expect_changes_refused(t, p, dev, c, {{"CONSUMERS", 1}, {"PERSISTENT", 0}, {"SPLIT_K", 2}, {"CLUSTER_K", 2}});
  }
  // Ping-pong in pairs along M or N: both blocks take their units in the same turns.
  for (const char* pair : {"CLUSTER_M", "CLUSTER_N"}) {
    Config c = t.defaults();
    c["BLOCK_M"] = 128;
    c["BLOCK_N"] = 128;
    c["PINGPONG"] = 1;
    c[pair] = 2;
    expect_valid_and_compiled(*nvrtc, t, p, c, dev);
  }
  Config too_big = t.defaults();  // 128 x 256 for one consumer: 256 accumulators a thread
  too_big["BLOCK_N"] = 256;
  too_big["PINGPONG"] = 1;
  EXPECT_FALSE(t.space().validate(too_big, t.context(p, &dev)).ok());
}

// gemm_tma_half's tile widths that are not multiples of 64 (80, 96, 112, 160, 224): B K-major only,
// loaded in 32-row boxes (96, 160, 224) or 16-row ones (80, 112; the runtime's map says so), every
// epilogue path compiles (80 and 112: not the 2 KiB shared-memory epilogue, which works in
// 32-column chunks); a row-major B is refused.
TEST(Compile, TmaNarrowBoxWidthsCompileForAKMajorBOnly) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_tma_half");
  const DeviceFacts dev = hopper_facts();
  // 512 x 5120: 108 tiles of 128 x 192 on 132 SMs, 128 of 128 x 160.
  GemmProblem p = bf16_problem(512, "NT");
  p.n = 5120;
  p.k = 5120;
  ASSERT_TRUE(apply_layout_code("NT", p).ok());
  for (int bn : {80, 96, 112, 160, 224}) {
    const bool whole_chunks = bn % 32 == 0;
    // The widths under 128 are for shapes with fewer than two waves of 128-wide tiles: 512 x 1280.
    GemmProblem q = p;
    if (bn < 128) q.n = 1280;
    Config c = t.defaults();
    c["BLOCK_N"] = bn;
    c["STAGES"] = 4;
    c["PERSISTENT"] = 1;
    if (!whole_chunks) {
      Config chunked = c;  // the default EPILOGUE_SMEM 1
      auto why = t.space().validate(chunked, t.context(q, &dev));
      EXPECT_FALSE(why.ok()) << bn;
      EXPECT_NE(why.message().find("EPILOGUE_SMEM"), std::string::npos) << why.message();
      c["EPILOGUE_SMEM"] = 0;
    }
    expect_valid_and_compiled(*nvrtc, t, q, c, dev);
    auto r = t.render(q, c, dev);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->tensor_maps.size(), 3u);  // A, B and C (unused: no TMA-store epilogue, EPILOGUE_SMEM 2)
    EXPECT_TRUE(r->tensor_maps[2].unused);
    EXPECT_EQ(r->tensor_maps[1].box, (std::array<std::uint32_t, 2>{64, whole_chunks ? 32u : 16u})) << bn;
    EXPECT_EQ(r->tensor_maps[0].box, (std::array<std::uint32_t, 2>{64, 64})) << bn;
    EXPECT_EQ(r->grid[0], std::min(132u, 4u * unsigned((q.n + bn - 1) / bn))) << "a persistent grid: min(SMs, tiles)";
    // The other schedules: ping-pong on 64-row tiles (a consumer's whole tile), a pair along M
    // multicasting B's odd number of boxes, the register epilogue, split-K.
    expect_valid_and_compiled(*nvrtc, t, q, changed(c, {{"PINGPONG", 1}, {"BLOCK_M", 64}}), dev);
    expect_valid_and_compiled(*nvrtc, t, q, changed(c, {{"CLUSTER_M", 2}}), dev);
    // One block per unit needs more units than SMs, and a split fewer tiles (in four: more than a
    // quarter of the SMs, at most three quarters): 512 x 2560 at most. The widest tile in two shares
    // on a persistent grid: in four its last block's gather spills 16 bytes beside 112 accumulators
    // (notes/open-ends.md, forty-eighth session).
    GemmProblem split_shape = q;
    split_shape.n = std::min<std::int64_t>(q.n, 2560);
    expect_valid_and_compiled(*nvrtc, t, split_shape,
                              bn < 224 ? changed(c, {{"EPILOGUE_SMEM", 0}, {"PERSISTENT", 0}, {"SPLIT_K", 4}})
                                       : changed(c, {{"EPILOGUE_SMEM", 0}, {"PERSISTENT", 1}, {"SPLIT_K", 2}}),
                              dev);
    if (bn < 128) {  // two waves of 128-wide tiles or more: refused
      GemmProblem many = q;
      many.m = 4096;
      EXPECT_FALSE(t.space().validate(c, t.context(many, &dev)).ok()) << bn;
    }
    // B row-major (NN): its boxes are 64 columns wide, so the width must be a multiple of 64.
    GemmProblem nn = q;
    ASSERT_TRUE(apply_layout_code("NN", nn).ok());
    EXPECT_FALSE(t.space().validate(c, t.context(nn, &dev)).ok()) << bn;
  }
  // The widths that were there keep their 64-row boxes.
  Config wide = t.defaults();
  wide["BLOCK_N"] = 192;
  auto r = t.render(p, wide, dev);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tensor_maps[1].box, (std::array<std::uint32_t, 2>{64, 64}));
}

// gemm_tma_half's widths that fit tile counts to waves (144, 176, 208, 240): B K-major in 16-row
// boxes, allowed only in tiles of at least 128 x 208, not in pairs along M, and where the blocks fill at
// least 90% of their waves on the SMs; the TMA-store epilogue takes them (and 80 and 112) in 48- or
// 16-column passes, the 2 KiB one not at all; the cooperative, 256-row, pair-along-N and split
// schedules compile without spills.
TEST(Compile, TmaWaveFitWidthsCompileWhereTheyFillTheirWaves) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_tma_half");
  const DeviceFacts dev = hopper_facts();
  // 512 x 55296: 768 tiles of 256 x 144 (5.8 waves on 132 SMs), 630 of 256 x 176 (4.8), 924 of
  // 128 x 240 (7.0); 1064 of 128 x 208 (8.06: refused, 89.6% of 9 waves).
  GemmProblem p = bf16_problem(512, "NT");
  p.n = 55296;
  p.k = 5120;
  p.epilogue = Epilogue::kBiasGelu;
  for (const auto& [bm, bn, pass] : {std::tuple{256, 144, 48u}, {256, 176, 16u}, {128, 240, 48u}}) {
    Config c = t.defaults();
    c["BLOCK_M"] = bm;
    c["BLOCK_N"] = bn;
    c["STAGES"] = bm == 256 ? 3 : 4;
    c["CONSUMER_REGS"] = 232;
    c["EPILOGUE_SMEM"] = 2;
    expect_valid_and_compiled(*nvrtc, t, p, c, dev);
    auto r = t.render(p, c, dev);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->tensor_maps.size(), 3u);
    EXPECT_EQ(r->tensor_maps[1].box, (std::array<std::uint32_t, 2>{64, 16})) << bn;
    EXPECT_EQ(r->tensor_maps[2].box, (std::array<std::uint32_t, 2>{pass, 64})) << bn;
    Config chunked = c;
    chunked["EPILOGUE_SMEM"] = 1;
    auto why = t.space().validate(chunked, t.context(p, &dev));
    EXPECT_FALSE(why.ok()) << bn;
    EXPECT_NE(why.message().find("EPILOGUE_SMEM"), std::string::npos) << why.message();
    // Smaller tiles of these widths read more shared memory per multiply, and pairs along M multicast
    // B in 16-row boxes (1.4-1.5x slower on an H200): refused.
    expect_changes_refused(t, p, dev, c, {{"CLUSTER_M", 2}});
    if (bm == 256) expect_changes_refused(t, p, dev, c, {{"BLOCK_M", 128}});
  }
  Config c = t.defaults();
  c["BLOCK_N"] = 208;
  c["STAGES"] = 4;
  c["EPILOGUE_SMEM"] = 2;
  EXPECT_FALSE(t.space().validate(c, t.context(p, &dev)).ok()) << "8.06 waves";
  GemmProblem q = p;  // 4096 x 5120: 800 tiles of 128 x 208 (6.06 waves: 87% of 7)
  q.m = 4096;
  q.n = 5120;
  EXPECT_FALSE(t.space().validate(c, t.context(q, &dev)).ok()) << "6.06 waves";
  q.n = 7168;  // 1120 tiles: 8.5 waves, 94% of 9
  expect_valid_and_compiled(*nvrtc, t, q, c, dev);
  // The other schedules: 208 in pairs along N (A's 64-row boxes multicast) and split along K (on
  // 1408 x 1248: 66 tiles in two halves, a unit a block in one wave), 256 x 176 alone.
  expect_valid_and_compiled(*nvrtc, t, q, changed(c, {{"CLUSTER_N", 2}}), dev);
  const Config split = changed(c, {{"SPLIT_K", 2}, {"EPILOGUE_SMEM", 0}, {"PERSISTENT", 1}});
  GemmProblem few_tiles = q;
  few_tiles.m = 1408;
  few_tiles.n = 1248;
  expect_valid_and_compiled(*nvrtc, t, few_tiles, split, dev);
  EXPECT_FALSE(t.space().validate(split, t.context(q, &dev)).ok()) << "a split of 1120 tiles";
  expect_valid_and_compiled(
      *nvrtc, t, q, changed(c, {{"BLOCK_M", 256}, {"BLOCK_N", 176}, {"STAGES", 3}, {"CONSUMER_REGS", 232}}), dev);
  // 80 (few tiles: 512 x 1280) through the TMA store's 16-column passes.
  GemmProblem few = p;
  few.n = 1280;
  Config narrow = t.defaults();
  narrow["BLOCK_N"] = 80;
  narrow["EPILOGUE_SMEM"] = 2;
  expect_valid_and_compiled(*nvrtc, t, few, narrow, dev);
  auto r = t.render(few, narrow, dev);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tensor_maps[2].box, (std::array<std::uint32_t, 2>{16, 64}));
}

// gemm_tma_half on FP8 inputs (e4m3, e5m2, mixed): both operands K-major (NT), 128-element boxes
// (one 128-byte row of K), accumulators and the products within the register budget; every
// schedule compiles, one and two slices a promotion; the other layouts, too large a tile and block
// scaling are refused.
TEST(Compile, TmaHalfServesFp8NtWithItsSlicesPromoted) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_tma_half");
  const DeviceFacts dev = hopper_facts();
  GemmProblem p = bf16_problem(256, "NT");
  p.n = 768;  // few tiles, so that the K-cluster configs below fit one wave (24 tiles of 128 columns)
  p.k = 4096;
  p.a_type = p.b_type = DType::kE4M3;
  p.c_type = DType::kBF16;
  p.scaling = Scaling::kPerTensor;
  p.scale_a = 0.5;
  p.scale_b = 2.0;
  ASSERT_TRUE(apply_layout_code("NT", p).ok());
  ASSERT_TRUE(t.supports(p).ok()) << t.supports(p).message();
  const std::vector<Config> configs = {
      testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5}, {"PERSISTENT", 1}}),
      testing::config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"STAGES", 6}, {"PERSISTENT", 1}, {"PINGPONG", 1}}),
      testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5}, {"PERSISTENT", 1}, {"CLUSTER_M", 2}}),
      testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"STAGES", 6}, {"SPLIT_K", 2}}),
      testing::config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"CONSUMERS", 1}, {"CONSUMER_REGS", 240}, {"STAGES", 8},
                      {"CLUSTER_K", 4}, {"EPILOGUE_SMEM", 0}, {"PERSISTENT", 0}}),
      // Two slices a promotion, and the widest tiles that hold 96 accumulators and 96 products.
      testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 192}, {"STAGES", 4}, {"PROMOTE_SLICES", 2}}),
      testing::config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 192}, {"STAGES", 6}, {"PINGPONG", 1}, {"PROMOTE_SLICES", 2}}),
  };
  for (DType type : {DType::kE4M3, DType::kE5M2})
    for (const Config& c : configs) {
      GemmProblem q = p;
      q.a_type = q.b_type = type;
      q.c_type = type == DType::kE4M3 ? DType::kBF16 : DType::kF32;
      expect_valid_and_compiled(*nvrtc, t, q, c, dev);
    }
  auto r = t.render(p, configs[0], dev);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->tensor_maps[0].box, (std::array<std::uint32_t, 2>{128, 64})) << "a 128-byte row of K";
  EXPECT_EQ(r->tensor_maps[1].box, (std::array<std::uint32_t, 2>{128, 64}));
  EXPECT_EQ(r->dynamic_shared_bytes, 5u * (128u + 128u) * 128u + 2u * 8192u + 1024u) << "same bytes as 16-bit";
  // 128 x 256 would hold 128 accumulators and 128 products a thread.
  EXPECT_FALSE(t.space().validate(testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 224}, {"STAGES", 4}}),
                                  t.context(p, &dev))
                   .ok());
  // 96 accumulators with two slices a promotion leave no registers for a fused bias (it spilled).
  GemmProblem fused = p;
  fused.epilogue = Epilogue::kBiasGelu;
  const Config wide_p2 = testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 192}, {"STAGES", 4}, {"PROMOTE_SLICES", 2}});
  EXPECT_TRUE(t.space().validate(wide_p2, t.context(p, &dev)).ok());
  EXPECT_FALSE(t.space().validate(wide_p2, t.context(fused, &dev)).ok());
  expect_valid_and_compiled(*nvrtc, t, fused,
                            testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 160}, {"STAGES", 4}, {"PROMOTE_SLICES", 2}}),
                            dev);
  expect_valid_and_compiled(*nvrtc, t, fused,
                            testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 192}, {"STAGES", 4}}), dev);
  EXPECT_FALSE(t.space().validate(testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"STAGES", 4}}),
                                  t.context(p, &dev))
                   .ok());
  for (const char* code : {"NN", "TN", "TT"}) {
    GemmProblem other = p;
    ASSERT_TRUE(apply_layout_code(code, other).ok());
    EXPECT_FALSE(t.space().validate(configs[0], t.context(other, &dev)).ok()) << code << ": FP8 is read K-major";
  }
  // Block scales: every slice promoted, the grids as two more parameters (TS_BLOCK_SCALES), on
  // tile widths that span one, two and three 128-column blocks, cooperative, ping-pong,
  // split-K and a K cluster, with a fused epilogue; and only there.
  GemmProblem block = p;
  block.scaling = Scaling::kBlock;
  block.scale_a = block.scale_b = 1.0;
  ASSERT_TRUE(t.supports(block).ok()) << t.supports(block).message();
  EXPECT_FALSE(t.space().validate(wide_p2, t.context(block, &dev)).ok()) << "one block of K a promotion";
  GemmProblem block_fused = block;
  block_fused.epilogue = Epilogue::kBiasGelu;
  block_fused.k = 1008;  // a partial last block (16-byte rows for TMA)
  // 96 accumulators, 96 products and the factors spill (128 x 192: 128 bytes): at most 80.
  EXPECT_FALSE(t.space().validate(testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 192}, {"STAGES", 4}}),
                                  t.context(block, &dev))
                   .ok());
  for (const Config& c : {testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5}}),
                          testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 160}, {"STAGES", 4}}),
                          testing::config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 160}, {"STAGES", 6}, {"PINGPONG", 1}}),
                          testing::config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"STAGES", 8}, {"PINGPONG", 1}}),
                          testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"STAGES", 6}, {"SPLIT_K", 2}}),
                          testing::config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"CONSUMERS", 1},
                                                   {"CONSUMER_REGS", 240}, {"STAGES", 8}, {"CLUSTER_K", 4},
                                                   {"EPILOGUE_SMEM", 0}, {"PERSISTENT", 0}})}) {
    expect_valid_and_compiled(*nvrtc, t, block, c, dev);
    expect_valid_and_compiled(*nvrtc, t, block_fused, c, dev);
  }
  // Overlapped promotion (two product buffers): at most 64 accumulators, one slice a promotion,
  // on the cooperative, ping-pong, narrow, split-K and K-cluster schedules, per-tensor and block
  // scaled, with a fused epilogue; refused on 16-bit inputs, wider tiles and with the TMA-store
  // epilogue (it spilled 116-148 bytes).
  for (const Config& c :
       {testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5}, {"PROMOTE_OVERLAP", 1}}),
        testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5}, {"CLUSTER_M", 2},
                                 {"PROMOTE_OVERLAP", 1}}),
        testing::config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"STAGES", 8}, {"PINGPONG", 1},
                                 {"PROMOTE_OVERLAP", 1}}),
        testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"STAGES", 6}, {"SPLIT_K", 2}, {"PROMOTE_OVERLAP", 1}}),
        testing::config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"CONSUMERS", 1}, {"CONSUMER_REGS", 240},
                                 {"STAGES", 8}, {"CLUSTER_K", 4}, {"EPILOGUE_SMEM", 0}, {"PERSISTENT", 0},
                                 {"PROMOTE_OVERLAP", 1}})}) {
    for (const GemmProblem& q : {p, fused, block, block_fused}) expect_valid_and_compiled(*nvrtc, t, q, c, dev);
  }
  // Two slices a buffer in the overlapped loop: per-tensor (or unscaled) only.
  for (const Config& c :
       {testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5}, {"PROMOTE_OVERLAP", 1},
                                 {"PROMOTE_SLICES", 2}}),
        testing::config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"STAGES", 8}, {"PINGPONG", 1},
                                 {"PROMOTE_OVERLAP", 1}, {"PROMOTE_SLICES", 2}}),
        testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"STAGES", 6}, {"SPLIT_K", 2},
                                 {"PROMOTE_OVERLAP", 1}, {"PROMOTE_SLICES", 2}})}) {
    for (const GemmProblem& q : {p, fused}) expect_valid_and_compiled(*nvrtc, t, q, c, dev);
    EXPECT_FALSE(t.space().validate(c, t.context(block, &dev)).ok()) << "block scales promote every slice";
  }
  expect_changes_refused(t, p, dev,
                         testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5},
                                                  {"PROMOTE_OVERLAP", 1}}),
                         {{"BLOCK_N", 160}, {"EPILOGUE_SMEM", 2}});
  EXPECT_FALSE(t.space().validate(testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5},
                                                           {"PROMOTE_OVERLAP", 1}}),
                                  t.context(bf16_problem(4096, "NT"), &dev))
                   .ok())
      << "16-bit inputs have no promotion";
  auto rb = t.render(block, configs[0], dev);
  ASSERT_TRUE(rb.ok()) << rb.status().message();
  EXPECT_EQ(std::count(rb->options.begin(), rb->options.end(), std::string("-DTS_BLOCK_SCALES=1")), 1);
  EXPECT_EQ(std::count(r->options.begin(), r->options.end(), std::string("-DTS_BLOCK_SCALES=1")), 0)
      << "per-tensor and unscaled kernels keep their options";
  // e4m3 with e5m2 either way round: B's type reaches the kernel only where it differs.
  EXPECT_EQ(std::count(r->options.begin(), r->options.end(), std::string("-DTS_B_DTYPE=4")), 0);
  for (DType a : {DType::kE4M3, DType::kE5M2}) {
    GemmProblem mixed = p;
    mixed.a_type = a;
    mixed.b_type = a == DType::kE4M3 ? DType::kE5M2 : DType::kE4M3;
    ASSERT_TRUE(t.supports(mixed).ok()) << t.supports(mixed).message();
    expect_valid_and_compiled(*nvrtc, t, mixed, configs[0], dev);
    auto m = t.render(mixed, configs[0], dev);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(std::count(m->options.begin(), m->options.end(),
                         "-DTS_B_DTYPE=" + std::to_string(dtype_info(mixed.b_type).kernel_code)),
              1);
  }
  // A template without "mixed_fp8" keeps one type: the one with the flag's JSON, less the flag.
  GemmProblem mixed = p;
  mixed.b_type = DType::kE5M2;
  nlohmann::json j = nlohmann::json::parse(t.description_json());
  j["supports"].erase("mixed_fp8");
  auto plain = KernelTemplate::from_text(j.dump(), t.source(), "test", t.headers());
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_FALSE(plain->supports(mixed).ok());
}

// gemm_tma_half's TMA-store epilogue (EPILOGUE_SMEM 2) compiles without spills on the cooperative,
// ping-pong, 256-row and cluster schedules and split-K with a fused epilogue, for 16-bit C only,
// in 64-column passes (32-column ones for the 160- and 224-wide tiles, whose C box is 32 wide).
TEST(Compile, TmaHalfStoresCThroughTheTensorMemoryAccelerator) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_tma_half");
  const DeviceFacts dev = hopper_facts();
  GemmProblem p = bf16_problem(4096, "NT");
  p.epilogue = Epilogue::kBiasGelu;
  const std::vector<Config> configs = {
      testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"STAGES", 4}, {"EPILOGUE_SMEM", 2}}),
      testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 6}, {"PINGPONG", 1}, {"EPILOGUE_SMEM", 2}}),
      testing::config_with(t, {{"BLOCK_M", 256}, {"BLOCK_N", 128}, {"STAGES", 4}, {"EPILOGUE_SMEM", 2}}),
      testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5}, {"CLUSTER_M", 2}, {"EPILOGUE_SMEM", 2}}),
      testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 160}, {"STAGES", 5}, {"EPILOGUE_SMEM", 2}}),
      testing::config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 224}, {"STAGES", 5}, {"PINGPONG", 1}, {"EPILOGUE_SMEM", 2}})};
  for (const Config& c : configs) expect_valid_and_compiled(*nvrtc, t, p, c, dev);
  // C's box: 64 columns, or 32 for a width that is not a multiple of 64.
  for (const auto& [c, width] : {std::pair{configs[0], 64u}, std::pair{configs[4], 32u}}) {
    auto r = t.render(p, c, dev);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->tensor_maps.size(), 3u);
    EXPECT_FALSE(r->tensor_maps[2].unused);
    EXPECT_EQ(r->tensor_maps[2].box, (std::array<std::uint32_t, 2>{width, 64}));
  }
  GemmProblem f8 = p;
  f8.a_type = f8.b_type = DType::kE4M3;
  expect_valid_and_compiled(*nvrtc, t, f8,
                            testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5},
                                                     {"PROMOTE_SLICES", 2}, {"EPILOGUE_SMEM", 2}}),
                            dev);
  // Split-K stores through it too (the last share's block, gather_splits): 128 x 80 in two shares
  // at 512 x 1280, the template's seed for few tiles.
  GemmProblem few = p;
  few.m = 512;
  few.n = 1280;
  expect_valid_and_compiled(*nvrtc, t, few,
                            testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 80}, {"STAGES", 8}, {"SPLIT_K", 2},
                                                     {"GROUP_M", 1}, {"EPILOGUE_SMEM", 2}}),
                            dev);
  // Refused: fp32 C (64 columns are 256 bytes, over the swizzle), beta.
  GemmProblem f32c = p;
  f32c.c_type = DType::kF32;
  EXPECT_FALSE(t.space().validate(configs[0], t.context(f32c, &dev)).ok());
  GemmProblem beta = p;
  beta.beta = 0.5;
  EXPECT_FALSE(t.space().validate(configs[0], t.context(beta, &dev)).ok());
}

// gemm_tma_half's consumers hold up to 192 accumulators a thread (ptxas fits their code to the
// setmaxnreg budget, above the 168 registers of a three-warpgroup block): 256 x 160 and ping-pong
// 128 x 160 with either budget, 256 x 192 and ping-pong 128 x 192 with 232 registers, each
// without spills on the epilogues it is allowed; refused where they spill (192 with 216
// registers or the 2 KiB epilogue, split-K) and for FP8, whose products need a second set.
TEST(Compile, TmaHalfWideAccumulatorTilesCompileWithoutSpills) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_tma_half");
  const DeviceFacts dev = hopper_facts();
  GemmProblem p = bf16_problem(4096, "NT");
  p.epilogue = Epilogue::kBiasGelu;
  const Config wide160 = testing::config_with(
      t, {{"BLOCK_M", 256}, {"BLOCK_N", 160}, {"STAGES", 4}, {"CONSUMER_REGS", 216}, {"EPILOGUE_SMEM", 1}});
  const Config wide192 = testing::config_with(
      t, {{"BLOCK_M", 256}, {"BLOCK_N", 192}, {"STAGES", 3}, {"CONSUMER_REGS", 232}, {"EPILOGUE_SMEM", 2}});
  const std::vector<Config> configs = {
      wide160,
      testing::config_with(t, {{"BLOCK_M", 256}, {"BLOCK_N", 160}, {"STAGES", 4}, {"EPILOGUE_SMEM", 2}, {"CLUSTER_M", 2}}),
      wide192,
      testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 160}, {"STAGES", 5}, {"PINGPONG", 1}, {"EPILOGUE_SMEM", 2}}),
      testing::config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 192}, {"STAGES", 4}, {"PINGPONG", 1}, {"EPILOGUE_SMEM", 0}})};
  for (const Config& c : configs) expect_valid_and_compiled(*nvrtc, t, p, c, dev);
  // An MN-major B and an fp32 C (the register epilogue) at 192.
  GemmProblem nn = bf16_problem(4096, "NN");
  nn.c_type = DType::kF32;
  Config wide192_f32 = wide192;
  wide192_f32["EPILOGUE_SMEM"] = 0;
  expect_valid_and_compiled(*nvrtc, t, nn, wide192_f32, dev);
  expect_changes_refused(t, p, dev, wide192, {{"CONSUMER_REGS", 216}, {"EPILOGUE_SMEM", 1}, {"BLOCK_N", 224}});
  Config split = wide160;
  split["SPLIT_K"] = 2;
  EXPECT_FALSE(t.space().validate(split, t.context(p, &dev)).ok());
  GemmProblem f8 = p;
  f8.a_type = f8.b_type = DType::kE4M3;
  EXPECT_FALSE(t.space().validate(wide160, t.context(f8, &dev)).ok());
}

// gemm_stream takes FP8 on NVIDIA sm_89+ (m16n8k32 over the 16-bit fragments' bytes): every type
// pair compiles without spills for sm_90 and sm_89, per-tensor and block-scaled (the factor grids
// as two more parameters, TS_BLOCK_SCALES); older NVIDIA GPUs and AMD refuse it by rule.
TEST(Compile, StreamServesFp8OnSm89AndUp) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_stream");
  GemmProblem p = bf16_problem(16, "NT");
  p.n = 4096;
  p.k = 4096;
  p.c_type = DType::kBF16;
  p.scaling = Scaling::kPerTensor;
  p.scale_a = 0.5;
  p.scale_b = 2.0;
  for (DType a : {DType::kE4M3, DType::kE5M2})
    for (DType b : {DType::kE4M3, DType::kE5M2}) {
      GemmProblem q = p;
      q.a_type = a;
      q.b_type = b;
      ASSERT_TRUE(t.supports(q).ok()) << t.supports(q).message();
      GemmProblem block = q;
      block.scaling = Scaling::kBlock;
      block.scale_a = block.scale_b = 1.0;
      ASSERT_TRUE(t.supports(block).ok()) << t.supports(block).message();
      for (const char* arch : {"sm_90", "sm_89"}) {
        const DeviceFacts dev = nominal_facts_for_arch(arch);
        expect_valid_and_compiled(*nvrtc, t, q, t.defaults(), dev);
        expect_valid_and_compiled(
            *nvrtc, t, q,
            testing::config_with(t, {{"BLOCK_M", 8}, {"UNROLL", 4}, {"PREFETCH", 1}, {"HINT", 2}, {"SPLIT_K", 4}}), dev);
        // Block scales: a factor load per step (UNROLL 1) or per two (the widest unrolled chunk);
        // X's type does not reach the factors' code, so e4m3 X with either W suffices.
        if (a != DType::kE4M3) continue;
        expect_valid_and_compiled(*nvrtc, t, block, t.defaults(), dev);
        expect_valid_and_compiled(
            *nvrtc, t, block,
            testing::config_with(t, {{"BLOCK_M", 16}, {"UNROLL", 4}, {"PREFETCH", 1}, {"WARPS_K", 2}, {"SPLIT_K", 4}}),
            dev);
        expect_valid_and_compiled(*nvrtc, t, block,
                                  testing::config_with(t, {{"BLOCK_M", 8}, {"UNROLL", 1}, {"WARPS_K", 8}}), dev);
      }
    }
  GemmProblem q = p;
  q.a_type = q.b_type = DType::kE4M3;
  const DeviceFacts ampere = nominal_facts_for_arch("sm_80"), hopper = hopper_facts();
  EXPECT_FALSE(t.space().validate(t.defaults(), t.context(q, &ampere)).ok()) << "FP8 mma needs sm_89";
  EXPECT_TRUE(t.space().validate(t.defaults(), t.context(q, &hopper)).ok());
  q.k = 4104;  // 4104 bytes: not whole 16-byte rows in FP8 (4104 16-bit values would be)
  EXPECT_FALSE(t.space().validate(t.defaults(), t.context(q, &hopper)).ok());
}

// gemm_stream's REDUCE 1: the split's blocks form a cluster and sum through distributed shared
// memory (sm_90 only, 2 to 8 blocks). It compiles without spills on 16-bit and block-scaled FP8
// inputs, with K warps and without, and is refused elsewhere and outside those splits.
TEST(Compile, StreamSumsItsSplitInAClusterOnSm90) {
  REQUIRE_COMPILER(nvrtc, "cuda");
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_stream");
  const DeviceFacts hopper = hopper_facts();
  GemmProblem p = bf16_problem(16, "NT");
  p.n = 1280;
  p.k = 8192;
  GemmProblem f8 = p;
  f8.a_type = f8.b_type = DType::kE4M3;
  f8.scaling = Scaling::kBlock;
  const Config six = testing::config_with(
      t, {{"BLOCK_M", 16}, {"WARPS_N", 2}, {"WARPS_K", 4}, {"UNROLL", 4}, {"SPLIT_K", 6}, {"REDUCE", 1}});
  const Config eight = testing::config_with(
      t, {{"BLOCK_M", 8}, {"WARPS_N", 8}, {"WARPS_K", 1}, {"UNROLL", 2}, {"SPLIT_K", 8}, {"REDUCE", 1}, {"PREFETCH", 1}});
  for (const GemmProblem& q : {p, f8})
    for (const Config& c : {six, eight}) expect_valid_and_compiled(*nvrtc, t, q, c, hopper);
  for (const char* arch : {"sm_89", "sm_80", "gfx90a"}) {
    const DeviceFacts other = nominal_facts_for_arch(arch);
    EXPECT_FALSE(t.space().validate(six, t.context(p, &other)).ok()) << arch;
    EXPECT_TRUE(t.space().validate(changed(six, {{"REDUCE", 0}}), t.context(p, &other)).ok()) << arch;
  }
  for (int split : {1, 12})
    EXPECT_FALSE(t.space().validate(changed(six, {{"SPLIT_K", split}}), t.context(p, &hopper)).ok()) << split;
}

}  // namespace
}  // namespace tilesmith
