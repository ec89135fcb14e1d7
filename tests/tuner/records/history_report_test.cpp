#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tuner/records/history_report.h"
#include "tuner/loop/worker_runner.h"
#include "tuner/loop/progress.h"

namespace tilesmith {
namespace {

HistoryRow row(std::int64_t n, int gen, const std::string& proposer, Outcome o, std::optional<double> ms,
               const std::string& hash, const std::string& stage = kStageEvaluation) {
  HistoryRow r;
  r.row = n;
  r.generation = gen;
  r.session = 1;
  r.run_id = "run";
  r.proposer = proposer;
  if (proposer == "llm") r.model = "m1";
  r.stage = stage;
  r.outcome = o;
  r.median_ms = ms;
  if (ms) r.tflops = 100 / *ms;
  r.template_name = "t";
  r.config_hash = hash;
  r.config = "{\"A\":" + std::to_string(n) + "}";
  r.timestamp = "2026-01-01T00:00:" + std::string(n < 10 ? "0" : "") + std::to_string(n) + ".000Z";
  return r;
}

std::vector<HistoryRow> sample() {
  return {row(1, 0, "evolve", Outcome::kOk, 9.0, "a"),
          row(2, 0, "evolve", Outcome::kCompileError, std::nullopt, "b"),
          row(3, 1, "llm", Outcome::kInvalid, std::nullopt, "", kStageProposal),
          row(4, 1, "llm", Outcome::kOk, 7.0, "c"),
          row(5, 1, "llm", Outcome::kOk, 8.0, "d"),
          row(6, 2, "evolve", Outcome::kOk, 7.5, "e"),
          row(7, 2, "llm", Outcome::kWrongResult, std::nullopt, "f"),
          row(8, 3, "evolve", Outcome::kOk, 3.0, "g")};
}

TEST(HistoryReport, TopConfigsByMedian) {
  auto rows = sample();
  auto top = top_configs(rows, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0]->row, 8);
  EXPECT_EQ(top[1]->row, 4);
  EXPECT_EQ(top[2]->row, 6);
  EXPECT_EQ(top_configs(rows, 100).size(), 5u) << "only ok evaluations";
}

TEST(HistoryReport, OutcomesByProposerAndGeneration) {
  auto rows = sample();
  OutcomeTable byp = outcomes_by_proposer(rows);
  EXPECT_EQ(byp.columns, (std::vector<std::string>{"ok", "compile_error", "wrong_result", "rejected"}));
  ASSERT_EQ(byp.groups.size(), 2u);
  EXPECT_EQ(byp.groups[0].first, "evolve");
  EXPECT_EQ(byp.groups[0].second.at("ok"), 3);
  EXPECT_EQ(byp.groups[0].second.at("compile_error"), 1);
  EXPECT_EQ(byp.groups[1].first, "llm:m1");
  EXPECT_EQ(byp.groups[1].second.at("rejected"), 1);
  EXPECT_EQ(byp.groups[1].second.at("wrong_result"), 1);
  OutcomeTable byg = outcomes_by_generation(rows);
  ASSERT_EQ(byg.groups.size(), 4u);
  EXPECT_EQ(byg.groups[1].first, "1");
  EXPECT_EQ(byg.groups[1].second.at("ok"), 2);
  const std::string text = format_outcome_table("proposer", byp);
  EXPECT_NE(text.find("all"), std::string::npos);
  EXPECT_NE(text.find("llm:m1"), std::string::npos);
}

TEST(HistoryReport, BestSoFarOverEvaluationsAndTime) {
  auto rows = sample();
  auto best = best_so_far(rows);
  ASSERT_EQ(best.size(), 3u);
  EXPECT_EQ(best[0].row->row, 1);
  EXPECT_EQ(best[0].evaluation, 1);
  EXPECT_EQ(best[1].row->row, 4);
  EXPECT_EQ(best[1].evaluation, 3) << "rejected proposals are not evaluations";
  EXPECT_DOUBLE_EQ(best[1].elapsed_s, 3.0);
  EXPECT_EQ(best[2].row->row, 8);
  EXPECT_EQ(best[2].evaluation, 7);
}

TEST(HistoryReport, TextAndJsonReports) {
  auto rows = sample();
  const std::string text = format_history_report(rows, 2);
  EXPECT_NE(text.find("Top 2 configs"), std::string::npos);
  EXPECT_NE(text.find("Outcomes by proposer"), std::string::npos);
  EXPECT_NE(text.find("Outcomes by generation"), std::string::npos);
  EXPECT_NE(text.find("Best so far"), std::string::npos);
  auto j = history_report_json(rows, 2);
  EXPECT_EQ(j["rows"], 8);
  EXPECT_EQ(j["evaluated"], 7);
  EXPECT_EQ(j["top"].size(), 2u);
  EXPECT_EQ(j["top"][0]["row"], 8);
  EXPECT_EQ(j["top"][0]["config"]["A"], 8);
  EXPECT_EQ(j["outcomes_by_proposer"]["evolve"]["ok"], 3);
  EXPECT_EQ(j["best_so_far"].size(), 3u);
  EXPECT_EQ(format_history_report({}, 5), "no rows yet\n");
}

TEST(HistoryReport, TimestampsParse) {
  auto t = parse_timestamp("2026-01-02T03:04:05.678Z");
  ASSERT_TRUE(t);
  EXPECT_NEAR(*t - *parse_timestamp("2026-01-02T03:04:00.000Z"), 5.678, 1e-6);
  EXPECT_FALSE(parse_timestamp("yesterday"));
}

TEST(Progress, StatusLineSaysWhereTheRunStands) {
  LoopProgress p;
  p.generation = 12;
  p.evaluated = 96;
  p.outcomes = {{"ok", 80}, {"compile_error", 10}, {"wrong_result", 6}};
  p.rejected = 3;
  p.best_tflops = 22.31;
  p.best_ms = 6.16;
  p.best_vendor_ratio = 0.91;
  p.elapsed_s = 312;
  p.measure_s = 262;
  p.budget_left = "104 evaluations";
  const std::string line = format_status_line(p);
  EXPECT_NE(line.find("gen 12"), std::string::npos) << line;
  EXPECT_NE(line.find("96 evaluated: 80 ok, 10 compile_error, 6 wrong_result"), std::string::npos) << line;
  EXPECT_NE(line.find("22.31 TFLOP/s"), std::string::npos);
  EXPECT_NE(line.find("0.91x vendor"), std::string::npos);
  EXPECT_NE(line.find("5m12s"), std::string::npos);
  EXPECT_NE(line.find("measuring 84%"), std::string::npos);
  EXPECT_NE(line.find("left: 104 evaluations"), std::string::npos);
  EXPECT_LE(format_status_line(p, 40).size(), 40u);
  EXPECT_EQ(format_progress_line(p).rfind("progress: ", 0), 0u);
  EXPECT_EQ(format_duration(3725), "1h02m05s");
  EXPECT_EQ(format_duration(12.34), "12.3s");
  EXPECT_EQ(line.find("/min"), std::string::npos) << "no rate before one is known";
  EXPECT_EQ(line.find("workers"), std::string::npos) << "nothing about workers when there is nothing to say";

  p.per_minute = 18.46;
  p.workers = "workers: 1/2 busy, cuda:1 UNHEALTHY (next health check in 20s)";
  const std::string with = format_status_line(p);
  EXPECT_NE(with.find("5m12s, 18.5/min, measuring 84%"), std::string::npos) << with;
  EXPECT_NE(with.find("| workers: 1/2 busy, cuda:1 UNHEALTHY (next health check in 20s) | left:"), std::string::npos)
      << with;
  p.per_minute = 2345.6;
  EXPECT_NE(format_progress_line(p).find("2346/min"), std::string::npos) << format_progress_line(p);
}

TEST(Progress, WorkerStatusSaysWhatDeservesALook) {
  worker::WorkerStatus healthy;
  healthy.device = "NVIDIA H200 (cuda:0)";
  EXPECT_EQ(format_worker_status({"cuda:0"}, {healthy}), "") << "one healthy device that lost nothing";

  worker::WorkerStatus busy = healthy;
  busy.busy = true;
  EXPECT_EQ(format_worker_status({"cuda:0", "cuda:1"}, {busy, healthy}), "workers: 1/2 busy");

  worker::WorkerStatus sick = healthy;
  sick.healthy = false;
  sick.backoff_remaining_s = 19.6;
  sick.crashes = 3;
  sick.timeouts = 1;
  sick.compile_crashes = 1;
  sick.health_checks = 2;
  sick.health_check_failures = 1;
  EXPECT_EQ(format_worker_status({"cuda:0", "cuda:1"}, {busy, sick}),
            "workers: 1/2 busy, cuda:1 UNHEALTHY (next health check in 20s), 4 crashes, 1 timeout, 2 health "
            "checks (1 failed)");
  worker::WorkerStatus lost = healthy;
  lost.lost_contexts = 1;
  EXPECT_EQ(format_worker_status({"hip:0"}, {lost}), "workers: 1 lost context");
}

}  // namespace
}  // namespace tilesmith
