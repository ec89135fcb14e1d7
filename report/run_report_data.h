#pragma once
// What a morning report shows, gathered from what a run wrote and nothing else: its
// history.csv (any schema version the tool has written; read leniently, so a run still
// going or a damaged file still gives a report, with what was skipped said), journal.jsonl
// (device, problem, settings, vendor baseline, measured bandwidth), best_config.json,
// llm_log.jsonl, and a bench-best JSON output where one is given or found beside them.
// The result is one JSON object (the page's data; docs/report.md lists its parts), with
// large runs aggregated: every evaluated candidate stays, in columns, but the parameters
// of only the best few hundred are spelled out.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace tilesmith {

struct ReportSources {
  std::filesystem::path results;  // the run's folder
  std::filesystem::path bench;    // bench-best --json output; empty: <results>/bench-best.json if present
  std::size_t top = 20;           // rows of the top-N table
};

struct ReportData {
  nlohmann::json data;                // embedded in the page
  std::vector<std::string> warnings;  // what was skipped or missing, for the user (also in data["warnings"])
};

// not_found when the folder has no history.csv; parse_error when history.csv's header is
// not a tilesmith history. Anything else missing or damaged is a warning.
Result<ReportData> collect_report_data(const ReportSources& sources);

}  // namespace tilesmith
