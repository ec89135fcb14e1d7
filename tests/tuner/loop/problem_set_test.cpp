// The problem-set file: what it reads, the names it derives, the errors that name the
// entry and the field, the set as run and the check on resume; and the example sets
// shipped in data/problems.

#include <set>
#include <tuple>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tuner/loop/problem_set.h"
#include "tuner/loop/progress.h"

namespace tilesmith {
namespace {
using nlohmann::json;

Result<ProblemSet> parse(const std::string& text) { return problem_set_from_json(json::parse(text), "set.json"); }

std::string error_of(const std::string& text) {
  auto s = parse(text);
  EXPECT_FALSE(s.ok()) << text;
  return s.ok() ? "" : s.status().message();
}

TEST(ProblemSetFile, ReadsEntriesWithDefaultsAndDerivedNames) {
  auto s = parse(R"({"name": "demo", "source": "by hand", "problems": [
      {"name": "qkv_t16", "count": 32, "m": 16, "n": 6144, "k": 4096, "dtype": "bf16"},
      {"m": 128, "n": 4096, "k": 4096},
      {"m": 8, "n": 8, "k": 8, "dtype": "fp16", "c_dtype": "fp32", "c_layout": "col", "beta": 0.5, "epilogue": "relu"}]})");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->name, "demo");
  EXPECT_EQ(s->source, "by hand");
  ASSERT_EQ(s->entries.size(), 3u);
  EXPECT_EQ(s->entries[0].name, "qkv_t16");
  EXPECT_EQ(s->entries[0].count, 32);
  EXPECT_EQ(s->entries[0].problem.a_type, DType::kBF16);
  EXPECT_EQ(s->entries[1].name, "m128_n4096_k4096_fp32_NN");
  EXPECT_EQ(s->entries[1].count, 1);
  EXPECT_EQ(s->entries[2].name, "m8_n8_k8_fp16_NN_cfp32_ccol_beta0p5_relu");
  EXPECT_EQ(problem_name_error(s->entries[2].name), "");
}

TEST(ProblemSetFile, SetNameDefaultsToTheFileName) {
  auto s = problem_set_from_json(json::parse(R"({"problems": [{"m": 1, "n": 2, "k": 3}]})"), "data/llama.json");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->name, "llama");
}

TEST(ProblemSetFile, ErrorsNameTheEntryAndTheField) {
  EXPECT_NE(error_of(R"([1, 2])").find("JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"problems": []})").find("\"problems\" must be a non-empty array"), std::string::npos);
  std::string e = error_of(R"({"problems": [{"m": 1, "n": 2, "k": 3}, {"name": "b", "m": 1, "n": 2}]})");
  EXPECT_NE(e.find("problems[1] ('b')"), std::string::npos) << e;
  EXPECT_NE(e.find("\"k\""), std::string::npos) << e;
  e = error_of(R"({"problems": [{"name": "a", "m": 1, "n": 2, "k": 3, "count": 0}]})");
  EXPECT_NE(e.find("problems[0] ('a'): \"count\" must be a whole number of at least 1"), std::string::npos) << e;
  e = error_of(R"({"problems": [{"m": 1, "n": 2, "k": 3, "dtpye": "bf16"}]})");
  EXPECT_NE(e.find("problems[0] has an unknown field \"dtpye\""), std::string::npos) << e;
  e = error_of(R"({"problems": [{"m": 1, "n": 2, "k": 3, "dtype": "int3"}]})");
  EXPECT_NE(e.find("problems[0]: "), std::string::npos) << e;
  EXPECT_NE(e.find("int3"), std::string::npos) << e;
  e = error_of(R"({"problems": [{"name": "x/y", "m": 1, "n": 2, "k": 3}]})");
  EXPECT_NE(e.find("the name 'x/y' holds '/'"), std::string::npos) << e;
  e = error_of(R"({"problems": [{"name": ".hidden", "m": 1, "n": 2, "k": 3}]})");
  EXPECT_NE(e.find("starts with '.'"), std::string::npos) << e;
  e = error_of(R"({"problems": [{"name": "a", "m": 1, "n": 2, "k": 3}, {"name": "a", "m": 4, "n": 2, "k": 3}]})");
  EXPECT_NE(e.find("problems[1] ('a'): the name 'a' is taken by an earlier entry"), std::string::npos) << e;
  e = error_of(R"({"problems": [{"m": 1, "n": 2, "k": 3}, {"m": 1, "n": 2, "k": 3, "count": 2}]})");
  EXPECT_NE(e.find("give each a \"name\""), std::string::npos) << e;
  EXPECT_EQ(error_of(R"({"problems": [{"m": 0, "n": 2, "k": 3}]})").rfind("set.json: problems[0]: ", 0), 0u);
}

