// The generation loop in-process, on a small synthetic Kernel Tuner recording replayed by
// the real ReplayEvaluator, so each test runs in well under a second: budgets, resume,
// rejections, plateau, folder checks and locking. Several devices: loop_devices_test.cpp.

#include <fstream>

#include "tests/tuner/loop/loop_fixture.h"

namespace tilesmith::loop_test {
namespace {

TEST(Loop, RunsToTheBudgetAndRecordsEverything) {
  Fixture f;
  const fs::path dir = fresh_dir("loop_budget");
  auto proposer = make_offline_proposer("evolve");
  ASSERT_TRUE(proposer.ok());
  CountingEvaluator ev(f.replay);
  auto loop = GenerationLoop::open(ev, {{&f.tmpl, proposer->get()}}, f.options(dir, 30));
  ASSERT_TRUE(loop.ok()) << loop.status().to_string();
  Observer obs;
  auto report = (*loop)->run(obs, nullptr, &f.retimer);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(report->reason, StopReason::kMaxEvals);
  ASSERT_EQ(report->rows.size(), 30u);
  std::set<std::string> keys;
  double first_ok = 0, best = 1e9;
  for (const auto& r : report->rows) {
    EXPECT_TRUE(r.evaluated());
    EXPECT_TRUE(keys.insert(r.key()).second) << "evaluated twice: " << r.config;
    EXPECT_EQ(r.run_id, report->run_id);
    EXPECT_EQ(r.problem_key, f.problem.key());
    if (r.ok()) {
      if (first_ok == 0) first_ok = *r.median_ms;
      best = std::min(best, *r.median_ms);
    }
  }
  EXPECT_LT(best, first_ok) << "the search improves on its first valid config";
  for (const auto& [hash, n] : ev.evaluations()) EXPECT_EQ(n, 1) << hash;

  // Re-timed finalists, and the winner in best_config.json.
  EXPECT_EQ(report->retimes.size(), 3u);
  ASSERT_EQ(report->winners.size(), 1u);
  EXPECT_EQ(report->winners[0].metrics["source"], "retime");
  auto entries = read_best_config(dir / "best_config.json");
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ((*entries)[0].template_name, "synthetic");
  EXPECT_EQ((*entries)[0].device_fingerprint, f.replay.device().fingerprint());
  EXPECT_EQ((*entries)[0].retime.size(), 3u);
  EXPECT_TRUE((*entries)[0].provenance.contains("history_row"));
  const auto row = (*entries)[0].provenance["history_row"].get<std::int64_t>();
  EXPECT_EQ(report->rows[static_cast<std::size_t>(row - 1)].config, config_to_json_text((*entries)[0].config));
}

TEST(Loop, StoppedRunResumesToTheSameHistoryAndBest) {
  Fixture f;
  auto run_to_end = [&](const fs::path& dir, std::vector<std::int64_t> stops, CountingEvaluator& ev) {
    LoopReport last;
    replay::ReplayEvaluator retimer{f.recording, 99};
    stops.push_back(-1);
    for (std::int64_t stop_after : stops) {
      // A new process has a new proposer: the equality needs one whose answer depends only
      // on the seed and the history ("random"; "evolve" keeps state between calls).
      auto proposer = make_offline_proposer("random");
      auto loop = GenerationLoop::open(ev, {{&f.tmpl, proposer->get()}}, f.options(dir, 45));
      EXPECT_TRUE(loop.ok()) << loop.status().to_string();
      if (!loop.ok()) return last;
      Observer obs;
      obs.stop_after = stop_after;
      auto report = (*loop)->run(obs, &obs.stop, &retimer);
      EXPECT_TRUE(report.ok()) << report.status().to_string();
      if (stop_after >= 0) {
        EXPECT_EQ(report->reason, StopReason::kInterrupted);
      }
      last = *report;
    }
    return last;
  };
  CountingEvaluator whole_ev(f.replay);
  LoopReport whole = run_to_end(fresh_dir("loop_whole"), {}, whole_ev);
  replay::ReplayEvaluator replay2{f.recording, 7};
  CountingEvaluator pieces_ev(replay2);
  LoopReport pieces = run_to_end(fresh_dir("loop_pieces"), {4, 9, 17}, pieces_ev);

  EXPECT_EQ(sequence(pieces.rows), sequence(whole.rows));
  EXPECT_EQ(pieces.session, 4);
  for (const auto& [hash, n] : pieces_ev.evaluations()) EXPECT_EQ(n, 1) << "evaluated again after a stop: " << hash;
  ASSERT_EQ(pieces.winners.size(), 1u);
  ASSERT_EQ(whole.winners.size(), 1u);
  EXPECT_EQ(pieces.winners[0].config, whole.winners[0].config);
  EXPECT_EQ(pieces.winners[0].metrics["median_ms"], whole.winners[0].metrics["median_ms"]);
}

TEST(Loop, CandidateInFlightAtTheStopIsRecordedAsCrash) {
  Fixture f;
  const fs::path dir = fresh_dir("loop_inflight");
  CountingEvaluator ev(f.replay);
  PlanItem victim;
  {
    auto proposer = make_offline_proposer("random");
    auto loop = GenerationLoop::open(ev, {{&f.tmpl, proposer->get()}}, f.options(dir, 20));
    ASSERT_TRUE(loop.ok());
    Observer obs;
    obs.stop_after = 3;
    auto report = (*loop)->run(obs, &obs.stop, &f.retimer);
    ASSERT_TRUE(report.ok());
  }
  // What a kill -9 during the 4th candidate's measurement leaves: its "evaluate" marker.
  {
    auto journal = RunJournal::open(dir / "journal.jsonl");
    ASSERT_TRUE(journal.ok());
    std::optional<GenerationPlan> plan;
    for (const auto& e : journal->events())
      if (e.value("event", "") == "plan") plan = *plan_from_json(e);
    ASSERT_TRUE(plan && plan->items.size() > 3);
    victim = plan->items[3];
    json m = plan_item_to_json(victim);
    m["event"] = "evaluate";
    m["session"] = 1;
    m["generation"] = plan->generation;
    ASSERT_TRUE(journal->append(m).ok());
  }
  auto proposer = make_offline_proposer("random");
  auto loop = GenerationLoop::open(ev, {{&f.tmpl, proposer->get()}}, f.options(dir, 20));
  ASSERT_TRUE(loop.ok());
  ASSERT_EQ((*loop)->resume_point().crashed.size(), 1u);
  Observer obs;
  auto report = (*loop)->run(obs, nullptr, &f.retimer);
  ASSERT_TRUE(report.ok());
  int crash_rows = 0;
  for (const auto& r : report->rows)
    if (r.key() == victim.key()) {
      ++crash_rows;
      EXPECT_EQ(r.outcome, Outcome::kCrash);
      EXPECT_EQ(r.session, 2);
      EXPECT_NE(r.message.find("in flight"), std::string::npos);
    }
  EXPECT_EQ(crash_rows, 1);
  EXPECT_EQ(ev.evaluations().count(config_hash(victim.config)), 0u) << "the crashed candidate ran again";
  EXPECT_EQ(report->rows.size(), 20u);
}

TEST(Loop, CompileAheadKeepsTheMeasuringBusy) {
  Fixture f;
  auto run = [&](int threads) {
    CountingEvaluator ev(f.replay, /*compile_ms=*/30, /*measure_ms=*/30);
    auto proposer = make_offline_proposer("random");
    LoopOptions o = f.options(fresh_dir("loop_ahead_" + std::to_string(threads)), 12);
    o.compile_threads = threads;
    o.retime_top = 0;
    auto loop = GenerationLoop::open(ev, {{&f.tmpl, proposer->get()}}, o);
    EXPECT_TRUE(loop.ok());
    Observer obs;
    auto report = (*loop)->run(obs, nullptr, nullptr);
    EXPECT_TRUE(report.ok());
    return *report;
  };
  LoopReport serial = run(0), ahead = run(3);
  // Without compile-ahead every candidate waits for its compile (12 x 30 ms); with it
  // only the first of each generation does.
  EXPECT_GT(serial.compile_wait_s, 0.3);
  EXPECT_LT(ahead.compile_wait_s, serial.compile_wait_s / 2);
  EXPECT_GT(ahead.candidate_measure_s / ahead.wall_s, serial.candidate_measure_s / serial.wall_s);
}

// A slow compile does not hold up the candidates behind it whose compiles are done: some of them
// are measured before it (with one device, measuring strictly in plan order never does that),
// and every candidate is still measured exactly once.
TEST(Loop, SlowCompileDoesNotHoldUpFinishedOnes) {
  Fixture f;
  CountingEvaluator ev(f.replay, 0, /*measure_ms=*/15);
  ev.set_compile_ms([](const Config& c) { return c.at("C") == 2 ? 400 : 5; });
  auto proposer = make_offline_proposer("random");
  const fs::path dir = fresh_dir("loop_slow_compile");
  LoopOptions o = f.options(dir, 24);
  o.compile_threads = 3;
  o.retime_top = 0;
  auto loop = GenerationLoop::open(ev, {{&f.tmpl, proposer->get()}}, o);
  ASSERT_TRUE(loop.ok());
  Observer obs;
  auto report = (*loop)->run(obs, nullptr, nullptr);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  for (const auto& [hash, n] : ev.evaluations()) EXPECT_EQ(n, 1) << hash;

  // The plans as journaled (generation, config hash), and the order the configs were measured in.
  std::vector<std::pair<int, std::string>> planned;
  std::ifstream journal(dir / "journal.jsonl");
  for (std::string line; std::getline(journal, line);) {
    const json e = json::parse(line);
    if (e.value("event", "") != "plan") continue;
    for (const auto& item : e.at("items")) planned.emplace_back(e.at("generation").get<int>(), item.at("config_hash"));
  }
  const auto measured = ev.evaluate_order();
  ASSERT_GE(measured.size(), 20u);  // 24 evaluations, a few of them compile errors
  auto measured_at = [&](const std::string& h) { return std::find(measured.begin(), measured.end(), h) - measured.begin(); };
  int passed_over = 0;
  for (std::size_t a = 0; a < planned.size(); ++a)
    for (std::size_t b = a + 1; b < planned.size(); ++b)
      if (planned[a].first == planned[b].first && measured_at(planned[b].second) < measured_at(planned[a].second) &&
          measured_at(planned[a].second) < std::ptrdiff_t(measured.size()))
        ++passed_over;
  EXPECT_GT(passed_over, 0) << "every generation was measured in plan order, slow compiles and all";
}

TEST(Loop, RejectionsBecomeRowsAndKnownConfigsAreDropped) {
  Fixture f;
  const fs::path dir = fresh_dir("loop_rejections");
  ScriptedProposer p;
  ProposalBatch g0;
  g0.proposer = "llm:test-model";
  g0.proposals = {{{{"A", 8}, {"B", 4}, {"C", 1}}, "the optimum", ""},
                  {{{"A", 1}, {"B", 1}, {"C", 0}}, "a slow one", ""},
                  {{{"A", 3}, {"B", 4}, {"C", 1}}, "3 is not in the domain", ""}};
  g0.rejected = {{"{\"A\":\"8\",\"B\":4,\"C\":1}", "A must be a JSON integer, got the string \"8\""},
                 {"{\"rationale\":\"x\",\"A\":2,\"B\":2,\"C\":7}", "C=7 is not one of [0, 1, 2]"}};
  ProposalBatch g1;
  g1.proposer = "llm:test-model";
  g1.proposals = {{{{"A", 3}, {"B", 4}, {"C", 1}}, "again", ""}, {{{"A", 8}, {"B", 4}, {"C", 1}}, "again", ""},
                  {{{"A", 16}, {"B", 16}, {"C", 0}}, "fails to compile", ""}};
  p.script = {{0, g0}, {1, g1}};
  CountingEvaluator ev(f.replay);
  auto loop = GenerationLoop::open(ev, {{&f.tmpl, &p}}, f.options(dir, 0));
  ASSERT_TRUE(loop.ok());
  Observer obs;
  auto report = (*loop)->run(obs, nullptr, &f.retimer);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(report->reason, StopReason::kExhausted);
  const auto& rows = report->rows;
  ASSERT_EQ(rows.size(), 6u);
  // Generation 0: the proposer's two rejections, the loop's own, then the two evaluated.
  EXPECT_EQ(rows[0].stage, kStageProposal);
  EXPECT_EQ(rows[0].proposer, "llm");
  EXPECT_EQ(rows[0].model, "test-model");
  EXPECT_EQ(rows[0].config_hash, "") << "not a config: no identity";
  EXPECT_NE(rows[0].message.find("JSON integer"), std::string::npos);
  EXPECT_EQ(rows[1].stage, kStageProposal);
  EXPECT_FALSE(rows[1].config_hash.empty()) << "well-formed but off the domain: known from now on";
  EXPECT_EQ(rows[2].stage, kStageProposal);
  EXPECT_NE(rows[2].message.find("A=3"), std::string::npos) << rows[2].message;
  EXPECT_EQ(rows[3].outcome, Outcome::kOk);
  EXPECT_EQ(rows[3].rationale, "the optimum");
  EXPECT_EQ(rows[4].outcome, Outcome::kOk);
  // Generation 1: both repeats dropped; the new one fails to compile.
  EXPECT_EQ(rows[5].generation, 1);
  EXPECT_EQ(rows[5].outcome, Outcome::kCompileError);
  EXPECT_EQ(report->dropped_known, 2);
  for (const auto& r : rows) EXPECT_EQ(r.outcome == Outcome::kInvalid, r.stage == kStageProposal);
}

TEST(Loop, GenerationBudgetAndPlateau) {
  Fixture f;
  {
    auto proposer = make_offline_proposer("random");
    LoopOptions o = f.options(fresh_dir("loop_generations"), 0);
    o.budget.generations = 3;
    o.candidates = 2;
    auto loop = GenerationLoop::open(f.replay, {{&f.tmpl, proposer->get()}}, o);
    ASSERT_TRUE(loop.ok());
    Observer obs;
    auto report = (*loop)->run(obs, nullptr, &f.retimer);
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report->reason, StopReason::kGenerations);
    EXPECT_EQ(report->rows.size(), 6u);
    EXPECT_EQ(report->rows.back().generation, 2);
  }
  {
    ScriptedProposer p;  // the best first, then only slower ones
    auto batch = [](std::vector<Config> configs) {
      ProposalBatch b;
      b.proposer = "scripted";
      for (auto& c : configs) b.proposals.push_back({c, "", ""});
      return b;
    };
    p.script = {{0, batch({{{"A", 8}, {"B", 4}, {"C", 1}}})},
                {1, batch({{{"A", 1}, {"B", 1}, {"C", 0}}})},
                {2, batch({{{"A", 2}, {"B", 1}, {"C", 0}}})},
                {3, batch({{{"A", 4}, {"B", 1}, {"C", 0}}})},
                {4, batch({{{"A", 4}, {"B", 2}, {"C", 0}}})}};
    LoopOptions o = f.options(fresh_dir("loop_plateau"), 0);
    o.budget.patience = 2;
    auto loop = GenerationLoop::open(f.replay, {{&f.tmpl, &p}}, o);
    ASSERT_TRUE(loop.ok());
    Observer obs;
    auto report = (*loop)->run(obs, nullptr, &f.retimer);
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report->reason, StopReason::kPlateau) << report->detail;
    EXPECT_EQ(report->rows.size(), 3u) << "generations 1 and 2 found nothing faster";
  }
}

