#include "llm/schema.h"

#include <nlohmann/json.hpp>

namespace tilesmith::llm {

std::string candidates_schema_json(const ParamSpace& space) {
  // ordered_json: strict decoders generate properties in schema order.
  using Json = nlohmann::ordered_json;
  Json properties = Json::object();
  Json required = Json::array();
  // A parameter that happens to be called "rationale" wins; the reasoning field goes.
  if (!space.find(kRationaleField)) {
    properties[kRationaleField] = {{"type", "string"},
                                   {"description", "one or two sentences: why this configuration"}};
    required.push_back(kRationaleField);
  }
  for (const Parameter& p : space.parameters()) {
    Json prop = {{"type", "integer"}, {"enum", p.values}};
    if (!p.description.empty()) prop["description"] = p.description;
    properties[p.name] = std::move(prop);
    required.push_back(p.name);
  }
  Json candidate = {{"type", "object"},
                    {"properties", std::move(properties)},
                    {"required", std::move(required)},
                    {"additionalProperties", false}};
  Json schema = {{"type", "object"},
                 {"properties", {{"candidates", {{"type", "array"}, {"items", std::move(candidate)}}}}},
                 {"required", Json::array({"candidates"})},
                 {"additionalProperties", false}};
  return schema.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tilesmith::llm