TEST(ProblemSetFile, SetAsRunRoundTripsAndResumeSaysWhatDiffers) {
  auto s = parse(R"({"name": "demo", "problems": [{"name": "a", "count": 2, "m": 16, "n": 64, "k": 32},
                                                    {"name": "b", "m": 32, "n": 64, "k": 32}]})");
  ASSERT_TRUE(s.ok());
  const json as_run = problem_set_to_json(*s);
  EXPECT_EQ(as_run["problems"][0]["folder"], "a");
  EXPECT_EQ(as_run["problems"][0]["count"], 2);
  EXPECT_EQ(as_run["problems"][1]["problem"]["m"], 32);
  auto back = problem_from_json(as_run["problems"][1]["problem"]);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->key(), s->entries[1].problem.key());
  EXPECT_TRUE(check_same_problem_set(as_run, *s, "DIR/problem_set.json").ok());

  auto other = *s;
  other.entries[1].problem.k = 64;
  Status st = check_same_problem_set(as_run, other, "DIR/problem_set.json");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("entry 1 ('b') was 32x64x32 fp32 NN, now 32x64x64 fp32 NN"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("another --results folder"), std::string::npos);
  other = *s;
  other.entries[0].count = 3;
  st = check_same_problem_set(as_run, other, "p");
  EXPECT_NE(st.message().find("entry 0 ('a') had count 2, now 3"), std::string::npos) << st.message();
  other = *s;
  other.entries.pop_back();
  st = check_same_problem_set(as_run, other, "p");
  EXPECT_NE(st.message().find("entry 1 ('b') is no longer in the file"), std::string::npos) << st.message();
  other = *s;
  other.entries[0].name = "z";
  st = check_same_problem_set(as_run, other, "p");
  EXPECT_NE(st.message().find("entry 0 was named 'a', now 'z'"), std::string::npos) << st.message();
}

// The shipped sets read, and hold the Llama 3 8B shapes they promise.
TEST(ProblemSetFile, ShippedExamplesRead) {
  const std::string dir = std::string(TILESMITH_SOURCE_DIR) + "/data/problems/";
  for (const char* file : {"llama3_8b_bf16.json", "llama3_8b_fp32.json", "llama3_8b_bf16_decode.json"}) {
    auto s = read_problem_set(dir + file);
    ASSERT_TRUE(s.ok()) << file << ": " << s.status().to_string();
    EXPECT_NE(s->source.find("hidden_size 4096"), std::string::npos) << file;
    std::set<std::int64_t> ns, ms;
    for (const auto& e : s->entries) {
      ns.insert(e.problem.n);
      ms.insert(e.problem.m);
      EXPECT_EQ(e.count, 32) << file << " " << e.name;
      EXPECT_EQ(e.problem.layout_code(), "NN");
      EXPECT_EQ(e.problem.a_type, std::string(file).find("fp32") != std::string::npos ? DType::kF32 : DType::kBF16);
    }
    EXPECT_TRUE(ns.count(6144) && ns.count(4096) && ns.count(28672)) << file;
    if (std::string(file).find("decode") != std::string::npos) {
      EXPECT_EQ(ms, (std::set<std::int64_t>{16, 128}));
      EXPECT_EQ(s->entries.size(), 8u);
    } else {
      EXPECT_EQ(ms, (std::set<std::int64_t>{1, 16, 128, 4096}));
      EXPECT_EQ(s->entries.size(), 16u);
    }
  }
}

