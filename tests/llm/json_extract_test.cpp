#include "llm/json_extract.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tilesmith::llm {
namespace {

using nlohmann::json;

TEST(ExtractJson, TakesBareJson) {
  auto j = extract_json(R"(  {"candidates": []}  )");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(*j, json::parse(R"({"candidates": []})"));
}

TEST(ExtractJson, TakesAFencedBlockAfterProse) {
  auto j = extract_json("Here is my answer {as promised}:\n```json\n{\"candidates\": [{\"A\": 1}]}\n```\nThanks!");
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ((*j)["candidates"][0]["A"], 1);
  j = extract_json("```\n[{\"A\": 2}]\n```");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)[0]["A"], 2);
}

TEST(ExtractJson, FindsJsonAfterLeadingProseWithoutFences) {
  auto j = extract_json("I considered [tiles] and {shapes}. Final: {\"candidates\": [{\"A\": 3}]} -- done");
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ((*j)["candidates"][0]["A"], 3);
  // Braces inside strings do not confuse the matcher.
  j = extract_json("ok: {\"candidates\": [{\"rationale\": \"use } and { freely\", \"A\": 4}]}");
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ((*j)["candidates"][0]["A"], 4);
}

TEST(ExtractJson, SkipsThinkBlocks) {
  auto j = extract_json("<think>maybe {\"candidates\": [{\"A\": 0}]}? no...</think>{\"candidates\": [{\"A\": 5}]}");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["candidates"][0]["A"], 5);
}

TEST(ExtractJson, PrefersTheObjectWithCandidates) {
  auto j = extract_json("{\"note\": 1} and then {\"candidates\": [{\"A\": 6}]}");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["candidates"][0]["A"], 6);
}

TEST(ExtractJson, RejectsWhatIsNotThere) {
  EXPECT_FALSE(extract_json("").ok());
  EXPECT_FALSE(extract_json("   \n").ok());
  EXPECT_FALSE(extract_json("I cannot help with that.").ok());
  EXPECT_EQ(extract_json("no").status().code(), StatusCode::kParseError);
}

TEST(ExtractJson, KeepsTheCompleteCandidatesOfACutOffReply) {
  auto j = extract_json("{\"candidates\": [{\"A\": 1}, {\"A\": 2, \"rationale\": \"x}\"}, {\"A\": 3, \"ratio");
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ(*j, json::parse(R"({"candidates": [{"A": 1}, {"A": 2, "rationale": "x}"}]})"));
  EXPECT_FALSE(extract_json("{\"candidates\": [{\"A\": 1,").ok());
}

TEST(ExtractJson, RefusesDeepNestingAndHugeText) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto j = extract_json(deep);
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("levels deep"), std::string::npos);
  ExtractLimits small;
  small.max_bytes = 100;
  EXPECT_FALSE(extract_json(std::string(200, ' ') + "{}", small).ok());
}

}  // namespace
}  // namespace tilesmith::llm
