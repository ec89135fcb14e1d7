// GemmProblem with FP8 inputs: C must be a type that can be written, scaling needs FP8 and
// says which scales apply; and the stored forms (JSON, the key, history rows' keys) of
// problems written before FP8 read and key as they did.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "registry/problem.h"

namespace tilesmith {
namespace {

GemmProblem fp8(DType c = DType::kBF16) {
  GemmProblem p;
  p.m = 64;
  p.n = 32;
  p.k = 256;
  p.a_type = p.b_type = DType::kE4M3;
  p.c_type = c;
  return p;
}

TEST(Problem, Fp8CIsRefusedNamingTheAllowedTypes) {
  for (DType c : {DType::kE4M3, DType::kE5M2}) {
    Status s = fp8(c).validate();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("input type only; C must be fp32, fp16 or bf16"), std::string::npos) << s.message();
  }
  for (DType c : {DType::kF32, DType::kF16, DType::kBF16}) EXPECT_TRUE(fp8(c).validate().ok()) << dtype_name(c);
  GemmProblem acc = fp8();
  acc.accumulate = DType::kE5M2;
  EXPECT_FALSE(acc.validate().ok());
  // From JSON: an explicit FP8 C is refused; without c_dtype an FP8 input writes bf16.
  auto bad = problem_from_json(nlohmann::json::parse(R"({"m": 8, "n": 8, "k": 8, "dtype": "e4m3", "c_dtype": "e5m2"})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fp32, fp16 or bf16"), std::string::npos) << bad.status().message();
  auto def = problem_from_json(nlohmann::json::parse(R"({"m": 8, "n": 8, "k": 8, "dtype": "e5m2"})"));
  ASSERT_TRUE(def.ok()) << def.status().message();
  EXPECT_EQ(def->c_type, DType::kBF16);
}

// e4m3 with e5m2 (either way round) is a problem, kept through JSON and the key; other mixes are not.
TEST(Problem, Fp8TypesMayMixOthersMayNot) {
  GemmProblem p = fp8();
  p.b_type = DType::kE5M2;
  ASSERT_TRUE(p.validate().ok()) << p.validate().message();
  nlohmann::json j = p;
  EXPECT_EQ(j.at("b_dtype"), "e5m2");
  auto back = problem_from_json(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->b_type, DType::kE5M2);
  EXPECT_EQ(back->key(), p.key());
  EXPECT_NE(p.key().find("a=e4m3,b=e5m2"), std::string::npos) << p.key();
  nlohmann::json same = fp8();
  EXPECT_FALSE(same.contains("b_dtype")) << "files of one input type stay as they were";
  GemmProblem half = fp8();
  half.b_type = DType::kBF16;
  Status s = half.validate();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("only the FP8 types e4m3 and e5m2 may be mixed"), std::string::npos) << s.message();
  half.a_type = DType::kF16;
  EXPECT_FALSE(half.validate().ok());
}

TEST(Problem, ScalingNeedsFp8AndTheRightScales) {
  GemmProblem p = fp8();
  p.scaling = Scaling::kPerTensor;
  p.scale_a = 0.25;
  p.scale_b = 1.0 / 3;
  EXPECT_TRUE(p.validate().ok()) << p.validate().message();
  p.scale_b = -1;
  EXPECT_FALSE(p.validate().ok());
  p.scale_b = 1e-50;  // not a normal fp32
  EXPECT_FALSE(p.validate().ok());
  p.scale_b = 1;
  p.scaling = Scaling::kBlock;
  Status block = p.validate();  // scale_a 0.25 with block scaling
  ASSERT_FALSE(block.ok());
  EXPECT_NE(block.message().find("generated with the inputs"), std::string::npos) << block.message();
  p.scale_a = 1;
  EXPECT_TRUE(p.validate().ok());
  p.a_type = p.b_type = DType::kBF16;
  Status bf = p.validate();
  ASSERT_FALSE(bf.ok());
  EXPECT_NE(bf.message().find("FP8 inputs"), std::string::npos) << bf.message();
  EXPECT_FALSE(parse_scaling("rowwise").ok());
}