// The model benchmark's sets (docs/model-bench.md): four public configurations in the
// layout frameworks use (Y = X W^T: B column-major, NT), bf16 at every M, fp16 only at
// M >= 512, each citing its config.json, and the dimensions worked out from it.
TEST(ProblemSetFile, ModelBenchmarkSetsReadInTheFrameworkLayout) {
  const std::string dir = std::string(TILESMITH_SOURCE_DIR) + "/data/problems/";
  struct Model {
    const char* file;
    std::vector<const char*> cites;
    std::set<std::int64_t> ms;
    std::set<std::pair<std::int64_t, std::int64_t>> nk;  // (N, K) of the layer GEMMs
  };
  const std::vector<Model> models = {
      {"llama3_8b_nt.json",
       {"hidden_size 4096", "intermediate_size 14336", "num_key_value_heads 8"},
       {1, 16, 128, 512, 4096},
       {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}}},
      {"llama3_70b_tp8_nt.json",
       {"hidden_size 8192", "intermediate_size 28672", "num_attention_heads 64", "num_key_value_heads 8"},
       {1, 16, 128, 512, 4096},
       {{1280, 8192}, {8192, 1024}, {7168, 8192}, {8192, 3584}}},
      {"mixtral_8x7b_experts_nt.json",
       {"intermediate_size 14336", "num_local_experts 8", "num_experts_per_tok 2"},
       {1, 4, 32, 128, 1024},
       {{28672, 4096}, {4096, 14336}}},
      {"qwen2_5_32b_nt.json",
       {"hidden_size 5120", "intermediate_size 27648", "num_attention_heads 40", "num_key_value_heads 8"},
       {1, 16, 128, 512, 4096},
       {{7168, 5120}, {5120, 5120}, {55296, 5120}, {5120, 27648}}},
  };
  std::set<std::string> shapes;  // distinct problems over all four files
  for (const auto& model : models) {
    auto s = read_problem_set(dir + model.file);
    ASSERT_TRUE(s.ok()) << model.file << ": " << s.status().to_string();
    for (const char* c : model.cites) EXPECT_NE(s->source.find(c), std::string::npos) << model.file << ": " << c;
    EXPECT_NE(s->source.find("config.json"), std::string::npos) << model.file;
    EXPECT_NE(s->source.find("NT"), std::string::npos) << model.file << ": the source says the layout";
    std::set<std::int64_t> ms;
    std::set<std::pair<std::int64_t, std::int64_t>> nk;
    int bf16 = 0;
    for (const auto& e : s->entries) {
      const GemmProblem& p = e.problem;
      EXPECT_EQ(p.layout_code(), "NT") << model.file << " " << e.name;
      EXPECT_EQ(p.c_type, p.a_type) << e.name;
      EXPECT_TRUE(p.a_type == DType::kBF16 || (p.a_type == DType::kF16 && p.m >= 512)) << e.name;
      bf16 += p.a_type == DType::kBF16;
      ms.insert(p.m);
      nk.insert({p.n, p.k});
      shapes.insert(p.key());
      EXPECT_NE(e.name.find("_m" + std::to_string(p.m) + "_" + dtype_name(p.a_type)), std::string::npos) << e.name;
    }
    EXPECT_EQ(ms, model.ms) << model.file;
    EXPECT_EQ(nk, model.nk) << model.file;
    EXPECT_EQ(bf16, int(model.ms.size() * model.nk.size())) << model.file << ": bf16 at every M";
  }
  EXPECT_GE(shapes.size(), 32u);
}

