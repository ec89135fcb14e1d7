#include "llm/schema.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/llm/test_support.h"

namespace tilesmith::llm {
namespace {

using nlohmann::json;

TEST(Schema, EveryParameterIsARequiredIntegerEnumOfItsDomain) {
  ParamSpace space = tilesmith::testing::small_space();
  std::string text = candidates_schema_json(space);
  json s = json::parse(text);
  EXPECT_EQ(s["type"], "object");
  EXPECT_EQ(s["additionalProperties"], false);
  EXPECT_EQ(s["required"], json::array({"candidates"}));
  const json& item = s["properties"]["candidates"]["items"];
  EXPECT_EQ(s["properties"]["candidates"]["type"], "array");
  EXPECT_EQ(item["type"], "object");
  EXPECT_EQ(item["additionalProperties"], false);
  EXPECT_EQ(item["required"], json::array({"rationale", "BLOCK_M", "BLOCK_N", "THREAD_M"}));
  EXPECT_EQ(item["properties"]["rationale"]["type"], "string");
  for (const Parameter& p : space.parameters()) {
    const json& prop = item["properties"][p.name];
    EXPECT_EQ(prop["type"], "integer") << p.name;
    EXPECT_EQ(prop["enum"], json(p.values)) << p.name;
    EXPECT_EQ(prop["description"], p.description) << p.name;
  }
  EXPECT_EQ(item["properties"].size(), 4u);
  // Declaration order, rationale first: strict decoders generate in this order.
  size_t r = text.find("\"rationale\":{"), m = text.find("\"BLOCK_M\":{"), n = text.find("\"BLOCK_N\":{"),
         t = text.find("\"THREAD_M\":{");
  EXPECT_LT(r, m);
  EXPECT_LT(m, n);
  EXPECT_LT(n, t);
}

TEST(Schema, AParameterCalledRationaleReplacesTheReasoningField) {
  auto space = ParamSpace::from_json(json::parse(R"({"parameters":[{"name":"rationale","values":[1,2]}]})"));
  ASSERT_TRUE(space.ok()) << space.status().to_string();
  json s = json::parse(candidates_schema_json(*space));
  const json& item = s["properties"]["candidates"]["items"];
  EXPECT_EQ(item["properties"]["rationale"]["type"], "integer");
  EXPECT_EQ(item["required"], json::array({"rationale"}));
}

}  // namespace
}  // namespace tilesmith::llm
