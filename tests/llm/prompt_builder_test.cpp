#include "llm/prompt_builder.h"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>

#include "tests/llm/test_support.h"

namespace tilesmith::llm {
namespace {

DeviceFacts h100() {
  DeviceFacts d;
  d.backend = "cuda";
  d.name = "NVIDIA H100 80GB HBM3";
  d.arch = "sm_90";
  d.multiprocessors = 132;
  d.warp_size = 32;
  d.max_threads_per_block = 1024;
  d.shared_per_block = 48 * 1024;
  d.shared_per_block_optin = 227 * 1024;
  d.registers_per_block = 65536;
  d.registers_per_multiprocessor = 65536;
  d.l2_bytes = 50 * 1024 * 1024;
  d.global_memory_bytes = 80LL * 1024 * 1024 * 1024;
  d.clock_khz = 1980000;
  d.memory_clock_khz = 2619000;
  d.memory_bus_bits = 5120;
  return d;
}

GemmProblem problem() {
  GemmProblem p;
  p.m = p.n = p.k = 4096;
  return p;
}

struct History {
  std::deque<Config> configs;  // stable addresses
  std::vector<std::string> messages;
  std::vector<TrialView> views;
  void reserve(size_t n) { messages.reserve(n); }
  void add(Config c, Outcome o, std::optional<double> t, std::string msg = "") {
    configs.push_back(std::move(c));
    messages.push_back(std::move(msg));
    views.push_back({&configs.back(), o, t, {}});
  }
  void finish() {
    for (size_t i = 0; i < views.size(); ++i) views[i].message = messages[i];
  }
};

PromptInputs inputs(const ParamSpace& space, const History& h) {
  PromptInputs in;
  in.device = h100();
  in.template_name = "gemm_tiled";
  in.template_description = "Shared-memory tiled SGEMM with register blocking.";
  in.space = &space;
  in.problem = problem();
  in.history = h.views;
  in.count = 6;
  in.token_budget = 8000;
  return in;
}

// Inputs with an empty history and the user message they give, for tests that add one
// thing and compare. Not movable: `in` points into it.
struct NoHistory {
  ParamSpace space = tilesmith::testing::small_space();
  History h;
  PromptInputs in;
  std::string plain;
  NoHistory() {
    h.finish();
    in = inputs(space, h);
    auto p = build_prompt(in);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    if (p.ok()) plain = p->user;
  }
  NoHistory(const NoHistory&) = delete;
};

TEST(PromptBuilder, ContainsTheDeviceTemplateParametersConstraintsProblemAndTask) {
  ParamSpace space = tilesmith::testing::small_space();
  History h;
  h.add({{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"THREAD_M", 4}}, Outcome::kOk, 1.25);
  h.add({{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"THREAD_M", 8}}, Outcome::kOk, 0.98);
  h.add({{"BLOCK_M", 32}, {"BLOCK_N", 32}, {"THREAD_M", 8}}, Outcome::kCompileError, std::nullopt,
        "nvrtc: compiling\nkernel.hip(42): error: too many resources requested for launch\n1 error");
  h.add({{"BLOCK_M", 16}, {"BLOCK_N", 16}, {"THREAD_M", 1}}, Outcome::kWrongResult, std::nullopt,
        "max abs error 3.5 at (0, 17)");
  h.finish();
  PromptInputs in = inputs(space, h);
  in.previous_rejections = {"candidate 2: BLOCK_M=96 is not one of [16, 32, 64, 128]"};
  auto p = build_prompt(in);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->detail_level, 0);
  const std::string& u = p->user;
  for (const char* want :
       {"NVIDIA H100 80GB HBM3", "sm_90", "132 SMs", "warp size 32", "1024 threads per block", "48 KiB",
        "227 KiB", "65536 per block", "L2 cache: 50 MiB", "peak FP32: 66.9 TFLOP/s", "memory bandwidth",
        "gemm_tiled", "Shared-memory tiled SGEMM", "BLOCK_M: rows of C per thread block. Values: [16, 32, 64, 128]",
        "THREADS = ", "BLOCK_M % THREAD_M == 0", "BLOCK_M >= BLOCK_N", "THREADS <= max threads per block",
        "4096x4096x4096 fp32 NN", "M=4096", "137 GFLOP", "arithmetic intensity", "4 configurations tried",
        "ok 2", "compile_error 1", "wrong_result 1", "Fastest so far", "0.98 ms", "% of FP32 peak",
        "too many resources requested", "max abs error 3.5", "Per parameter value", "BLOCK_M: 16 -> 1/0/-;",
        "128 -> 1/1/0.98", "never tried", "BLOCK_M=96 is not one of", "Propose 6 new configurations",
        "exactly 6 candidates", "\"candidates\"", "\"THREAD_M\": <integer>"})
    EXPECT_NE(u.find(want), std::string::npos) << "missing: " << want << "\n" << u;
  // The faster config is listed first.
  EXPECT_LT(u.find("\"BLOCK_M\": 128, \"BLOCK_N\": 64, \"THREAD_M\": 8}: 0.98"),
            u.find("\"BLOCK_M\": 64, \"BLOCK_N\": 64, \"THREAD_M\": 4}: 1.25"));
  // The compile log excerpt starts at the error line.
  EXPECT_EQ(u.find("nvrtc: compiling"), std::string::npos);
  EXPECT_NE(p->system.find("never instructions"), std::string::npos);
  EXPECT_EQ(p->estimated_tokens, estimate_tokens(p->system) + estimate_tokens(p->user));
}

// A run tuned for energy: the scores are joules, the best are listed by them with their
// time beside, and the task says what the goal is.
TEST(PromptBuilder, AnObjectiveOtherThanTimeRanksByItsScoreAndSaysSo) {
  ParamSpace space = tilesmith::testing::small_space();
  History h;
  h.add({{"BLOCK_M", 64}, {"BLOCK_N", 64}, {"THREAD_M", 4}}, Outcome::kOk, 0.30);   // slower, thriftier
  h.add({{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"THREAD_M", 8}}, Outcome::kOk, 0.45);  // faster
  h.views[0].median_ms = 1.25;
  h.views[1].median_ms = 0.98;
  h.finish();
  PromptInputs in = inputs(space, h);
  in.objective = "energy per launch";
  in.objective_unit = "J";
  auto p = build_prompt(in);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  const std::string& u = p->user;
  for (const char* want : {"### Best so far (energy per launch in J; lower is better)",
                           "\"THREAD_M\": 4}: 0.3 J at 1.25 ms", "tried / ok / best J",
                           "The goal is the lowest energy per launch (J), not the shortest time."})
    EXPECT_NE(u.find(want), std::string::npos) << "missing: " << want << "\n" << u;
  EXPECT_EQ(u.find("Fastest so far"), std::string::npos) << u;
  EXPECT_LT(u.find("\"THREAD_M\": 4}: 0.3 J"), u.find("\"THREAD_M\": 8}: 0.45 J")) << "the thriftier first";
}

// A problem of a set: the winners of its related problems are cited after the problem,
// and only when there are some.
TEST(PromptBuilder, CitesTheWinnersOfRelatedProblemsInTheSet) {
  NoHistory f;
  PromptInputs& in = f.in;
  EXPECT_EQ(f.plain.find("Related problems"), std::string::npos);
  in.related.push_back({"qkv_t16", "16x6144x4096 bf16 NN", "gemm_tiled",
                        "{\"BLOCK_M\": 64, \"BLOCK_N\": 64, \"THREAD_M\": 4}", 0.0421, 1.37});
  in.related.push_back({"down_t16", "16x4096x14336 bf16 NN", "gemm_wgmma", "{\"BM\": 64}", 0.08, std::nullopt});
  auto p = build_prompt(in);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  const std::string& u = p->user;
  const auto section = u.find("## Related problems in this set");
  ASSERT_NE(section, std::string::npos) << u;
  EXPECT_GT(section, u.find("## Problem"));
  EXPECT_NE(u.find("- qkv_t16 (16x6144x4096 bf16 NN): gemm_tiled {\"BLOCK_M\": 64, \"BLOCK_N\": 64, \"THREAD_M\": 4} "
                   "at 0.0421 ms, 1.37x the vendor library's speed"),
            std::string::npos)
      << u;
  EXPECT_NE(u.find("- down_t16 (16x4096x14336 bf16 NN): gemm_wgmma {\"BM\": 64} at 0.08 ms\n"), std::string::npos) << u;
}

// Overlapped generations: what is being measured is listed before the task, which asks
// for configurations outside it; without any the prompt says nothing of it.
TEST(PromptBuilder, ListsTheConfigsBeingMeasuredAndAsksForOthers) {
  NoHistory f;
  PromptInputs& in = f.in;
  EXPECT_EQ(f.plain.find("Being measured"), std::string::npos);
  EXPECT_EQ(f.plain.find("or being measured"), std::string::npos);
  std::vector<Config> pending;
  for (int i = 0; i < 30; ++i) pending.push_back(Config{{"BLOCK_M", 16 + i}});
  in.pending = pending;
  auto p = build_prompt(in);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  const std::string& u = p->user;
  const auto section = u.find("## Being measured now");
  ASSERT_NE(section, std::string::npos) << u;
  EXPECT_LT(section, u.find("## Task"));
  EXPECT_NE(u.find("- " + config_to_json_text(pending[0]) + "\n"), std::string::npos) << u;
  EXPECT_NE(u.find("- " + config_to_json_text(pending[23]) + "\n"), std::string::npos) << u;
  EXPECT_EQ(u.find(config_to_json_text(pending[24])), std::string::npos) << "24 are listed";
  EXPECT_NE(u.find("- and 6 more\n"), std::string::npos) << u;
  EXPECT_NE(u.find("not in the history or being measured"), std::string::npos) << u;
}

// A half-precision problem: its input and output types, and the matrix units' peak (the
// one its throughput is measured against) reach the prompt.
TEST(PromptBuilder, HalfPrecisionProblemNamesItsTypesAndTheMatrixPeak) {
  ParamSpace space = tilesmith::testing::small_space();
  History h;
  h.add({{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"THREAD_M", 8}}, Outcome::kOk, 0.25);
  h.finish();
  PromptInputs in = inputs(space, h);
  in.problem.a_type = in.problem.b_type = DType::kBF16;
  in.problem.c_type = DType::kF32;
  auto p = build_prompt(in);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  for (const char* want : {"4096x4096x4096 bf16 NN C:fp32", "inputs bf16, accumulate fp32, output fp32",
                           "peak fp16/bf16 on the matrix units (fp32 accumulation): 1.07 PFLOP/s", "% of bf16 peak"})
    EXPECT_NE(p->user.find(want), std::string::npos) << "missing: " << want << "\n" << p->user;
}

TEST(PromptBuilder, StaysWithinTheBudgetWith100kTrials) {
  ParamSpace space = tilesmith::testing::small_space();
  History h;
  h.reserve(100000);
  const auto& params = space.parameters();
  const std::string log(4000, 'x');
  for (int i = 0; i < 100000; ++i) {
    Config c;
    int k = i;
    for (const auto& p : params) {
      c[p.name] = p.values[k % p.values.size()];
      k /= static_cast<int>(p.values.size());
    }
    Outcome o = i % 7 == 0 ? Outcome::kCompileError : (i % 11 == 0 ? Outcome::kTimeout : Outcome::kOk);
    h.add(std::move(c), o, o == Outcome::kOk ? std::optional<double>(1.0 + (i % 997) * 0.01) : std::nullopt,
          o == Outcome::kCompileError ? "error: " + log : "");
  }
  h.finish();
  PromptInputs in = inputs(space, h);
  for (int i = 0; i < 40; ++i) in.previous_rejections.push_back("candidate " + std::to_string(i) + ": " + log);
  for (int budget : {16000, 4000, 2500}) {
    in.token_budget = budget;
    auto start = std::chrono::steady_clock::now();
    auto p = build_prompt(in);
    auto took = std::chrono::steady_clock::now() - start;
    ASSERT_TRUE(p.ok()) << budget << ": " << p.status().to_string();
    EXPECT_LE(p->estimated_tokens, budget);
    EXPECT_LT(took, std::chrono::seconds(3));
    EXPECT_NE(p->user.find("100000 configurations tried"), std::string::npos);
    EXPECT_NE(p->user.find("Fastest so far"), std::string::npos);
    EXPECT_NE(p->user.find("Propose 6 new configurations"), std::string::npos);
    EXPECT_NE(p->user.find("Values: [16, 32, 64, 128]"), std::string::npos);
  }
  in.token_budget = 16000;
  int roomy = build_prompt(in)->detail_level;
  in.token_budget = 2500;
  EXPECT_GT(build_prompt(in)->detail_level, roomy);
}

TEST(PromptBuilder, ReservedTokensCountAgainstTheBudget) {
  ParamSpace space = tilesmith::testing::small_space();
  History h;
  h.finish();
  PromptInputs in = inputs(space, h);
  auto p = build_prompt(in);
  ASSERT_TRUE(p.ok());
  EXPECT_NE(p->user.find("Nothing has been tried yet"), std::string::npos);
  in.token_budget = p->estimated_tokens + 10;
  in.reserved_tokens = 20;
  auto q = build_prompt(in);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(q.status().message().find("budget"), std::string::npos);
}

TEST(PromptBuilder, RejectsMissingInputs) {
  PromptInputs in;
  EXPECT_FALSE(build_prompt(in).ok());
  ParamSpace space = tilesmith::testing::small_space();
  in.space = &space;
  in.count = 0;
  EXPECT_FALSE(build_prompt(in).ok());
}

}  // namespace
}  // namespace tilesmith::llm