// The model benchmark's FP8 set: the Llama-3-8B and 70B (8-way) layer GEMMs in e4m3 with
// per-tensor scales and C in bf16, NT, at 16, 128 and 4096 tokens, read as a problem set.
TEST(ProblemSetFile, ModelBenchmarkFp8SetIsTheLlamaShapesInE4m3) {
  auto s = read_problem_set(std::string(TILESMITH_SOURCE_DIR) + "/data/problems/llama3_fp8_nt.json");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_NE(s->source.find("llama3_8b_nt.json"), std::string::npos);
  EXPECT_NE(s->source.find("llama3_70b_tp8_nt.json"), std::string::npos);
  const std::set<std::pair<std::int64_t, std::int64_t>> nk = {{6144, 4096}, {4096, 4096}, {28672, 4096},
                                                               {4096, 14336}, {1280, 8192}, {8192, 1024},
                                                               {7168, 8192}, {8192, 3584}};
  std::set<std::int64_t> ms;
  ASSERT_EQ(s->entries.size(), 24u);
  for (const auto& e : s->entries) {
    const GemmProblem& p = e.problem;
    EXPECT_EQ(p.a_type, DType::kE4M3) << e.name;
    EXPECT_EQ(p.b_type, DType::kE4M3) << e.name;
    EXPECT_EQ(p.c_type, DType::kBF16) << e.name;
    EXPECT_EQ(p.scaling, Scaling::kPerTensor) << e.name;
    EXPECT_EQ(p.layout_code(), "NT") << e.name;
    EXPECT_TRUE(nk.count({p.n, p.k})) << e.name;
    ms.insert(p.m);
  }
  EXPECT_EQ(ms, (std::set<std::int64_t>{16, 128, 4096}));
}

// Issue 37's acceptance shapes: 4096^3, 8192^3 and 8192x1024x8192 and their N and K at M = 16,
// 64 and 128, each per-tensor and block-scaled (no scale values for block scales: the
// factors come with the inputs).
TEST(ProblemSetFile, Fp8AcceptanceSetHoldsEveryShapeInBothScalings) {
  auto s = read_problem_set(std::string(TILESMITH_SOURCE_DIR) + "/data/problems/fp8_acceptance_nt.json");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, Scaling>> got;
  for (const auto& e : s->entries) {
    const GemmProblem& p = e.problem;
    EXPECT_EQ(p.a_type, DType::kE4M3) << e.name;
    EXPECT_EQ(p.c_type, DType::kBF16) << e.name;
    EXPECT_EQ(p.layout_code(), "NT") << e.name;
    got.insert({p.m, p.n, p.k, p.scaling});
  }
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, Scaling>> want;
  for (Scaling sc : {Scaling::kPerTensor, Scaling::kBlock})
    for (auto [big, n, k] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{4096, 4096, 4096},
                             {8192, 8192, 8192}, {8192, 1024, 8192}})
      for (std::int64_t m : {std::int64_t(16), std::int64_t(64), std::int64_t(128), big}) want.insert({m, n, k, sc});
  EXPECT_EQ(s->entries.size(), 24u);
  EXPECT_EQ(got, want);
}

// The set's slice label leads the status line and the plain progress line.
TEST(ProblemSetFile, ProgressLinesShowTheProblemAndItsShare) {
  LoopProgress p;
  p.generation = 4;
  EXPECT_EQ(format_status_line(p).rfind("gen 4 |", 0), 0u);
  p.label = "3/8 qkv_t16 · 42/300 evals, share 18%";
  EXPECT_EQ(format_status_line(p).rfind("[3/8 qkv_t16 · 42/300 evals, share 18%] gen 4 |", 0), 0u);
  EXPECT_NE(format_progress_line(p).find("progress: [3/8 qkv_t16"), std::string::npos);
}

}  // namespace
}  // namespace tilesmith
