#pragma once
// Where a run stands when it starts: from history.csv and journal.jsonl of its results
// folder, after a clean end, a Ctrl-C or a kill -9 at any moment.
//
//  - The run id carries on; the session number goes up by one.
//  - A candidate with an "evaluate" marker and no evaluation row was in flight when the
//    process or the machine died: it is recorded as crash and never run again. With
//    several devices several can be in flight; each becomes one crash row.
//  - A candidate whose compile was started and not finished in two sessions (the
//    compiler took the process down twice; compile-ahead compiles several at once, so
//    one such stop does not say which) is recorded as crash too. After one such stop it
//    is compiled again.
//  - The last generation's plan is finished as planned: its rejections not yet in the
//    history are written, its candidates not yet evaluated are evaluated. Then the next
//    generation follows.
// Pure function of its inputs.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tuner/records/history.h"
#include "tuner/records/plan.h"

namespace tilesmith {

struct CrashedCandidate {
  PlanItem item;
  int generation = 0;
  std::string message;
  std::string device;  // where it was in flight (the marker's "device"); "" when unknown
  std::string host;    // on which machine (the marker's "host"); "" when unknown
};

struct ResumePoint {
  std::string run_id;  // empty for a new run
  int session = 1;     // this session's number
  int next_generation = 0;  // the next generation to plan (after `unfinished`)
  // The rest of the plans (oldest first): rejections to write (the last plan's only) and
  // candidates neither measured nor started. Usually the last plan alone; overlapped
  // generations can leave the one before it unfinished too.
  std::vector<GenerationPlan> unfinished;
  std::vector<CrashedCandidate> crashed;  // to record as crash rows before anything else
};

ResumePoint find_resume_point(const std::vector<HistoryRow>& rows, const std::vector<nlohmann::json>& events);

}  // namespace tilesmith
