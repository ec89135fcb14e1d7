#include "tuner/records/resume.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace tilesmith {
using nlohmann::json;

ResumePoint find_resume_point(const std::vector<HistoryRow>& rows, const std::vector<json>& events) {
  ResumePoint rp;
  std::set<std::string> evaluated;
  int max_row_generation = -1, max_session = 0;
  for (const auto& r : rows) {
    if (r.evaluated()) evaluated.insert(r.key());
    max_row_generation = std::max(max_row_generation, r.generation);
    max_session = std::max(max_session, r.session);
    if (rp.run_id.empty()) rp.run_id = r.run_id;
  }

  std::vector<GenerationPlan> plans;  // in the journal's order
  std::map<std::string, std::pair<PlanItem, int>> planned;  // key -> item, generation
  // Per key: sessions in which its compile started but never finished.
  std::map<std::string, std::set<int>> compile_started, compile_finished;
  struct Evaluating {
    PlanItem item;
    int generation = 0;
    std::string device;
    std::string host;
  };
  std::map<std::string, Evaluating> evaluating;
  for (const auto& e : events) {
    const std::string kind = e.value("event", std::string());
    const int session = e.value("session", 0);
    max_session = std::max(max_session, session);
    if (kind == "session") {
      if (rp.run_id.empty()) rp.run_id = e.value("run_id", std::string());
    } else if (kind == "plan") {
      auto plan = plan_from_json(e);
      if (!plan.ok()) continue;
      for (const auto& item : plan->items) planned[item.key()] = {item, plan->generation};
      plans.push_back(std::move(plan).value());
    } else if (kind == "compile") {
      compile_started[e.value("key", std::string())].insert(session);
    } else if (kind == "compiled") {
      compile_finished[e.value("key", std::string())].insert(session);
    } else if (kind == "evaluate") {
      auto item = plan_item_from_json(e);
      if (!item.ok()) continue;
      const std::string key = item->key();  // before the item is moved into the map
      evaluating[key] = {std::move(item).value(), e.value("generation", 0), e.value("device", std::string()),
                         e.value("host", std::string())};
    }
  }
  rp.session = max_session + 1;

  std::set<std::string> crashed;
  for (const auto& [key, ev] : evaluating) {
    if (evaluated.count(key)) continue;
    rp.crashed.push_back({ev.item, ev.generation,
                          "in flight when the run stopped (process killed or machine down); recorded as crash on "
                          "resume and not run again",
                          ev.device, ev.host});
    crashed.insert(key);
  }
  for (const auto& [key, sessions] : compile_started) {
    if (evaluated.count(key) || crashed.count(key)) continue;
    int unfinished = 0;
    for (int s : sessions)
      if (!compile_finished[key].count(s)) ++unfinished;
    if (unfinished < 2) continue;
    auto it = planned.find(key);
    if (it == planned.end()) continue;
    rp.crashed.push_back({it->second.first, it->second.second,
                          "being compiled when the run stopped, in " + std::to_string(unfinished) +
                              " sessions (the compiler may take the process down); recorded as crash and not "
                              "compiled again"});
    crashed.insert(key);
  }
  // Oldest first, so crash rows follow the order the candidates were planned in.
  std::stable_sort(rp.crashed.begin(), rp.crashed.end(),
                   [](const CrashedCandidate& a, const CrashedCandidate& b) { return a.generation < b.generation; });

  rp.next_generation = max_row_generation + 1;
  // Every plan's candidates that were neither measured nor started. With overlapped
  // generations more than the last plan can have some: a plan's compiled candidates wait
  // in the runner's queue while the next plan is made. Only the last plan can have
  // rejections still to write (execute writes them first, before the next plan exists).
  std::set<std::string> carried;
  for (std::size_t p = 0; p < plans.size(); ++p) {
    const GenerationPlan& plan = plans[p];
    GenerationPlan rest;
    rest.generation = plan.generation;
    rest.rows_before = plan.rows_before;
    if (p + 1 == plans.size()) {
      std::int64_t written = 0;
      for (const auto& r : rows)
        if (r.row > plan.rows_before && !r.evaluated() && r.generation == plan.generation) ++written;
      for (std::size_t i = static_cast<std::size_t>(std::min<std::int64_t>(written, std::int64_t(plan.rejected.size())));
           i < plan.rejected.size(); ++i)
        rest.rejected.push_back(plan.rejected[i]);
    }
    for (const auto& item : plan.items)
      if (!evaluated.count(item.key()) && !crashed.count(item.key()) && carried.insert(item.key()).second)
        rest.items.push_back(item);
    rp.next_generation = std::max(rp.next_generation, plan.generation + 1);
    if (!rest.empty()) rp.unfinished.push_back(std::move(rest));
  }
  return rp;
}

}  // namespace tilesmith
