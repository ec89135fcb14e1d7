#pragma once
// The JSON Schema of a proposal reply, generated from a parameter space:
//   {"candidates": [ {"rationale": string, "<PARAM>": one of its domain, ...}, ... ]}
// Every parameter is an integer enum of its declared values; every field is required and
// additionalProperties is false at each level, as OpenAI's strict mode requires.
// "rationale" comes first so that a schema-constrained model reasons before it picks.

#include <string>

#include "registry/space.h"

namespace tilesmith::llm {

inline constexpr const char* kCandidatesSchemaName = "tile_configs";
inline constexpr const char* kRationaleField = "rationale";

// The schema as compact JSON text, properties in declaration order.
std::string candidates_schema_json(const ParamSpace& space);

}  // namespace tilesmith::llm
