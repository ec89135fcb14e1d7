// gemm_tma_half's schedules on a real GPU (label gpu; skipped with the reason off sm_90): the
// large tiles, ping-pong consumers, K clusters, the shared-memory epilogue at odd columns, the
// tile widths that are not multiples of 64, and FP8 inputs. Every config must validate. (Its
// every-type/layout/epilogue sweep runs with the other half-precision templates'.)

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "registry/template_library.h"
#include "runtime/gpu_evaluator.h"
#include "tests/runtime/gpu_evaluator_fixture.h"

namespace tilesmith::gpu_test {
namespace {

// The configs meant for large shapes, persistent and not, one to three consumers, split-K, every
// layout, with M, N and K off the tiles (the TMA unit's zero fill at every edge).
TEST_F(GpuEvaluatorTest, TmaHalfLargeTileConfigsValidate) {
  if (evaluator_->device().arch != "sm_90") GTEST_SKIP() << "gemm_tma_half needs sm_90, this is " << evaluator_->device().arch;
  const KernelTemplate& t = *library().find("gemm_tma_half");
  struct Tile {
    int block_m, block_n, consumers, stages, persistent, split_k, regs, cluster, cluster_n = 1;
  };
  // The cluster pairs along M run on 520 rows (5 tiles of 128: the second block of the last pair
  // lies below the matrix) and on 1000 (8 tiles), with B boxes split 2 + 2, 1 + 1 and 2 + 1; the
  // pairs along N on 776 columns (7 tiles of 128, 5 of 192: the last pair's second block lies
  // right of the matrix) and 1000, with A's boxes split 1 + 1 and 2 + 2; pairs with a single box to share
  // (64-wide B along M, 64-row A along N), which the first block loads for both. The splits: 35-64
  // tiles of 128 x 128 in two (a unit a block), 36-64 of 64 x 256 in four, a block a unit.
  const Tile tiles[] = {{128, 256, 2, 4, 1, 1, 232, 1}, {128, 256, 2, 3, 0, 1, 232, 1},    {128, 128, 2, 6, 1, 1, 232, 1},
                        {128, 192, 2, 4, 1, 1, 216, 1}, {64, 256, 1, 4, 1, 1, 240, 1},     {256, 128, 2, 4, 1, 1, 232, 1},
                        {128, 128, 1, 5, 1, 2, 240, 1}, {64, 256, 1, 4, 0, 4, 240, 1},     {128, 256, 2, 4, 1, 1, 232, 2},
                        {128, 128, 2, 5, 1, 1, 232, 2}, {64, 192, 1, 4, 1, 1, 240, 2},     {128, 256, 2, 4, 1, 1, 232, 1, 2},
                        {128, 128, 2, 5, 1, 1, 232, 1, 2}, {128, 192, 2, 4, 0, 1, 216, 1, 2}, {256, 128, 2, 4, 1, 1, 232, 1, 2},
                        {64, 64, 1, 8, 1, 1, 240, 2},      {128, 64, 2, 6, 0, 1, 232, 2},     {64, 128, 1, 6, 1, 1, 240, 1, 2},
                        // Three consumers (192-row tiles; A's three boxes split 2 + 1 in a pair along N).
                        {192, 128, 3, 5, 1, 1, 152, 1},    {192, 192, 3, 4, 0, 1, 152, 1},    {192, 128, 3, 4, 1, 1, 152, 2},
                        {192, 128, 3, 4, 1, 1, 152, 1, 2}};
  int i = 0;
  for (const Tile& tile : tiles)
    for (const char* layout : {"NN", "NT", "TN", "TT"}) {
      const GemmProblem p = off_tile_half_problem(i, layout);
      ++i;
      Config c = config_with(t, {{"BLOCK_M", tile.block_m},
                                 {"BLOCK_N", tile.block_n},
                                 {"CONSUMERS", tile.consumers},
                                 {"STAGES", tile.stages},
                                 {"PERSISTENT", tile.persistent},
                                 {"SPLIT_K", tile.split_k},
                                 {"CONSUMER_REGS", tile.regs},
                                 {"CLUSTER_M", tile.cluster},
                                 {"CLUSTER_N", tile.cluster_n}});
      // The shared-memory epilogue where it applies (split-K included), on three of every four; the
      // register one elsewhere.
      c["EPILOGUE_SMEM"] = p.c_layout == Layout::kRowMajor && p.beta == 0 && i % 4 != 1;
      Status valid = t.space().validate(c, t.context(p, &evaluator_->device()));
      if (!valid.ok()) {
        // Non-persistent only differs where there are more tiles than SMs.
        EXPECT_NE(valid.message().find("PERSISTENT"), std::string::npos) << valid.message();
        c["PERSISTENT"] = 1;
      }
      Evaluation e = evaluator_->evaluate(t, p, c);
      EXPECT_EQ(e.outcome, Outcome::kOk) << p.describe() << " " << config_to_json_text(c) << ": "
                                         << outcome_name(e.outcome) << " " << e.message;
    }
}

// gemm_tma_half's ping-pong consumers: both tiles that fit one consumer, on shapes off the tiles
// with more tiles than two per SM (2056 x 2120: 289 tiles of 128 x 128, 297 of 64 x 256, so blocks
// walk two or three and both consumers take turns, ending on either), every layout, C types,
// column-major C and beta (the register epilogue), the shared-memory one.
TEST_F(GpuEvaluatorTest, TmaHalfPingPongConfigsValidate) {
  if (evaluator_->device().arch != "sm_90") GTEST_SKIP() << "gemm_tma_half needs sm_90, this is " << evaluator_->device().arch;
  const KernelTemplate& t = *library().find("gemm_tma_half");
  const std::pair<int, int> tiles[] = {{128, 128}, {64, 256}, {128, 128}};
  int i = 0;
  for (auto [bm, bn] : tiles)
    for (const char* layout : {"NN", "NT", "TN", "TT"}) {
      const GemmProblem p = varied_half_problem(i % 3 ? 2056 : 1800, i % 2 ? 2120 : 2200, i % 2 ? 1000 : 1032, layout, i);
      ++i;
      const Config c =
          config_with(t, {{"BLOCK_M", bm},
                          {"BLOCK_N", bn},
                          {"PINGPONG", 1},
                          {"STAGES", i > 8 ? 6 : 4},
                          {"EPILOGUE_SMEM", p.c_layout == Layout::kRowMajor && p.beta == 0 && i % 3 != 1}});
      expect_valid_and_validated(t, p, c);
    }
}

// gemm_tma_half's tiles of 160 and 192 accumulators a thread (256 x 160, 256 x 192, ping-pong 128 x 160
// and 128 x 192, a 256 x 160 pair along M): every layout the width allows (160: a K-major B), the
// epilogues, C types, column-major C and beta, each epilogue path the rules allow, on shapes off the
// tiles with more tiles than SMs (blocks walk two or more; a ping-pong consumer ends on either turn).
TEST_F(GpuEvaluatorTest, TmaHalfWideAccumulatorConfigsValidate) {
  if (evaluator_->device().arch != "sm_90") GTEST_SKIP() << "gemm_tma_half needs sm_90, this is " << evaluator_->device().arch;
  const KernelTemplate& t = *library().find("gemm_tma_half");
  struct Tile {
    int block_m, block_n, pingpong, stages, regs, cluster_m = 1;
  };
  const Tile tiles[] = {{256, 160, 0, 4, 216}, {256, 192, 0, 3, 232}, {128, 160, 1, 5, 232},
                        {128, 192, 1, 4, 232}, {256, 160, 0, 4, 232, 2}};
  const Epilogue epilogues[] = {Epilogue::kNone, Epilogue::kBiasGelu, Epilogue::kBiasRow, Epilogue::kGelu,
                                Epilogue::kBiasCol};
  int i = 0;
  for (const Tile& tile : tiles)
    for (const char* layout : {"NN", "NT", "TN", "TT"}) {
      if (tile.block_n % 64 != 0 && (layout[1] == 'N')) continue;  // 160: B K-major only
      GemmProblem p = varied_half_problem(i % 2 ? 4104 : 2056, i % 3 ? 2120 : 3000, i % 2 ? 1032 : 1000, layout, i);
      p.epilogue = epilogues[i % 5];
      ++i;
      Config c = config_with(t, {{"BLOCK_M", tile.block_m},
                                 {"BLOCK_N", tile.block_n},
                                 {"PINGPONG", tile.pingpong},
                                 {"STAGES", tile.stages},
                                 {"CONSUMER_REGS", tile.regs},
                                 {"CLUSTER_M", tile.cluster_m}});
      // Each epilogue path in turn, or the next one the rules allow for this problem and tile.
      for (int es : {i % 3, 2, 1, 0}) {
        c["EPILOGUE_SMEM"] = es;
        if (t.space().validate(c, t.context(p, &evaluator_->device())).ok()) break;
      }
      expect_valid_and_validated(t, p, c);
    }
}

// gemm_tma_half's K clusters on decode shapes: M of 16 (72 for 128-row tiles), 100, 128 and 200 (a 64- or 128-row
// tile mostly or partly below the matrix), N on or off the tiles, K whose last shares are short or
// empty (1032 over 8 blocks), every layout, C in fp32 or the input type, row- and
// column-major, beta, the epilogues.
TEST_F(GpuEvaluatorTest, TmaHalfClusterKConfigsValidate) {
  if (evaluator_->device().arch != "sm_90") GTEST_SKIP() << "gemm_tma_half needs sm_90, this is " << evaluator_->device().arch;
  const KernelTemplate& t = *library().find("gemm_tma_half");
  struct Tile {
    int block_m, block_n, consumers, stages, cluster_k;
  };
  const Tile tiles[] = {{64, 256, 1, 4, 8}, {128, 256, 2, 4, 4}, {64, 128, 1, 6, 2}, {128, 128, 2, 3, 8}, {64, 64, 1, 5, 4}};
  const std::int64_t ms[] = {16, 100, 128, 200};
  const Epilogue epilogues[] = {Epilogue::kNone, Epilogue::kBiasRow, Epilogue::kBiasCol, Epilogue::kGelu,
                                Epilogue::kBiasGelu};
  int i = 0;
  for (const Tile& tile : tiles)
    for (const char* layout : {"NN", "NT", "TN", "TT"}) {
      // A 128-row tile needs more than 64 rows (the template's rule): 72 instead of 16.
      const std::int64_t m = tile.block_m == 128 && ms[i % 4] == 16 ? 72 : ms[i % 4];
      // All the blocks in one wave (the template's rule: 120 in clusters of 4 or 8 on 132 SMs): N of
      // as many tiles as fit, ending on a tile or 8 columns short of one.
      const std::int64_t cols = std::max<std::int64_t>(1, 120 / (tile.cluster_k * ((m + tile.block_m - 1) / tile.block_m)));
      const std::int64_t n = std::min<std::int64_t>(cols, 16) * tile.block_n - (i % 3 ? 8 : 0);
      GemmProblem p = varied_half_problem(m, n, i % 2 ? 1032 : 2048, layout, i);
      p.epilogue = epilogues[i % 4];
      ++i;
      const Config c = config_with(t, {{"BLOCK_M", tile.block_m},
                                       {"BLOCK_N", tile.block_n},
                                       {"CONSUMERS", tile.consumers},
                                       {"STAGES", tile.stages},
                                       {"PERSISTENT", 0},
                                       {"EPILOGUE_SMEM", 0},
                                       {"CLUSTER_K", tile.cluster_k},
                                       {"GROUP_M", 1}});
      expect_valid_and_validated(t, p, c);
    }
}

// gemm_tma_half's shared-memory epilogue where C's rows are not 16-byte aligned and the last
// 16-byte piece of a row is partial: N odd or 4 off a multiple of 8 (A row-major and B column-major,
// or both column-major, keep the operands' strides TMA's), C in every type, each epilogue, the
// cooperative, ping-pong and one-consumer schedules, ping-pong in 2x1 and 1x2 clusters, a 2x1 pair of 64 x 64
// tiles, and
// split-K (the shares gathered in the last block, which stores through the chunks).
TEST_F(GpuEvaluatorTest, TmaHalfSmemEpilogueOddColumnsValidate) {
  if (evaluator_->device().arch != "sm_90") GTEST_SKIP() << "gemm_tma_half needs sm_90, this is " << evaluator_->device().arch;
  const KernelTemplate& t = *library().find("gemm_tma_half");
  struct Tile {
    int block_m, block_n, consumers, pingpong, split_k = 1, cluster_m = 1, cluster_n = 1;
  };
  const Tile tiles[] = {{128, 256, 2, 0},    {128, 128, 2, 1},          {64, 256, 1, 0},
                        {128, 192, 2, 0},    {128, 256, 2, 0, 2},       {64, 256, 1, 0, 4},
                        {128, 128, 2, 1, 1, 2, 1}, {128, 128, 2, 1, 1, 1, 2}, {64, 64, 1, 0, 1, 2, 1}};
  const Epilogue epilogues[] = {Epilogue::kNone, Epilogue::kBiasCol, Epilogue::kGelu, Epilogue::kBiasGelu,
                                Epilogue::kBiasRow};
  const DType c_types[] = {DType::kBF16, DType::kF32, DType::kF16};
  const std::int64_t ns[] = {997, 1004, 1001, 1030};
  int i = 0;
  for (const Tile& tile : tiles)
    for (const char* layout : {"NT", "TT"}) {
      // The split-K rows on 1032 rows: 36 tiles of 128 x 256 in two (a unit a block), 68 of 64 x 256
      // in four (272 units: blocks walk two or three, splits of one tile among them).
      GemmProblem p = make(tile.split_k > 1 ? 1032 : i % 2 ? 1000 : 776, ns[i % 4], i % 3 ? 1000 : 1032, layout);
      p.a_type = p.b_type = i % 2 ? DType::kF16 : DType::kBF16;
      p.c_type = c_types[i % 3] == DType::kBF16 ? p.a_type : c_types[i % 3];
      p.alpha = i % 4 == 2 ? -1.5 : 1.0;
      p.epilogue = epilogues[i % 5];
      ++i;
      const Config c = config_with(t, {{"BLOCK_M", tile.block_m},
                                       {"BLOCK_N", tile.block_n},
                                       {"CONSUMERS", tile.consumers},
                                       {"PINGPONG", tile.pingpong},
                                       {"SPLIT_K", tile.split_k},
                                       {"CLUSTER_M", tile.cluster_m},
                                       {"CLUSTER_N", tile.cluster_n},
                                       {"STAGES", 4},
                                       {"EPILOGUE_SMEM", 1}});
      expect_valid_and_validated(t, p, c);
    }
}

// A gemm_tma_half schedule of the width tests: rows a tile, consumers, whether they take tiles in turn,
// a persistent grid, pairs along M, the K split and the epilogue path.
struct Schedule {
  int block_m, consumers, pingpong, persistent, cluster_m, split_k, epilogue_smem;
};
// The schedule at a tile width and stage count (one consumer gets 240 registers, two 232 each).
Config schedule_config(const KernelTemplate& t, const Schedule& s, int block_n, int stages) {
  return config_with(t, {{"BLOCK_M", s.block_m},
                         {"BLOCK_N", block_n},
                         {"CONSUMERS", s.consumers},
                         {"PINGPONG", s.pingpong},
                         {"PERSISTENT", s.persistent},
                         {"CLUSTER_M", s.cluster_m},
                         {"SPLIT_K", s.split_k},
                         {"CONSUMER_REGS", s.consumers == 1 ? 240 : 232},
                         {"STAGES", stages},
                         {"EPILOGUE_SMEM", s.epilogue_smem}});
}

// gemm_tma_half's tile widths that are not multiples of 64 (BLOCK_N 96, 160 and 224, B in 32-row
// boxes; 80 and 112 in 16-row boxes, with the register epilogue): the cooperative, one-consumer,
// ping-pong and cluster-pair schedules, split-K and the register epilogue, on shapes off the tiles
// (N not a multiple of 8: the partial last piece of a row, and the last tile's columns past N read
// as TMA's zero fill), both layouts with a K-major B, C in every type, alpha and the epilogues.
TEST_F(GpuEvaluatorTest, TmaHalfNarrowBoxWidthsValidate) {
  if (evaluator_->device().arch != "sm_90") GTEST_SKIP() << "gemm_tma_half needs sm_90, this is " << evaluator_->device().arch;
  const KernelTemplate& t = *library().find("gemm_tma_half");
  const Schedule schedules[] = {{128, 2, 0, 1, 1, 1, 1}, {128, 2, 0, 0, 1, 1, 0}, {64, 1, 0, 1, 1, 1, 1},
                                {64, 2, 1, 1, 1, 1, 1},  {128, 2, 0, 1, 2, 1, 1}, {128, 2, 0, 0, 1, 4, 0}};
  const Epilogue epilogues[] = {Epilogue::kNone, Epilogue::kBiasCol, Epilogue::kGelu, Epilogue::kBiasGelu,
                                Epilogue::kBiasRow};
  const DType c_types[] = {DType::kBF16, DType::kF32, DType::kF16};
  const std::int64_t ms[] = {1000, 520, 776, 2056};
  const std::int64_t ns[] = {997, 1004, 2120, 330};
  int i = 0;
  int checked = 0;
  for (int block_n : {80, 96, 112, 160, 224})
    for (const Schedule& s : schedules)
      for (const char* layout : {"NT", "TT"}) {
        // One block per unit needs more units than SMs: the larger shapes there; split in four, 60
        // tiles (5 x 12: a split needs fewer tiles than SMs). The widths under 128 take shapes of
        // fewer than two waves of 128-wide tiles (where the space allows them).
        const bool narrow = block_n < 128;
        GemmProblem p = s.split_k > 1 ? make(600 - 8 * (i % 4), 12 * block_n - 3 - 10 * (i % 3), i % 3 ? 1032 : 520, layout)
                        : s.persistent ? make(narrow ? std::min<std::int64_t>(ms[i % 4], 1032) : ms[i % 4],
                                              narrow ? std::min<std::int64_t>(ns[(i / 2) % 4], 1240) : ns[(i / 2) % 4],
                                              i % 3 ? 1032 : 200, layout)
                                       : make(3080 - 8 * (i % 4), (narrow ? 1004 : 2997) + 10 * (i % 3),
                                              i % 3 ? 1032 : 200, layout);
        p.a_type = p.b_type = i % 2 ? DType::kF16 : DType::kBF16;
        p.c_type = c_types[i % 3] == DType::kBF16 ? p.a_type : c_types[i % 3];
        p.alpha = i % 4 == 2 ? -1.5 : 1.0;
        p.epilogue = epilogues[i % 5];
        if (!s.epilogue_smem && i % 2) {  // the register epilogue also takes beta and a column-major C
          p.beta = 0.5;
          p.c_layout = Layout::kColMajor;
        }
        ++i;
        Schedule with_epilogue = s;
        if (block_n % 32 != 0) with_epilogue.epilogue_smem = 0;
        expect_valid_and_validated(t, p, schedule_config(t, with_epilogue, block_n, 4));
        ++checked;
      }
  EXPECT_EQ(checked, 60);
}

// gemm_tma_half's widths that fit tile counts to waves (BLOCK_N 144 and 176 in 256-row tiles, 208 and
// 240 in 128-row ones: B in 16-row boxes, allowed where the blocks fill at least 90% of their waves, not
// in pairs along M) and the TMA store's 48- and 16-column passes (those widths, and 80 and 112): the
// cooperative, one-consumer, ping-pong, cluster-pair (80, 112) and split schedules, persistent and
// not, on shapes whose tiles fill the device's SMs (11 tile rows, each one a partial tile, by as many
// columns as fit), both layouts with a K-major B, bf16 and fp16, C in both 16-bit types and fp32
// (register epilogue), alpha and the epilogues; then FP8 through the 16-column passes.
TEST_F(GpuEvaluatorTest, TmaHalfWaveFitWidthsValidate) {
  if (evaluator_->device().arch != "sm_90") GTEST_SKIP() << "gemm_tma_half needs sm_90, this is " << evaluator_->device().arch;
  const KernelTemplate& t = *library().find("gemm_tma_half");
  const int sms = evaluator_->device().multiprocessors;
  struct Case {
    int block_n;
    Schedule s;
  };
  const Case cases[] = {
      {144, {256, 2, 0, 1, 1, 1, 2}}, {144, {256, 2, 0, 0, 1, 1, 0}}, {176, {256, 2, 0, 1, 1, 1, 2}},
      {176, {256, 2, 0, 0, 1, 1, 0}}, {208, {128, 2, 0, 1, 1, 1, 2}}, {208, {128, 2, 0, 0, 1, 1, 0}},
      {208, {128, 2, 0, 1, 1, 2, 0}}, {240, {128, 2, 0, 1, 1, 1, 2}}, {240, {128, 2, 0, 0, 1, 1, 0}},
      {240, {128, 2, 0, 1, 1, 2, 0}}, {80, {128, 2, 0, 1, 1, 1, 2}},  {80, {64, 2, 1, 1, 1, 1, 2}},
      {80, {64, 1, 0, 1, 1, 1, 2}},   {80, {128, 2, 0, 1, 2, 1, 2}},  {112, {128, 2, 0, 1, 1, 1, 2}},
      {112, {64, 2, 1, 1, 1, 1, 2}},  {112, {64, 1, 0, 1, 1, 1, 2}},  {112, {128, 2, 0, 1, 2, 1, 2}}};
  const Epilogue epilogues[] = {Epilogue::kNone, Epilogue::kBiasCol, Epilogue::kGelu, Epilogue::kBiasGelu,
                                Epilogue::kBiasRow};
  int i = 0;
  for (const auto& [block_n, s] : cases) {
    // A grid of one tile a block needs more tiles than SMs: two waves of tile rows there; a split
    // fewer tiles than SMs: half the columns, split in two.
    const int rows = 11 * (s.persistent ? 1 : 2), columns = sms / (11 * s.split_k);
    GemmProblem p = make(rows * s.block_m - 40, columns * block_n - 8 * (1 + i % 3), i % 3 ? 1032 : 200,
                         i % 2 ? "TT" : "NT");
    p.a_type = p.b_type = i % 2 ? DType::kF16 : DType::kBF16;
    p.c_type = s.epilogue_smem == 2 ? (i % 4 == 1 ? (i % 2 ? DType::kBF16 : DType::kF16) : p.a_type)
                                    : (i % 3 == 0 ? DType::kF32 : p.a_type);
    p.alpha = i % 4 == 2 ? -1.5 : 1.0;
    p.epilogue = epilogues[i % 5];
    ++i;
    expect_valid_and_validated(t, p, schedule_config(t, s, block_n, s.block_m == 256 ? 3 : 4));
  }
  // FP8 (NT): the TMA store takes at most 64 accumulators a thread, so 80 and 112 only.
  const Config fp8[] = {
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 80}, {"STAGES", 6}, {"EPILOGUE_SMEM", 2}}),
      config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 112}, {"STAGES", 6}, {"PINGPONG", 1}, {"EPILOGUE_SMEM", 2}}),
  };
  for (const Config& c : fp8)
    for (int v = 0; v < 4; ++v, ++i) {
      GemmProblem p = varied_fp8_problem(11 * c.at("BLOCK_M") - 40, sms / 11 * c.at("BLOCK_N") - 8, v % 2 ? 1040 : 2000, i);
      if (p.c_type == DType::kF32) p.c_type = DType::kBF16;  // the TMA store writes 16-bit C
      p.epilogue = epilogues[i % 5];
      ASSERT_TRUE(p.validate().ok()) << p.describe() << ": " << p.validate().message();
      expect_valid_and_validated(t, p, c);
    }
}