TEST(Loop, RefusesAFolderOfAnotherExperiment) {
  Fixture f;
  const fs::path dir = fresh_dir("loop_mismatch");
  {
    auto proposer = make_offline_proposer("random");
    auto loop = GenerationLoop::open(f.replay, {{&f.tmpl, proposer->get()}}, f.options(dir, 4));
    ASSERT_TRUE(loop.ok());
    Observer obs;
    ASSERT_TRUE((*loop)->run(obs, nullptr, &f.retimer).ok());
  }
  auto proposer = make_offline_proposer("random");
  {
    LoopOptions o = f.options(dir, 8);
    o.problem.k = 512;
    auto loop = GenerationLoop::open(f.replay, {{&f.tmpl, proposer->get()}}, o);
    ASSERT_FALSE(loop.ok());
    EXPECT_EQ(loop.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(loop.status().message().find("another problem"), std::string::npos) << loop.status().message();
    EXPECT_NE(loop.status().message().find("--results"), std::string::npos);
  }
  {
    auto other_device = synthetic("Other GPU");
    replay::ReplayEvaluator ev(other_device, 1);
    KernelTemplate t = replay::recorded_template(*other_device);
    auto loop = GenerationLoop::open(ev, {{&t, proposer->get()}}, f.options(dir, 8));
    ASSERT_FALSE(loop.ok());
    EXPECT_NE(loop.status().message().find("was recorded on Synthetic GPU"), std::string::npos)
        << loop.status().message();
  }
  {
    auto other_space = synthetic("Synthetic GPU", {1, 2, 4, 8});
    replay::ReplayEvaluator ev(other_space, 1);
    KernelTemplate t = replay::recorded_template(*other_space);
    auto loop = GenerationLoop::open(ev, {{&t, proposer->get()}}, f.options(dir, 8));
    ASSERT_FALSE(loop.ok());
    EXPECT_NE(loop.status().message().find("changed since"), std::string::npos) << loop.status().message();
  }
  auto history = read_history(dir / "history.csv");
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->rows.size(), 4u) << "a refused start changes nothing";
}

