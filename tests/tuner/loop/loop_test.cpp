// The generation loop in-process, on a small synthetic Kernel Tuner recording replayed by
// the real ReplayEvaluator, so each test runs in well under a second.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/format.h"
#include "runtime/replay/kernel_tuner_cache.h"
#include "runtime/replay/recorded_template.h"
#include "runtime/replay/replay_evaluator.h"
#include "tests/cli/process.h"
#include "tuner/loop/candidate_runner.h"
#include "tuner/records/journal.h"
#include "tuner/loop/loop.h"
#include "tuner/search/offline_proposers.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using testing::fresh_dir;

// A x B x C = 5 x 5 x 3 configurations; time falls towards A=8, B=4, C=1; a few fail.
std::shared_ptr<const replay::Recording> synthetic(const std::string& device = "Synthetic GPU",
                                                   std::vector<int> a_values = {1, 2, 4, 8, 16},
                                                   const std::string& name = "synthetic") {
  json cache = json::object();
  for (int a : a_values)
    for (int b : {1, 2, 4, 8, 16})
      for (int c : {0, 1, 2}) {
        const std::string key = std::to_string(a) + "," + std::to_string(b) + "," + std::to_string(c);
        json rec{{"A", a}, {"B", b}, {"C", c}, {"compile_time", 100.0}};
        if (a == 16 && b == 16) {
          rec["time"] = "CompilationFailedConfig";
        } else {
          const double t = 1.0 + std::abs(std::log2(double(a)) - 3) + std::abs(std::log2(double(b)) - 2) * 0.7 +
                           std::abs(c - 1) * 0.3;
          rec["time"] = t;
          rec["times"] = json::array({t * 0.99, t, t * 1.01, t * 1.02});
        }
        cache[key] = rec;
      }
  json j{{"device_name", device},
         {"kernel_name", name},
         {"problem_size", {1024, 1024}},
         {"objective", "time"},
         {"tune_params_keys", {"A", "B", "C"}},
         {"tune_params", {{"A", a_values}, {"B", {1, 2, 4, 8, 16}}, {"C", {0, 1, 2}}}},
         {"cache", cache}};
  auto parsed = replay::parse_kernel_tuner_cache(j.dump(), "synthetic.json");
  EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
  replay::RecordingOptions o;
  o.find_space_file = false;
  auto rec = replay::Recording::from_cache(std::move(parsed).value(), name, name + ".json", o);
  EXPECT_TRUE(rec.ok()) << rec.status().to_string();
  return *rec;
}

// Around the real evaluator: counts evaluations per config and, when asked, takes time
// like a compiler (prepare) and a GPU (evaluate) would.
class CountingEvaluator final : public Evaluator {
 public:
  explicit CountingEvaluator(Evaluator& inner, int compile_ms = 0, int measure_ms = 0)
      : inner_(inner), compile_ms_(compile_ms), measure_ms_(measure_ms) {}
  const DeviceFacts& device() const override { return inner_.device(); }
  Evaluation prepare(const KernelTemplate& t, const GemmProblem& p, const Config& c) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(compile_ms_));
    {
      std::lock_guard lock(mutex_);
      compiled_.insert(config_hash(c));
    }
    return inner_.prepare(t, p, c);
  }
  Evaluation evaluate(const KernelTemplate& t, const GemmProblem& p, const Config& c) override {
    bool compiled;
    {
      std::lock_guard lock(mutex_);
      compiled = compiled_.count(config_hash(c)) > 0;
      ++evaluations_[config_hash(c)];
    }
    if (!compiled) std::this_thread::sleep_for(std::chrono::milliseconds(compile_ms_));
    std::this_thread::sleep_for(std::chrono::milliseconds(measure_ms_));
    return inner_.evaluate(t, p, c);
  }
  Result<Evaluation> vendor_baseline(const GemmProblem& p) override { return inner_.vendor_baseline(p); }
  std::string vendor_name() const override { return inner_.vendor_name(); }
  std::map<std::string, int> evaluations() const {
    std::lock_guard lock(mutex_);
    return evaluations_;
  }

 private:
  Evaluator& inner_;
  int compile_ms_, measure_ms_;
  mutable std::mutex mutex_;
  std::set<std::string> compiled_;
  std::map<std::string, int> evaluations_;
};