// gemm_tma_half on FP8 inputs (NT): each slice's FP8 products promoted into fp32, unscaled and
// per-tensor scales (on alpha), e4m3 and e5m2, C in every type, the cooperative, ping-pong, cluster
// and split schedules, one or two slices a promotion or promotions overlapped with the next slice,
// shapes off the tiles (K not a multiple of the 128-deep slice) and epilogues.
TEST_F(GpuEvaluatorTest, TmaHalfOnFp8ValidatesUnscaledAndPerTensor) {
  if (evaluator_->device().arch != "sm_90") GTEST_SKIP() << "gemm_tma_half needs sm_90, this is " << evaluator_->device().arch;
  const KernelTemplate& t = *library().find("gemm_tma_half");
  const Config configs[] = {
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5}, {"PERSISTENT", 1}}),
      config_with(
          t,
          {{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"STAGES", 6}, {"PERSISTENT", 1}, {"PINGPONG", 1}}),
      config_with(
          t,
          {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 4}, {"PERSISTENT", 1}, {"CLUSTER_M", 2}}),
      config_with(
          t, {{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"STAGES", 6}, {"PERSISTENT", 0}, {"SPLIT_K", 4}}),
      config_with(t, {{"BLOCK_M", 128},
                      {"BLOCK_N", 160},
                      {"STAGES", 4},
                      {"PERSISTENT", 1},
                      {"GROUP_M", 4},
                      {"PROMOTE_SLICES", 2}}),
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 192}, {"STAGES", 4}, {"PERSISTENT", 1}}),
      config_with(t, {{"BLOCK_M", 64},
                      {"BLOCK_N", 128},
                      {"STAGES", 6},
                      {"PERSISTENT", 1},
                      {"PINGPONG", 1},
                      {"PROMOTE_SLICES", 2}}),
      config_with(t, {{"BLOCK_M", 128},
                      {"BLOCK_N", 128},
                      {"STAGES", 5},
                      {"PERSISTENT", 1},
                      {"CLUSTER_N", 2},
                      {"PROMOTE_SLICES", 2}}),
      // Overlapped promotion: two product buffers, odd and even slice counts per tile.
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5}, {"PERSISTENT", 1}, {"PROMOTE_OVERLAP", 1}}),
      config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"STAGES", 8}, {"PINGPONG", 1}, {"PROMOTE_OVERLAP", 1}}),
      // Narrow tiles in 16-row boxes of B (the register epilogue), split along K.
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 80}, {"STAGES", 6}, {"PERSISTENT", 1}, {"SPLIT_K", 2},
                      {"EPILOGUE_SMEM", 0}, {"PROMOTE_OVERLAP", 1}}),
      config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 112}, {"STAGES", 6}, {"PERSISTENT", 1}, {"PINGPONG", 1},
                      {"EPILOGUE_SMEM", 0}, {"PROMOTE_SLICES", 2}}),
      // Three consumers of 64 rows each.
      config_with(t, {{"BLOCK_M", 192}, {"BLOCK_N", 128}, {"CONSUMERS", 3}, {"CONSUMER_REGS", 152}, {"STAGES", 5},
                      {"PERSISTENT", 1}, {"EPILOGUE_SMEM", 0}}),
  };
  const Epilogue epilogues[] = {Epilogue::kNone, Epilogue::kBiasCol, Epilogue::kGelu,
                                Epilogue::kBiasRow};
  int i = 0;
  for (const Config& c : configs)
    for (int v = 0; v < 8; ++v, ++i) {  // every type pair, unscaled and per-tensor, for each config
      // Splits on 1000 x 520 (72 tiles of 128 x 64 in four, a block a unit; 56 of 128 x 80 in two).
      const bool split = c.at("SPLIT_K") > 1;
      GemmProblem p = varied_fp8_problem(split ? 1000 : 520 + 8 * (i % 3), split ? 520 : 776,
                                         i % 2 ? 1040 : 2000, i);
      p.epilogue = epilogues[i % 4];
      ASSERT_TRUE(p.validate().ok()) << p.describe() << ": " << p.validate().message();
      expect_valid_and_validated(t, p, c);
    }
  // Overlapped with two slices a buffer (per-tensor): tiles of 9, 10, 11 and 12 slices, so that
  // the loop ends after each of its four steps (a pair's first or second slice, in either buffer).
  for (const Config& c :
       {config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5}, {"PERSISTENT", 1}, {"PROMOTE_OVERLAP", 1},
                        {"PROMOTE_SLICES", 2}}),
        config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"STAGES", 8}, {"PINGPONG", 1}, {"PROMOTE_OVERLAP", 1},
                        {"PROMOTE_SLICES", 2}})})
    for (int k : {1040, 1280, 1408, 1536}) {
      GemmProblem p = varied_fp8_problem(520, 776, k, i++);
      p.epilogue = epilogues[i % 4];
      ASSERT_TRUE(p.validate().ok()) << p.describe() << ": " << p.validate().message();
      expect_valid_and_validated(t, p, c);
    }
}

