#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "tests/cli/process.h"
#include "tuner/records/journal.h"
#include "tuner/records/plan.h"
#include "tuner/records/resume.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using testing::fresh_dir;
using testing::slurp;

PlanItem item(int i) {
  PlanItem it;
  it.template_name = "t";
  it.config = {{"A", i}, {"B", 2 * i}};
  it.config_hash = config_hash(it.config);
  it.proposer = "evolve";
  it.rationale = "r" + std::to_string(i);
  return it;
}

HistoryRow evaluated_row(const PlanItem& it, int generation, std::int64_t row, int session = 1) {
  HistoryRow r;
  r.run_id = "run-x";
  r.session = session;
  r.row = row;
  r.generation = generation;
  r.template_name = it.template_name;
  r.config = config_to_json_text(it.config);
  r.config_hash = it.config_hash;
  r.outcome = Outcome::kOk;
  r.median_ms = 1.0;
  return r;
}

json marker(const char* kind, const PlanItem& it, int session, int generation = 0) {
  json j = plan_item_to_json(it);
  j["event"] = kind;
  j["session"] = session;
  j["generation"] = generation;
  j["key"] = it.key();
  return j;
}

GenerationPlan plan(int generation, std::int64_t rows_before, std::vector<PlanItem> items, int rejections = 0) {
  GenerationPlan p;
  p.generation = generation;
  p.rows_before = rows_before;
  p.items = std::move(items);
  for (int i = 0; i < rejections; ++i) {
    PlanRejection r;
    r.template_name = "t";
    r.proposer = "llm";
    r.model = "m";
    r.config = "{\"A\":\"x\"}";
    r.reason = "A must be a JSON integer " + std::to_string(i);
    p.rejected.push_back(r);
  }
  return p;
}

TEST(Journal, RepairsATornLastLineAndSkipsGarbage) {
  const fs::path dir = fresh_dir("journal_repair");
  const fs::path path = dir / "journal.jsonl";
  {
    auto j = RunJournal::open(path);
    ASSERT_TRUE(j.ok());
    ASSERT_TRUE(j->append(json{{"event", "session"}, {"session", 1}}).ok());
    ASSERT_TRUE(j->append(json{{"event", "compiled"}, {"key", "a"}}, /*durable=*/false).ok());
  }
  ASSERT_TRUE(append_line_durable(path, "not json at all\n").ok());
  ASSERT_TRUE(append_line_durable(path, "{\"event\":\"plan\"}\n").ok());
  const std::size_t good = slurp(path).size();
  ASSERT_TRUE(append_line_durable(path, "{\"event\":\"evalu").ok());
  auto j = RunJournal::open(path);
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ(j->events().size(), 3u);
  EXPECT_EQ(j->skipped_lines(), 1u);
  EXPECT_EQ(j->repaired_bytes(), 15u);
  EXPECT_EQ(slurp(path).size(), good);
  EXPECT_EQ(j->events()[1].value("key", ""), "a");
}

TEST(Resume, NewRunStartsAtGenerationZero) {
  ResumePoint rp = find_resume_point({}, {});
  EXPECT_TRUE(rp.run_id.empty());
  EXPECT_EQ(rp.session, 1);
  EXPECT_EQ(rp.next_generation, 0);
  EXPECT_TRUE(rp.unfinished.empty());
  EXPECT_TRUE(rp.crashed.empty());
}

TEST(Resume, EveryCandidateInFlightOnSeveralDevicesBecomesOneCrash) {
  // Generation 0 planned 5 for two workers; results came back in completion order (3,
  // then 1); 2 and 4 were in flight on cuda:1 and cuda:0 at the kill; 5 never started.
  std::vector<HistoryRow> rows{evaluated_row(item(3), 0, 1), evaluated_row(item(1), 0, 2)};
  auto on = [](json m, const char* device) {
    m["device"] = device;
    return m;
  };
  std::vector<json> events{json{{"event", "session"}, {"run_id", "run-x"}, {"session", 1}},
                           plan_to_json(plan(0, 0, {item(1), item(2), item(3), item(4), item(5)})),
                           on(marker("evaluate", item(1), 1), "cuda:0"),
                           on(marker("evaluate", item(2), 1), "cuda:1"),
                           on(marker("evaluate", item(3), 1), "cuda:0"),
                           on(marker("evaluate", item(4), 1), "cuda:0")};
  ResumePoint rp = find_resume_point(rows, events);
  ASSERT_EQ(rp.crashed.size(), 2u);
  std::map<std::string, std::string> device_of;
  for (const auto& c : rp.crashed) device_of[c.item.key()] = c.device;
  EXPECT_EQ(device_of[item(2).key()], "cuda:1");
  EXPECT_EQ(device_of[item(4).key()], "cuda:0");
  ASSERT_EQ(rp.unfinished.size(), 1u);
  ASSERT_EQ(rp.unfinished[0].items.size(), 1u);
  EXPECT_EQ(rp.unfinished[0].items[0].key(), item(5).key());
}