class Observer final : public LoopObserver {
 public:
  std::vector<std::string> logs;
  std::int64_t rows = 0;
  std::int64_t stop_after = -1;
  std::atomic<bool> stop{false};
  void log(LogLevel, const std::string& m) override { logs.push_back(m); }
  void on_row(const HistoryRow&, const LoopProgress&) override {
    if (++rows == stop_after) stop = true;
  }
  void on_generation(const LoopProgress&) override {}
};

// Proposes what the script says for each generation; nothing once it runs out.
class ScriptedProposer final : public Proposer {
 public:
  std::map<int, ProposalBatch> script;
  std::string name() const override { return "scripted"; }
  ProposalBatch propose(const ProposalRequest& r) override {
    auto it = script.find(r.generation);
    if (it == script.end()) {
      ProposalBatch b;
      b.proposer = "scripted";
      b.status = Status::failed_precondition("script finished");
      return b;
    }
    return it->second;
  }
};

struct Fixture {
  std::shared_ptr<const replay::Recording> recording = synthetic();
  KernelTemplate tmpl = replay::recorded_template(*recording);
  replay::ReplayEvaluator replay{recording, 7};
  replay::ReplayEvaluator retimer{recording, 99};
  GemmProblem problem = recording->problem();

  LoopOptions options(const fs::path& dir, std::int64_t max_evals) const {
    LoopOptions o;
    o.results_dir = dir;
    o.problem = problem;
    o.candidates = 6;
    o.seed = 7;
    o.budget.max_evals = max_evals;
    o.compile_threads = 2;
    return o;
  }
};

std::vector<std::string> sequence(const std::vector<HistoryRow>& rows) {
  std::vector<std::string> s;
  for (const auto& r : rows)
    s.push_back(std::to_string(r.generation) + " " + r.stage + " " + r.config_hash + " " + outcome_name(r.outcome));
  return s;
}

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
  EXPECT_FALSE((*loop)->resume_point().unfinished);
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

// Several devices without processes: `width` threads, each with its own evaluator over
// the same recording, take candidates from one queue and call OnSend on their thread,
// as WorkerRunner's device threads do. A candidate takes 0 to 12 ms depending on its
// place in the plan, so results come back out of plan order.
class ThreadedRunner final : public CandidateRunner {
 public:
  ThreadedRunner(std::shared_ptr<const replay::Recording> recording, std::uint64_t seed, int width,
                 std::map<std::string, int>* evaluations)
      : facade_(recording, seed), evaluations_(evaluations) {
    for (int i = 0; i < width; ++i) {
      devices_.push_back(std::make_unique<replay::ReplayEvaluator>(recording, seed));
      labels_.push_back("sim:" + std::to_string(i));
    }
    for (int i = 0; i < width; ++i) threads_.emplace_back([this, i] { work(static_cast<std::size_t>(i)); });
  }
  ~ThreadedRunner() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  Evaluator& evaluator() override { return facade_; }
  std::size_t width() const override { return devices_.size(); }
  std::size_t depth() const override { return 2 * devices_.size(); }
  std::vector<std::string> devices() const override { return labels_; }
  bool compiles_isolated() const override { return true; }
  void submit(RunnerCandidate c, OnSend on_send) override {
    {
      std::lock_guard lock(mu_);
      queue_.emplace_back(std::move(c), std::move(on_send));
      ++outstanding_;
    }
    work_cv_.notify_one();
  }
  std::optional<RunnerResult> next(std::chrono::milliseconds wait) override {
    std::unique_lock lock(mu_);
    if (!done_cv_.wait_for(lock, wait, [&] { return !done_.empty(); })) return std::nullopt;
    RunnerResult r = std::move(done_.front());
    done_.pop_front();
    --outstanding_;
    return r;
  }
  std::size_t outstanding() const override {
    std::lock_guard lock(mu_);
    return outstanding_;
  }
  std::vector<std::uint64_t> cancel_queued() override {
    std::lock_guard lock(mu_);
    std::vector<std::uint64_t> tags;
    for (const auto& [c, s] : queue_) tags.push_back(c.tag);
    outstanding_ -= queue_.size();
    queue_.clear();
    return tags;
  }
  int max_busy() const { return max_busy_.load(); }

