#pragma once
// One generation's plan: what the proposers produced for it, after validation and after
// dropping what the run already knows. It is written to the journal before anything of
// it is evaluated, so an interrupted generation can be finished as planned.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "registry/config.h"

namespace tilesmith {

// A candidate to evaluate.
struct PlanItem {
  std::string template_name;
  Config config;
  std::string config_hash;
  std::string proposer;  // "evolve", "llm", ...
  std::string model;     // LLM model or ""
  std::string rationale;
  std::string key() const;  // candidate_key(template, config_hash)
};

// A candidate rejected before evaluation: becomes a history row of stage "proposal".
struct PlanRejection {
  std::string template_name;
  std::string proposer, model;
  std::string config;       // canonical JSON when it parsed as a config, else the raw text
  std::string config_hash;  // empty when it did not parse
  std::string reason;
};

struct GenerationPlan {
  int generation = 0;
  std::int64_t rows_before = 0;  // history rows when the plan was made
  std::vector<PlanRejection> rejected;  // written first, in this order
  std::vector<PlanItem> items;          // then evaluated, in this order
  bool empty() const { return rejected.empty() && items.empty(); }
};

// "evolve" -> ("evolve", ""); "llm:gpt-5" -> ("llm", "gpt-5"); a mixed batch name
// ("llm:gpt-5+evolve") is attributed to its first part.
void split_proposer_name(const std::string& name, std::string* proposer, std::string* model);

nlohmann::json plan_item_to_json(const PlanItem& item);
Result<PlanItem> plan_item_from_json(const nlohmann::json& j);
// {"event": "plan", "generation", "rows_before", "rejected": [...], "items": [...]}
nlohmann::json plan_to_json(const GenerationPlan& plan);
Result<GenerationPlan> plan_from_json(const nlohmann::json& j);

}  // namespace tilesmith