TEST(Resume, CandidateInFlightIsRecordedAsCrashNotRunAgain) {
  // Generation 0 planned 3; the first was evaluated, the second was being measured when
  // the machine died, the third never started.
  std::vector<HistoryRow> rows{evaluated_row(item(1), 0, 1)};
  std::vector<json> events{json{{"event", "session"}, {"run_id", "run-x"}, {"session", 1}},
                           plan_to_json(plan(0, 0, {item(1), item(2), item(3)})),
                           marker("evaluate", item(1), 1),
                           marker("evaluate", item(2), 1)};
  ResumePoint rp = find_resume_point(rows, events);
  EXPECT_EQ(rp.run_id, "run-x");
  EXPECT_EQ(rp.session, 2);
  ASSERT_EQ(rp.crashed.size(), 1u);
  EXPECT_EQ(rp.crashed[0].item.key(), item(2).key());
  EXPECT_EQ(rp.crashed[0].generation, 0);
  EXPECT_NE(rp.crashed[0].message.find("in flight"), std::string::npos);
  ASSERT_EQ(rp.unfinished.size(), 1u);
  ASSERT_EQ(rp.unfinished[0].items.size(), 1u) << "the crashed one is not planned again";
  EXPECT_EQ(rp.unfinished[0].items[0].key(), item(3).key());
  EXPECT_EQ(rp.next_generation, 1);
}

TEST(Resume, ACompileInterruptedOnceIsRetriedTwiceIsACrash) {
  std::vector<json> events{plan_to_json(plan(0, 0, {item(1), item(2), item(3)})),
                           marker("compile", item(1), 1), marker("compile", item(2), 1),
                           marker("compiled", item(1), 1)};
  ResumePoint first = find_resume_point({}, events);
  EXPECT_TRUE(first.crashed.empty()) << "compile-ahead compiles several at once: one stop does not say which";
  ASSERT_EQ(first.unfinished.size(), 1u);
  EXPECT_EQ(first.unfinished[0].items.size(), 3u);

  // The next session compiles it again and dies again.
  events.push_back(json{{"event", "session"}, {"session", 2}});
  events.push_back(marker("compile", item(2), 2));
  ResumePoint second = find_resume_point({}, events);
  ASSERT_EQ(second.crashed.size(), 1u);
  EXPECT_EQ(second.crashed[0].item.key(), item(2).key());
  EXPECT_NE(second.crashed[0].message.find("compiled"), std::string::npos);
  ASSERT_EQ(second.unfinished.size(), 1u);
  EXPECT_EQ(second.unfinished[0].items.size(), 2u);
  EXPECT_EQ(second.session, 3);
}

TEST(Resume, UnfinishedPlanKeepsItsRejectionsInOrder) {
  // Plan of generation 4 made when the history had 10 rows: 3 rejections, then 2
  // candidates. Two rejection rows made it to disk.
  std::vector<HistoryRow> rows;
  for (int i = 0; i < 10; ++i) rows.push_back(evaluated_row(item(100 + i), i / 3, i + 1));
  for (int i = 0; i < 2; ++i) {
    HistoryRow r;
    r.row = 11 + i;
    r.generation = 4;
    r.stage = kStageProposal;
    r.outcome = Outcome::kInvalid;
    rows.push_back(r);
  }
  std::vector<json> events{plan_to_json(plan(4, 10, {item(1), item(2)}, 3))};
  ResumePoint rp = find_resume_point(rows, events);
  ASSERT_EQ(rp.unfinished.size(), 1u);
  EXPECT_EQ(rp.unfinished[0].generation, 4);
  ASSERT_EQ(rp.unfinished[0].rejected.size(), 1u);
  EXPECT_EQ(rp.unfinished[0].rejected[0].reason, "A must be a JSON integer 2");
  EXPECT_EQ(rp.unfinished[0].items.size(), 2u);
  EXPECT_EQ(rp.next_generation, 5);
}