 private:
  void work(std::size_t device) {
    for (;;) {
      std::pair<RunnerCandidate, OnSend> job;
      {
        std::unique_lock lock(mu_);
        work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        job = std::move(queue_.front());
        queue_.pop_front();
        (*evaluations_)[config_hash(job.first.config)]++;
      }
      const int now = ++busy_;
      for (int m = max_busy_.load(); now > m && !max_busy_.compare_exchange_weak(m, now);) {
      }
      if (job.second) job.second(job.first.tag, labels_[device]);
      std::this_thread::sleep_for(std::chrono::milliseconds(3 * ((job.first.tag * 7) % 5)));
      RunnerResult r;
      r.tag = job.first.tag;
      r.device = labels_[device];
      r.evaluation = devices_[device]->evaluate(*job.first.tmpl, job.first.problem, job.first.config);
      r.eval_ms = 1;
      --busy_;
      {
        std::lock_guard lock(mu_);
        done_.push_back(std::move(r));
      }
      done_cv_.notify_all();
    }
  }

  replay::ReplayEvaluator facade_;
  std::vector<std::unique_ptr<replay::ReplayEvaluator>> devices_;
  std::vector<std::string> labels_;
  std::map<std::string, int>* evaluations_;  // guarded by mu_
  mutable std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::pair<RunnerCandidate, OnSend>> queue_;
  std::deque<RunnerResult> done_;
  std::size_t outstanding_ = 0;
  bool stopping_ = false;
  std::atomic<int> busy_{0}, max_busy_{0};
  std::vector<std::thread> threads_;
};

std::map<std::string, std::string> outcome_by_key(const std::vector<HistoryRow>& rows) {
  std::map<std::string, std::string> m;
  for (const auto& r : rows)
    m[r.key()] = std::string(outcome_name(r.outcome)) + (r.median_ms ? " " + format_number(*r.median_ms) : "");
  return m;
}

TEST(Loop, SeveralDevicesMeasureAtOnceAndRowsComeInCompletionOrder) {
  Fixture f;
  LoopReport inline_report;
  {
    auto proposer = make_offline_proposer("random");
    LoopOptions o = f.options(fresh_dir("loop_devices_inline"), 36);
    o.retime_top = 0;
    auto loop = GenerationLoop::open(f.replay, {{&f.tmpl, proposer->get()}}, o);
    ASSERT_TRUE(loop.ok());
    Observer obs;
    auto r = (*loop)->run(obs, nullptr, nullptr);
    ASSERT_TRUE(r.ok());
    inline_report = *r;
  }
  const fs::path dir = fresh_dir("loop_devices_three");
  std::map<std::string, int> evaluations;
  ThreadedRunner runner(f.recording, 7, 3, &evaluations);
  auto proposer = make_offline_proposer("random");
  LoopOptions o = f.options(dir, 36);
  o.retime_top = 0;
  auto loop = GenerationLoop::open(runner, {{&f.tmpl, proposer->get()}}, o);
  ASSERT_TRUE(loop.ok()) << loop.status().to_string();
  Observer obs;
  auto report = (*loop)->run(obs, nullptr, nullptr);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(report->devices, 3u);
  EXPECT_EQ(runner.max_busy(), 3) << "three candidates were measured at once";
  // The same candidates with the same answers as one device measuring them in turn.
  EXPECT_EQ(outcome_by_key(report->rows), outcome_by_key(inline_report.rows));
  for (const auto& [hash, n] : evaluations) EXPECT_EQ(n, 1) << hash;
  std::set<std::string> devices;
  bool out_of_plan_order = false;
  std::map<int, std::vector<std::string>> planned;  // generation -> keys in plan order
  {
    auto journal = RunJournal::open(dir / "journal.jsonl");
    ASSERT_TRUE(journal.ok());
    std::map<std::string, std::string> marker_device;
    for (const auto& e : journal->events()) {
      if (e.value("event", "") == "plan") {
        auto plan = plan_from_json(e);
        ASSERT_TRUE(plan.ok());
        for (const auto& item : plan->items) planned[plan->generation].push_back(item.key());
      }
      if (e.value("event", "") == "evaluate")
        marker_device[e.value("template", "") + "/" + e.value("config_hash", "")] = e.value("device", "");
    }
    for (const auto& r : report->rows) {
      if (r.outcome == Outcome::kCompileError) {
        EXPECT_EQ(r.device, "") << "found by compile-ahead: no device measured it";
        EXPECT_EQ(marker_device.count(r.key()), 0u);
        continue;
      }
      devices.insert(r.device);
      EXPECT_EQ(marker_device[r.key()], r.device) << "the started marker names the device that measured it";
    }
  }
  EXPECT_EQ(devices, (std::set<std::string>{"sim:0", "sim:1", "sim:2"}));
  for (const auto& [generation, keys] : planned) {
    std::vector<std::string> recorded;
    for (const auto& r : report->rows)
      if (r.generation == generation) recorded.push_back(r.key());
    EXPECT_EQ(std::set<std::string>(recorded.begin(), recorded.end()), std::set<std::string>(keys.begin(), keys.end()));
    out_of_plan_order |= recorded != keys;
  }
  EXPECT_TRUE(out_of_plan_order) << "rows are appended as results come, not in plan order";
}

