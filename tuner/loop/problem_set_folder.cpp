#include "tuner/loop/problem_set_folder.h"

#include <sstream>

#include <nlohmann/json.hpp>

#include "base/files.h"
#include "tuner/loop/loop.h"
#include "tuner/records/history.h"
#include "tuner/records/journal.h"

namespace tilesmith {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The journal's events, read-only (RunJournal::open repairs a torn line; this folder may
// be opened by the loop next, which does that). Lines that are not JSON are skipped.
std::vector<json> journal_events(const fs::path& path) {
  std::vector<json> events;
  std::error_code ec;
  if (!fs::exists(path, ec)) return events;
  auto text = read_file(path);
  if (!text.ok()) return events;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object()) events.push_back(std::move(j));
  }
  return events;
}

bool ends_the_search(const std::string& reason) {
  return reason == stop_reason_name(StopReason::kPlateau) || reason == stop_reason_name(StopReason::kExhausted) ||
         reason == stop_reason_name(StopReason::kNoProposals) || reason == stop_reason_name(StopReason::kConverged);
}

}  // namespace

Result<ProblemFolder> read_problem_folder(const fs::path& dir, Objective objective) {
  ProblemFolder f;
  TS_ASSIGN_OR_RETURN(HistoryLoad history, read_history(dir / kHistoryFileName));
  for (const auto& r : history.rows) {
    if (!r.evaluated()) continue;
    ++f.evals;
    const std::optional<double> value = objective_value(objective, r);
    f.evaluated.push_back(value);
    if (value && (!f.search_best || *value < *f.search_best)) f.search_best = value;
  }
  bool retime_in_session = false, ended_after_retime = false;
  for (const auto& e : journal_events(dir / kJournalFileName)) {
    const std::string event = e.value("event", "");
    if (event == "vendor" && e.contains("evaluation")) {
      auto v = evaluation_from_json(e["evaluation"]);
      if (v.ok() && v->ok()) {
        f.vendor = *v;
        f.vendor_name = e.value("name", "");
      }
    } else if (event == "session") {
      retime_in_session = ended_after_retime = false;
    } else if (event == "retime") {
      retime_in_session = true;
    } else if (event == "end") {
      f.last_stop = e.value("reason", "");
      ended_after_retime = retime_in_session;
    } else if (event == "plan") {
      retime_in_session = ended_after_retime = false;
    }
  }
  f.done = ends_the_search(f.last_stop);
  f.retimed = ended_after_retime;
  std::error_code ec;
  if (fs::exists(dir / "best_config.json", ec)) {
    TS_ASSIGN_OR_RETURN(f.winners, read_best_config(dir / "best_config.json"));
  }
  return f;
}

std::optional<double> winner_ms(const BestEntry& entry) {
  if (!entry.metrics.is_object() || !entry.metrics.contains("median_ms") || !entry.metrics["median_ms"].is_number())
    return std::nullopt;
  const double ms = entry.metrics["median_ms"].get<double>();
  return ms > 0 ? std::optional<double>(ms) : std::nullopt;
}

const BestEntry* best_winner(const ProblemFolder& folder) {
  const BestEntry* best = nullptr;
  for (const auto& e : folder.winners) {
    auto value = entry_objective_value(e);
    if (value && (!best || *value < *entry_objective_value(*best))) best = &e;
  }
  return best;
}

}  // namespace tilesmith