TEST(Loop, AJournalWithoutItsHistoryIsSetAside) {
  Fixture f;
  const fs::path dir = fresh_dir("loop_stale_journal");
  {
    auto proposer = make_offline_proposer("random");
    auto loop = GenerationLoop::open(f.replay, {{&f.tmpl, proposer->get()}}, f.options(dir, 12));
    ASSERT_TRUE(loop.ok());
    Observer obs;
    ASSERT_TRUE((*loop)->run(obs, nullptr, &f.retimer).ok());
  }
  fs::remove(dir / "history.csv");  // a user starting over, keeping the folder
  auto proposer = make_offline_proposer("random");
  auto loop = GenerationLoop::open(f.replay, {{&f.tmpl, proposer->get()}}, f.options(dir, 12));
  ASSERT_TRUE(loop.ok()) << loop.status().to_string();
  ASSERT_EQ((*loop)->notes().size(), 1u);
  EXPECT_NE((*loop)->notes()[0].find("moved it to"), std::string::npos) << (*loop)->notes()[0];
  EXPECT_TRUE((*loop)->resume_point().crashed.empty()) << "old markers are not taken for crashes";
  EXPECT_TRUE((*loop)->resume_point().unfinished.empty());
  Observer obs;
  auto report = (*loop)->run(obs, nullptr, &f.retimer);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->rows.size(), 12u);
  for (const auto& r : report->rows) EXPECT_NE(r.outcome, Outcome::kCrash);
  int stale = 0;
  for (const auto& e : fs::directory_iterator(dir))
    stale += e.path().filename().string().rfind("journal.jsonl.stale-", 0) == 0;
  EXPECT_EQ(stale, 1);
}

TEST(Loop, OneLoopPerFolder) {
  Fixture f;
  const fs::path dir = fresh_dir("loop_lock");
  auto p1 = make_offline_proposer("random");
  auto p2 = make_offline_proposer("random");
  auto first = GenerationLoop::open(f.replay, {{&f.tmpl, p1->get()}}, f.options(dir, 4));
  ASSERT_TRUE(first.ok());
  auto second = GenerationLoop::open(f.replay, {{&f.tmpl, p2->get()}}, f.options(dir, 4));
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("another autotune-loop"), std::string::npos) << second.status().message();
  first->reset();
  auto third = GenerationLoop::open(f.replay, {{&f.tmpl, p2->get()}}, f.options(dir, 4));
  EXPECT_TRUE(third.ok()) << "the lock goes with the loop";
}

}  // namespace
}  // namespace tilesmith::loop_test