TEST(Loop, StopWithSeveralInFlightRecordsThemAllAndResumesExactly) {
  Fixture f;
  std::map<std::string, std::string> whole;
  {
    std::map<std::string, int> evaluations;
    ThreadedRunner runner(f.recording, 7, 3, &evaluations);
    auto proposer = make_offline_proposer("random");
    LoopOptions o = f.options(fresh_dir("loop_devices_whole"), 45);
    o.retime_top = 0;
    auto loop = GenerationLoop::open(runner, {{&f.tmpl, proposer->get()}}, o);
    ASSERT_TRUE(loop.ok());
    Observer obs;
    auto r = (*loop)->run(obs, nullptr, nullptr);
    ASSERT_TRUE(r.ok());
    whole = outcome_by_key(r->rows);
  }
  const fs::path dir = fresh_dir("loop_devices_stops");
  std::map<std::string, int> evaluations;  // over every session
  LoopReport last;
  for (std::int64_t stop_after : {4, 13, -1}) {
    ThreadedRunner runner(f.recording, 7, 3, &evaluations);
    auto proposer = make_offline_proposer("random");
    LoopOptions o = f.options(dir, 45);
    o.retime_top = 0;
    auto loop = GenerationLoop::open(runner, {{&f.tmpl, proposer->get()}}, o);
    ASSERT_TRUE(loop.ok());
    EXPECT_TRUE((*loop)->resume_point().crashed.empty()) << "a stop finishes what is in flight";
    Observer obs;
    obs.stop_after = stop_after;
    auto r = (*loop)->run(obs, &obs.stop, nullptr);
    ASSERT_TRUE(r.ok());
    if (stop_after > 0) {
      EXPECT_EQ(r->reason, StopReason::kInterrupted);
      // Those in flight at the stop were finished and recorded, so there were more rows
      // than asked for and none is missing its started marker's result.
      EXPECT_GE(obs.rows, stop_after);
    }
    last = *r;
  }
  EXPECT_EQ(last.session, 3);
  EXPECT_EQ(outcome_by_key(last.rows), whole);
  for (const auto& r : last.rows) EXPECT_NE(r.outcome, Outcome::kCrash);
  for (const auto& [hash, n] : evaluations) EXPECT_EQ(n, 1) << "evaluated again after a stop: " << hash;
}

TEST(Loop, CandidatesInFlightCountAgainstTheEvaluationBudget) {
  // Two templates, --max-evals 5, 6 candidates each: the first gets 5, the second 1 (a
  // proposer is always asked for at least one), so the plan holds 6. One device stops at
  // the 5th row; three must not start the 6th while the 5th is still in flight.
  Fixture f;
  auto second = synthetic("Synthetic GPU", {1, 2, 4, 8, 16}, "second");
  KernelTemplate second_tmpl = replay::recorded_template(*second);
  std::map<std::string, int> evaluations;
  ThreadedRunner runner(f.recording, 7, 3, &evaluations);
  auto p1 = make_offline_proposer("random");
  auto p2 = make_offline_proposer("random");
  LoopOptions o = f.options(fresh_dir("loop_devices_budget"), 5);
  o.retime_top = 0;
  auto loop = GenerationLoop::open(runner, {{&f.tmpl, p1->get()}, {&second_tmpl, p2->get()}}, o);
  ASSERT_TRUE(loop.ok()) << loop.status().to_string();
  Observer obs;
  auto report = (*loop)->run(obs, nullptr, nullptr);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(report->reason, StopReason::kMaxEvals);
  EXPECT_EQ(report->rows.size(), 5u);
  int started = 0;
  for (const auto& [hash, n] : evaluations) started += n;
  EXPECT_LE(started, 5);
}

}  // namespace
}  // namespace tilesmith