// A problem as version 0.x wrote it (no scaling fields), and its key as it was then: both
// unchanged, so best_config.json, history.csv and results folders of earlier runs match.
TEST(Problem, OldProblemJsonLoadsAndKeysAsBefore) {
  const auto old = nlohmann::json::parse(R"({"m": 300, "n": 268, "k": 1001, "dtype": "fp16", "c_dtype": "fp32",
      "accumulate": "fp32", "layout": "NT", "c_layout": "col", "alpha": 1.5, "beta": 0.5, "epilogue": "leaky_relu",
      "epilogue_slope": 0.2})");
  auto p = problem_from_json(old);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->scaling, Scaling::kNone);
  EXPECT_EQ(p->scale_a, 1.0);
  EXPECT_EQ(p->key(),
            "m=300,n=268,k=1001,a=fp16,b=fp16,c=fp32,acc=fp32,A:row,B:col,C:col,alpha=1.5,beta=0.5,epi=leaky_relu,"
            "slope=0.20000000000000001");
  nlohmann::json back;
  to_json(back, *p);
  EXPECT_EQ(back, old);  // written as before: no scaling fields
  // The smallest old form: only the shape.
  auto bare = problem_from_json(nlohmann::json::parse(R"({"m": 4, "n": 5, "k": 6})"));
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->key(), "m=4,n=5,k=6,a=fp32,b=fp32,c=fp32,acc=fp32,A:row,B:row,C:row,alpha=1,beta=0,epi=none,slope=0");
}

TEST(Problem, ScaledProblemsRoundTripThroughJsonAndTheKey) {
  GemmProblem p = fp8(DType::kF32);
  p.scaling = Scaling::kPerTensor;
  p.scale_a = 1.0 / 448;
  p.scale_b = 0.0037;
  nlohmann::json j;
  to_json(j, p);
  EXPECT_EQ(j["scaling"], "per_tensor");
  auto back = problem_from_json(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->key(), p.key());
  EXPECT_NE(p.key().find(",scaling=per_tensor,scale_a="), std::string::npos) << p.key();
  EXPECT_NE(p.describe().find("scale:"), std::string::npos) << p.describe();
  // A history row keeps the key, not the scaling: it is read back from there.
  GemmProblem from_key = fp8(DType::kF32);
  ASSERT_TRUE(apply_scaling_from_key(p.key(), from_key).ok());
  EXPECT_EQ(from_key.key(), p.key());
  GemmProblem unscaled = fp8(DType::kF32);
  ASSERT_TRUE(apply_scaling_from_key(unscaled.key(), unscaled).ok());
  EXPECT_EQ(unscaled.scaling, Scaling::kNone);
  p.scaling = Scaling::kBlock;
  p.scale_a = p.scale_b = 1;
  GemmProblem block = fp8(DType::kF32);
  ASSERT_TRUE(apply_scaling_from_key(p.key(), block).ok());
  EXPECT_EQ(block.scaling, Scaling::kBlock);
  EXPECT_EQ(block.key(), p.key());
  // Block scales move bytes too: M x K/128 and K/128 x N/128 fp32 scales.
  GemmProblem none = fp8(DType::kF32);
  EXPECT_DOUBLE_EQ(p.min_bytes() - none.min_bytes(), 4.0 * (64 * 2 + 2 * 1));
}


// Per-tensor scales factor out onto alpha as fp32 values (the kernels and cuBLASLt take them so);
// every other scaling leaves alpha alone.
TEST(Problem, PerTensorScalesRideOnAlphaAsFp32) {
  GemmProblem p;
  p.m = p.n = p.k = 64;
  p.a_type = p.b_type = DType::kE4M3;
  p.c_type = DType::kBF16;
  EXPECT_EQ(per_tensor_alpha_scale(p), 1.0);
  p.scaling = Scaling::kPerTensor;
  p.scale_a = 0.1;
  p.scale_b = 3.0;
  EXPECT_EQ(per_tensor_alpha_scale(p), double(0.1f) * 3.0);
  p.scaling = Scaling::kBlock;
  EXPECT_EQ(per_tensor_alpha_scale(p), 1.0);
}

}  // namespace
}  // namespace tilesmith
