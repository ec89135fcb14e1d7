#include "tuner/records/plan.h"

#include <nlohmann/json.hpp>

#include "tuner/records/history.h"

namespace tilesmith {
using nlohmann::json;

std::string PlanItem::key() const { return candidate_key(template_name, config_hash); }

void split_proposer_name(const std::string& name, std::string* proposer, std::string* model) {
  std::string first = name.substr(0, name.find('+'));
  const auto colon = first.find(':');
  *proposer = first.substr(0, colon);
  *model = colon == std::string::npos ? "" : first.substr(colon + 1);
}

json plan_item_to_json(const PlanItem& item) {
  return json{{"template", item.template_name}, {"config", config_to_json(item.config)},
              {"config_hash", item.config_hash}, {"proposer", item.proposer},
              {"model", item.model},             {"rationale", item.rationale}};
}

Result<PlanItem> plan_item_from_json(const json& j) {
  PlanItem item;
  try {
    item.template_name = j.at("template").get<std::string>();
    TS_ASSIGN_OR_RETURN(item.config, config_from_json(j.at("config")));
    item.config_hash = config_hash(item.config);
    item.proposer = j.value("proposer", std::string());
    item.model = j.value("model", std::string());
    item.rationale = j.value("rationale", std::string());
  } catch (const json::exception& e) {
    return Status::parse_error(std::string("plan item: ") + e.what());
  }
  return item;
}

json plan_to_json(const GenerationPlan& plan) {
  json rejected = json::array(), items = json::array();
  for (const auto& r : plan.rejected)
    rejected.push_back(json{{"template", r.template_name}, {"proposer", r.proposer}, {"model", r.model},
                            {"config", r.config}, {"config_hash", r.config_hash}, {"reason", r.reason}});
  for (const auto& i : plan.items) items.push_back(plan_item_to_json(i));
  return json{{"event", "plan"},
              {"generation", plan.generation},
              {"rows_before", plan.rows_before},
              {"rejected", rejected},
              {"items", items}};
}

Result<GenerationPlan> plan_from_json(const json& j) {
  GenerationPlan plan;
  try {
    plan.generation = j.at("generation").get<int>();
    plan.rows_before = j.at("rows_before").get<std::int64_t>();
    for (const auto& r : j.value("rejected", json::array())) {
      PlanRejection pr;
      pr.template_name = r.at("template").get<std::string>();
      pr.proposer = r.value("proposer", std::string());
      pr.model = r.value("model", std::string());
      pr.config = r.value("config", std::string());
      pr.config_hash = r.value("config_hash", std::string());
      pr.reason = r.value("reason", std::string());
      plan.rejected.push_back(std::move(pr));
    }
    for (const auto& i : j.value("items", json::array())) {
      TS_ASSIGN_OR_RETURN(auto item, plan_item_from_json(i));
      plan.items.push_back(std::move(item));
    }
  } catch (const json::exception& e) {
    return Status::parse_error(std::string("plan: ") + e.what());
  }
  return plan;
}

}  // namespace tilesmith