TEST(Resume, FinishedPlanMeansTheNextGeneration) {
  std::vector<HistoryRow> rows{evaluated_row(item(1), 2, 1), evaluated_row(item(2), 2, 2)};
  std::vector<json> events{plan_to_json(plan(2, 0, {item(1), item(2)})), marker("evaluate", item(1), 1),
                           marker("evaluate", item(2), 1)};
  ResumePoint rp = find_resume_point(rows, events);
  EXPECT_TRUE(rp.unfinished.empty());
  EXPECT_TRUE(rp.crashed.empty());
  EXPECT_EQ(rp.next_generation, 3);
  EXPECT_EQ(rp.run_id, "run-x") << "taken from the history when the journal has no session";
}

TEST(Resume, WithoutAJournalTheHistoryIsEnough) {
  std::vector<HistoryRow> rows{evaluated_row(item(1), 0, 1), evaluated_row(item(2), 7, 2, 3)};
  ResumePoint rp = find_resume_point(rows, {});
  EXPECT_EQ(rp.next_generation, 8);
  EXPECT_EQ(rp.session, 4);
  EXPECT_TRUE(rp.unfinished.empty());
}

TEST(Generation, SplitsProposerNames) {
  std::string p, m;
  split_proposer_name("evolve", &p, &m);
  EXPECT_EQ(p, "evolve");
  EXPECT_EQ(m, "");
  split_proposer_name("llm:gpt-5", &p, &m);
  EXPECT_EQ(p, "llm");
  EXPECT_EQ(m, "gpt-5");
  split_proposer_name("llm:org/model:7b+evolve", &p, &m);
  EXPECT_EQ(p, "llm");
  EXPECT_EQ(m, "org/model:7b");
}

TEST(Generation, PlanRoundTripsThroughJson) {
  GenerationPlan p = plan(3, 17, {item(1), item(2)}, 2);
  auto back = plan_from_json(json::parse(plan_to_json(p).dump()));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->generation, 3);
  EXPECT_EQ(back->rows_before, 17);
  ASSERT_EQ(back->items.size(), 2u);
  EXPECT_EQ(back->items[1].config, item(2).config);
  EXPECT_EQ(back->items[1].key(), item(2).key());
  EXPECT_EQ(back->items[0].rationale, "r1");
  ASSERT_EQ(back->rejected.size(), 2u);
  EXPECT_EQ(back->rejected[1].reason, "A must be a JSON integer 1");
}

TEST(Resume, OverlappedPlansLeaveEveryUnstartedCandidateToFinish) {
  // Overlapped generations: plan 0's last two candidates were compiled and queued when
  // plan 1 was made; the kill came while item 2 was measured. Item 3 (plan 0) and items
  // 4, 5 (plan 1) never started; item 5 was planned again in plan 1 too.
  std::vector<HistoryRow> rows{evaluated_row(item(1), 0, 1)};
  std::vector<json> events{json{{"event", "session"}, {"run_id", "run-x"}, {"session", 1}},
                           plan_to_json(plan(0, 0, {item(1), item(2), item(3), item(5)})),
                           marker("evaluate", item(1), 1),
                           plan_to_json(plan(1, 0, {item(4), item(5)})),
                           marker("evaluate", item(2), 1)};
  ResumePoint rp = find_resume_point(rows, events);
  ASSERT_EQ(rp.crashed.size(), 1u);
  EXPECT_EQ(rp.crashed[0].item.key(), item(2).key());
  ASSERT_EQ(rp.unfinished.size(), 2u) << "the older plan's queued candidates are not forgotten";
  EXPECT_EQ(rp.unfinished[0].generation, 0);
  ASSERT_EQ(rp.unfinished[0].items.size(), 2u);
  EXPECT_EQ(rp.unfinished[0].items[0].key(), item(3).key());
  EXPECT_EQ(rp.unfinished[0].items[1].key(), item(5).key());
  EXPECT_EQ(rp.unfinished[1].generation, 1);
  ASSERT_EQ(rp.unfinished[1].items.size(), 1u) << "a candidate in two plans is finished once";
  EXPECT_EQ(rp.unfinished[1].items[0].key(), item(4).key());
  EXPECT_EQ(rp.next_generation, 2);
}

}  // namespace
}  // namespace tilesmith