// gemm_tma_half on block-scaled FP8 (1 x 128 factors for A, 128 x 128 for B, TS_BLOCK_SCALES):
// every slice promoted with its factors, tiles that span one, two and three 128-column blocks
// (128 wide, 160 wide off the blocks' grid), cooperative, ping-pong, split-K, a K cluster and a
// 2-block cluster along M, each also with the promotion overlapped (PROMOTE_OVERLAP); partial last
// blocks of K, M and N off the tiles, every type pair and C type, fused epilogues, and three
// consumers (192-row tiles). The reference
// applies the same factors in fp32.
TEST_F(GpuEvaluatorTest, TmaHalfOnFp8ValidatesBlockScales) {
  if (evaluator_->device().arch != "sm_90") GTEST_SKIP() << "gemm_tma_half needs sm_90, this is " << evaluator_->device().arch;
  const KernelTemplate& t = *library().find("gemm_tma_half");
  const Config configs[] = {
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5}, {"PERSISTENT", 1}}),
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 160}, {"STAGES", 4}, {"PERSISTENT", 1}, {"GROUP_M", 4}}),
      config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 160}, {"STAGES", 6}, {"PERSISTENT", 1}, {"PINGPONG", 1}}),
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"STAGES", 6}, {"PERSISTENT", 0}, {"SPLIT_K", 4}}),
      config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"CONSUMERS", 1}, {"CONSUMER_REGS", 240}, {"STAGES", 8},
                      {"CLUSTER_K", 4}, {"EPILOGUE_SMEM", 0}, {"PERSISTENT", 0}}),
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 4}, {"PERSISTENT", 1}, {"CLUSTER_M", 2}}),
      // Overlapped promotion: each slice's factors applied one slice later, from the other buffer.
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5}, {"PERSISTENT", 1}, {"PROMOTE_OVERLAP", 1}}),
      config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"STAGES", 8}, {"PERSISTENT", 1}, {"PINGPONG", 1},
                      {"PROMOTE_OVERLAP", 1}}),
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"STAGES", 6}, {"PERSISTENT", 0}, {"SPLIT_K", 4},
                      {"PROMOTE_OVERLAP", 1}}),
      config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 128}, {"CONSUMERS", 1}, {"CONSUMER_REGS", 240}, {"STAGES", 8},
                      {"CLUSTER_K", 4}, {"EPILOGUE_SMEM", 0}, {"PERSISTENT", 0}, {"PROMOTE_OVERLAP", 1}}),
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 4}, {"PERSISTENT", 1}, {"CLUSTER_M", 2},
                      {"PROMOTE_OVERLAP", 1}}),
      // 80 columns from a start off the 128-column blocks: one or two of B's factors a tile.
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 80}, {"STAGES", 6}, {"PERSISTENT", 1}, {"EPILOGUE_SMEM", 0},
                      {"PROMOTE_OVERLAP", 1}}),
      // Three consumers of 64 rows each (each its rows' factors), alone and in a pair along M.
      config_with(t, {{"BLOCK_M", 192}, {"BLOCK_N", 128}, {"CONSUMERS", 3}, {"CONSUMER_REGS", 152}, {"STAGES", 5},
                      {"PERSISTENT", 1}, {"EPILOGUE_SMEM", 0}}),
      config_with(t, {{"BLOCK_M", 192}, {"BLOCK_N", 128}, {"CONSUMERS", 3}, {"CONSUMER_REGS", 152}, {"STAGES", 4},
                      {"PERSISTENT", 1}, {"EPILOGUE_SMEM", 0}, {"CLUSTER_M", 2}}),
  };
  const Epilogue epilogues[] = {Epilogue::kNone, Epilogue::kBiasCol, Epilogue::kGelu, Epilogue::kBiasRow};
  int i = 0;
  for (const Config& c : configs)
    for (int v = 0; v < 4; ++v, ++i) {
      // A K cluster needs fewer tiles than SMs; split-K without a persistent grid more units than
      // SMs from fewer tiles (1000 x 520: 72 tiles in four).
      const bool few = c.at("CLUSTER_K") > 1, split = c.at("SPLIT_K") > 1;
      GemmProblem p = varied_fp8_problem(few ? 200 : split ? 1000 : 520 + 8 * (i % 3), few ? 392 : split ? 520 : 776,
                                         i % 2 ? 1040 : 2000, 2 * i);
      p.scaling = Scaling::kBlock;
      p.scale_a = p.scale_b = 1.0;
      p.epilogue = epilogues[i % 4];
      ASSERT_TRUE(p.validate().ok()) << p.describe() << ": " << p.validate().message();
      expect_valid_and_validated(t, p, c);
    }
}

