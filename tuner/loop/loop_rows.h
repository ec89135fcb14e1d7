#pragma once
// How the loop turns what happened to a candidate into a history.csv row: the run's
// identity, the problem and device columns, the evaluation's figures (empty where
// nothing was measured), and rejections before evaluation. Pure; thread-compatible.

#include <optional>
#include <string>

#include "registry/device_facts.h"
#include "registry/problem.h"
#include "runtime/evaluation.h"
#include "tuner/records/history.h"
#include "tuner/records/plan.h"
#include "tuner/search/proposer.h"

namespace tilesmith {

class RowMaker {
 public:
  // `host`: the host column of rows no device measured (the orchestrator's machine).
  RowMaker(std::string run_id, int session, GemmProblem problem, DeviceFacts device, std::string host)
      : run_id_(std::move(run_id)),
        session_(session),
        problem_(std::move(problem)),
        device_(std::move(device)),
        host_(std::move(host)) {}

  // The run, session, timestamp (now), generation, template, problem, device and version
  // columns; everything else at its default.
  HistoryRow base(int generation, const std::string& template_name, const std::string& template_hash) const;
  // An evaluation row. `eval_ms`: wall time of the evaluation call (nullopt when none was
  // made, as for a compile failure found by prepare or a crash found on resume).
  // `vendor_median_ms` fills vendor_ratio for an ok result. `host`, `device`: where it
  // was measured ("node7", "cuda:1"; "" when no device was involved or it is unknown: the
  // host column then names the orchestrator's machine).
  HistoryRow evaluation(const PlanItem& item, int generation, const std::string& template_hash, const Evaluation& e,
                        std::optional<double> eval_ms, std::optional<double> vendor_median_ms,
                        const std::string& host, const std::string& device) const;
  // A proposal row (outcome invalid, the reason in message).
  HistoryRow rejection(const PlanRejection& rejection, int generation, const std::string& template_hash) const;

 private:
  std::string run_id_;
  int session_;
  GemmProblem problem_;
  DeviceFacts device_;
  std::string host_;
};

// A proposer's rejected candidate as a plan entry: attributed to its own proposer when
// it names one (RejectedProposal::proposer), else to the batch's; given an identity
// (canonical config + hash) when its text is still a well-formed config, so the run
// knows it from then on.
PlanRejection plan_rejection(const std::string& template_name, const std::string& batch_proposer,
                             const RejectedProposal& rejected);

}  // namespace tilesmith