// EPILOGUE_SMEM 2: C through shared memory and the tensor memory accelerator's store. Tiles off
// C's edges (clipped by the unit), every fused epilogue, alpha, both 16-bit C types, every
// layout of A and B, the cooperative, ping-pong, 256-row and cluster schedules, 64- and 32-column
// passes, and FP8.
TEST_F(GpuEvaluatorTest, TmaHalfTmaStoreEpilogueValidates) {
  if (evaluator_->device().arch != "sm_90") GTEST_SKIP() << "gemm_tma_half needs sm_90, this is " << evaluator_->device().arch;
  const KernelTemplate& t = *library().find("gemm_tma_half");
  const Config configs[] = {
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 256}, {"STAGES", 4}, {"EPILOGUE_SMEM", 2}}),
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 6}, {"PINGPONG", 1}, {"EPILOGUE_SMEM", 2}}),
      config_with(t, {{"BLOCK_M", 256}, {"BLOCK_N", 128}, {"STAGES", 4}, {"EPILOGUE_SMEM", 2}}),
      config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 192}, {"STAGES", 6}, {"PINGPONG", 1}, {"EPILOGUE_SMEM", 2}}),
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5}, {"CLUSTER_M", 2}, {"EPILOGUE_SMEM", 2}}),
      // Not persistent: one tile a block, so more tiles than SMs (the rule that keeps a grid of
      // fewer tiles persistent): one consumer on 64 x 64 gives 208-221 on these shapes.
      config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"CONSUMERS", 1}, {"STAGES", 6}, {"PERSISTENT", 0}, {"EPILOGUE_SMEM", 2}}),
      // Widths that are not multiples of 64: 32-column passes through a 32-wide C box.
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 160}, {"STAGES", 5}, {"EPILOGUE_SMEM", 2}}),
      config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 224}, {"STAGES", 5}, {"PINGPONG", 1}, {"EPILOGUE_SMEM", 2}}),
      // Split-K: the share that finishes last gathers the others and stores through the TMA (two
      // shares of 128 x 128 and of 128 x 160, a unit a block; four of 64 x 256 with one consumer:
      // 2-3 units a block, shares of one tile in different blocks' turns).
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5}, {"SPLIT_K", 2}, {"EPILOGUE_SMEM", 2}}),
      config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 160}, {"STAGES", 5}, {"SPLIT_K", 2}, {"EPILOGUE_SMEM", 2}}),
      config_with(t, {{"BLOCK_M", 64}, {"BLOCK_N", 256}, {"CONSUMERS", 1}, {"STAGES", 4}, {"SPLIT_K", 4}, {"EPILOGUE_SMEM", 2}}),
  };
  const Epilogue epilogues[] = {Epilogue::kBiasGelu, Epilogue::kNone, Epilogue::kBiasRow, Epilogue::kGelu,
                                Epilogue::kBiasCol, Epilogue::kLeakyRelu};
  const char* layouts[] = {"NT", "NN", "TT", "TN"};
  int i = 0;
  for (const Config& c : configs)
    for (int v = 0; v < 3; ++v, ++i) {
      // 160- and 224-wide tiles read B K-major only (its 32-row boxes): NT and TT.
      const bool narrow = c.at("BLOCK_N") % 64 != 0;
      GemmProblem p = make(1000 + 24 * (i % 3), 776 + 64 * (i % 2), 1000 + 24 * (i % 4),
                           narrow ? layouts[2 * (i % 2)] : layouts[i % 4]);
      p.a_type = p.b_type = i % 2 ? DType::kF16 : DType::kBF16;
      p.c_type = v == 1 ? (p.a_type == DType::kF16 ? DType::kBF16 : DType::kF16) : p.a_type;
      p.alpha = i % 4 == 1 ? -1.5 : 1.0;
      p.epilogue = epilogues[i % 6];
      expect_valid_and_validated(t, p, c);
    }
  // FP8 (NT) into bf16 C, two slices a promotion.
  GemmProblem f8 = make(1000, 776, 2000, "NT");
  f8.a_type = DType::kE4M3;
  f8.b_type = DType::kE5M2;
  f8.c_type = DType::kBF16;
  f8.epilogue = Epilogue::kBiasGelu;
  f8.scaling = Scaling::kPerTensor;
  f8.scale_a = 0.0625, f8.scale_b = 3.0;
  expect_valid_and_validated(
      t, f8, config_with(t, {{"BLOCK_M", 128}, {"BLOCK_N", 128}, {"STAGES", 5}, {"PROMOTE_SLICES", 2}, {"EPILOGUE_SMEM", 2}}));
}

}  // namespace
}  // namespace tilesmith::gpu_test
