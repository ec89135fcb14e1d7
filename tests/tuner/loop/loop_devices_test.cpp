// The generation loop with several devices measuring at once (threads standing in for
// worker processes): completion order, a stop with several candidates in flight, and the
// evaluation budget counting what is in flight, and the templates' proposers asked at once.

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/tuner/loop/loop_fixture.h"

namespace tilesmith::loop_test {
namespace {

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
  Evaluator& evaluator() override { return compiler_ ? *compiler_ : facade_; }
  // Compiles (prepare) go to this evaluator instead of the recording's, e.g. one that takes time.
  void compile_with(Evaluator* e) { compiler_ = e; }
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
      if (job.second) job.second(job.first.tag, "test-host", labels_[device]);
      std::this_thread::sleep_for(std::chrono::milliseconds(3 * ((job.first.tag * 7) % 5)));
      RunnerResult r;
      r.tag = job.first.tag;
      r.host = "test-host";
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
  Evaluator* compiler_ = nullptr;
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
  for (const auto& r : rows) {
    std::string text = outcome_name(r.outcome);
    if (r.median_ms) text.append(" ").append(format_number(*r.median_ms));
    m[r.key()] = text;
  }
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

TEST(Loop, AHistoryGuidedSearchEvaluatesTheSameConfigsOnOneDeviceAsOnThree) {
  // evolve learns from the trials. Three devices return a generation's results in
  // another order than one device does; the proposers must see them in one order all
  // the same (by config hash within a generation), or the next generations differ.
  Fixture f;
  std::map<std::string, std::string> one, three;
  {
    auto proposer = make_offline_proposer("evolve");
    LoopOptions o = f.options(fresh_dir("loop_devices_evolve_one"), 42);
    o.retime_top = 0;
    auto loop = GenerationLoop::open(f.replay, {{&f.tmpl, proposer->get()}}, o);
    ASSERT_TRUE(loop.ok());
    Observer obs;
    auto r = (*loop)->run(obs, nullptr, nullptr);
    ASSERT_TRUE(r.ok());
    one = outcome_by_key(r->rows);
  }
  {
    std::map<std::string, int> evaluations;
    ThreadedRunner runner(f.recording, 7, 3, &evaluations);
    auto proposer = make_offline_proposer("evolve");
    LoopOptions o = f.options(fresh_dir("loop_devices_evolve_three"), 42);
    o.retime_top = 0;
    auto loop = GenerationLoop::open(runner, {{&f.tmpl, proposer->get()}}, o);
    ASSERT_TRUE(loop.ok());
    Observer obs;
    auto r = (*loop)->run(obs, nullptr, nullptr);
    ASSERT_TRUE(r.ok());
    three = outcome_by_key(r->rows);
    for (const auto& row : r->rows)
      if (!row.device.empty()) {
        EXPECT_EQ(row.host, "test-host") << "the runner's host names the row";
      }
  }
  EXPECT_EQ(one.size(), 42u);
  EXPECT_EQ(three, one);
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

// Overlapped generations (LoopOptions::overlap_generations): the next generation is
// planned while the last candidates of one are measured. The budget is spent exactly,
// nothing is measured twice (a plan made meanwhile leaves out what is in flight), and a
// run stopped with candidates of two generations in flight resumes to the budget without
// repeating one.
TEST(Loop, OverlappedGenerationsSpendTheBudgetExactlyAndNeverMeasureTwice) {
  Fixture f;
  const fs::path dir = fresh_dir("loop_devices_overlap");
  std::map<std::string, int> evaluations;  // over every session
  LoopReport last;
  bool overlapped = false;
  for (std::int64_t stop_after : {7, 19, -1}) {
    ThreadedRunner runner(f.recording, 7, 3, &evaluations);
    auto proposer = make_offline_proposer("evolve");
    LoopOptions o = f.options(dir, 60);
    o.retime_top = 0;
    o.overlap_generations = true;
    auto loop = GenerationLoop::open(runner, {{&f.tmpl, proposer->get()}}, o);
    ASSERT_TRUE(loop.ok()) << loop.status().to_string();
    Observer obs;
    obs.stop_after = stop_after;
    auto r = (*loop)->run(obs, &obs.stop, nullptr);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    last = *r;
    // Every generation measured in this session is reported done, also one whose last
    // queued candidates a stop dropped.
    std::set<int> measured, reported;
    for (const auto& row : r->rows)
      if (row.session == r->session && row.evaluated()) measured.insert(row.generation);
    for (const auto& line : obs.logs)
      if (int g = -1; std::sscanf(line.c_str(), "generation %d: ", &g) == 1 && line.find(" evaluated") != std::string::npos)
        reported.insert(g);
    for (int g : measured) EXPECT_TRUE(reported.count(g)) << "generation " << g << " of session " << r->session;
  }
  EXPECT_EQ(last.reason, StopReason::kMaxEvals);
  std::set<std::string> keys;
  std::int64_t evaluated = 0;
  for (const auto& r : last.rows) {
    if (!r.evaluated()) continue;
    ++evaluated;
    EXPECT_TRUE(keys.insert(r.key()).second) << r.key() << " recorded twice";
    EXPECT_NE(r.outcome, Outcome::kCrash) << "a stop finishes what is in flight";
  }
  EXPECT_EQ(evaluated, 60) << "the budget, exactly";
  for (const auto& [hash, n] : evaluations) EXPECT_EQ(n, 1) << "measured twice: " << hash;
  // Some plan was made before the generation ahead of it had all its rows: a row of an
  // earlier generation comes after the plan of a later one.
  auto journal = RunJournal::open(dir / "journal.jsonl");
  ASSERT_TRUE(journal.ok());
  std::int64_t rows_seen = 0;
  std::map<int, std::int64_t> plan_rows_before;
  for (const auto& e : journal->events())
    if (e.value("event", "") == "plan") {
      auto plan = plan_from_json(e);
      ASSERT_TRUE(plan.ok());
      plan_rows_before[plan->generation] = plan->rows_before;
    }
  for (const auto& r : last.rows) {
    ++rows_seen;
    for (const auto& [g, before] : plan_rows_before)
      if (g > r.generation && before < r.row) overlapped = true;
  }
  EXPECT_GT(rows_seen, 0);
  EXPECT_TRUE(overlapped) << "a later generation was planned while an earlier one was still being measured";
}

// Around a proposer: notes, each time it is asked, whether a compile of an earlier plan is
// still under way.
class CompileWatchingProposer final : public Proposer {
 public:
  CompileWatchingProposer(std::unique_ptr<Proposer> inner, const CountingEvaluator& compiler)
      : inner_(std::move(inner)), compiler_(compiler) {}
  std::string name() const override { return inner_->name(); }
  ProposalBatch propose(const ProposalRequest& request) override {
    if (compiler_.compiling() > 0) ++asked_while_compiling;
    return inner_->propose(request);
  }
  int asked_while_compiling = 0;

 private:
  std::unique_ptr<Proposer> inner_;
  const CountingEvaluator& compiler_;
};

// Overlapped generations do not wait for a plan's slowest compile: the next plan is proposed
// while a slow compile of an earlier one is still under way (its finished compiles are
// measured meanwhile), and the budget is still spent exactly with nothing measured twice.
TEST(Loop, OverlappedPlanningDoesNotWaitForASlowCompile) {
  Fixture f;
  std::map<std::string, int> evaluations;
  ThreadedRunner runner(f.recording, 7, 2, &evaluations);
  replay::ReplayEvaluator replay{f.recording, 7};
  CountingEvaluator compiler(replay);
  compiler.set_compile_ms([](const Config& c) { return c.at("C") == 2 ? 400 : 2; });
  runner.compile_with(&compiler);
  CompileWatchingProposer proposer(std::move(make_offline_proposer("random")).value(), compiler);
  LoopOptions o = f.options(fresh_dir("loop_devices_slow_compile_overlap"), 40);
  o.retime_top = 0;
  o.candidates = 8;
  o.compile_threads = 3;
  o.overlap_generations = true;
  auto loop = GenerationLoop::open(runner, {{&f.tmpl, &proposer}}, o);
  ASSERT_TRUE(loop.ok()) << loop.status().to_string();
  Observer obs;
  auto report = (*loop)->run(obs, nullptr, nullptr);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(report->reason, StopReason::kMaxEvals);
  std::int64_t evaluated = 0;
  std::set<std::string> keys;
  for (const auto& r : report->rows) {
    if (!r.evaluated()) continue;
    ++evaluated;
    EXPECT_TRUE(keys.insert(r.key()).second) << r.key() << " recorded twice";
  }
  EXPECT_EQ(evaluated, 40) << "the budget, exactly";
  for (const auto& [hash, n] : evaluations) EXPECT_EQ(n, 1) << "measured twice: " << hash;
  int slow_before_last = 0;  // slow configs planned before the last generation: what the check needs
  int last_generation = 0;
  for (const auto& r : report->rows) last_generation = std::max(last_generation, r.generation);
  for (const auto& r : report->rows)
    if (r.generation < last_generation && r.config.find("\"C\":2") != std::string::npos) ++slow_before_last;
  ASSERT_GT(slow_before_last, 0) << "no slow compile before the last plan: the run shows nothing";
  EXPECT_GT(proposer.asked_while_compiling, 0) << "every plan waited for the compiles of the plans before it";
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

// Around a proposer: says whether it is independent as told, and counts how many of its
// kind were inside propose() at once (each call waits a moment so that calls made at
// once overlap).
class ProbedProposer final : public Proposer {
 public:
  ProbedProposer(std::unique_ptr<Proposer> inner, bool independent, std::atomic<int>* active, std::atomic<int>* most)
      : inner_(std::move(inner)), independent_(independent), active_(active), most_(most) {}
  std::string name() const override { return inner_->name(); }
  bool independent() const override { return independent_; }
  ProposalBatch propose(const ProposalRequest& request) override {
    const int now = ++*active_;
    for (int seen = most_->load(); now > seen && !most_->compare_exchange_weak(seen, now);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    ProposalBatch b = inner_->propose(request);
    --*active_;
    return b;
  }

 private:
  std::unique_ptr<Proposer> inner_;
  bool independent_;
  std::atomic<int>* active_;
  std::atomic<int>* most_;
};

TEST(Loop, IndependentProposersAreAskedAtOnceAndPlanWhatAskingInTurnPlans) {
  // Two templates split by gain, evolve for each: asked at once (independent) or one
  // after the other, the run evaluates the same configurations in the same order.
  Fixture f;
  auto second = synthetic("Synthetic GPU", {1, 2, 4, 8, 16}, "second");
  KernelTemplate second_tmpl = replay::recorded_template(*second);
  auto run = [&](bool independent, int* most_at_once) {
    std::atomic<int> active{0}, most{0};
    ProbedProposer p1(std::move(make_offline_proposer("evolve")).value(), independent, &active, &most);
    ProbedProposer p2(std::move(make_offline_proposer("evolve")).value(), independent, &active, &most);
    LoopOptions o = f.options(fresh_dir(independent ? "loop_propose_at_once" : "loop_propose_in_turn"), 40);
    o.retime_top = 0;
    o.candidates = 4;
    replay::ReplayEvaluator replay{f.recording, 7};  // a fresh one: its draws depend on what it answered before
    auto loop = GenerationLoop::open(replay, {{&f.tmpl, &p1}, {&second_tmpl, &p2}}, o);
    EXPECT_TRUE(loop.ok()) << loop.status().to_string();
    Observer obs;
    auto report = (*loop)->run(obs, nullptr, nullptr);
    EXPECT_TRUE(report.ok()) << report.status().to_string();
    *most_at_once = most.load();
    return report.ok() ? sequence(report->rows) : std::vector<std::string>{};
  };
  int at_once = 0, in_turn = 0;
  const std::vector<std::string> parallel = run(true, &at_once);
  const std::vector<std::string> serial = run(false, &in_turn);
  EXPECT_EQ(parallel.size(), 40u);
  EXPECT_EQ(parallel, serial);
  EXPECT_EQ(at_once, 2) << "independent proposers are asked at once";
  EXPECT_EQ(in_turn, 1) << "others one after the other";

  // One independent proposer serving both templates is never called twice at once.
  std::atomic<int> active{0}, most{0};
  ProbedProposer shared(std::move(make_offline_proposer("random")).value(), true, &active, &most);
  LoopOptions o = f.options(fresh_dir("loop_propose_shared"), 16);
  o.retime_top = 0;
  o.candidates = 4;
  replay::ReplayEvaluator replay{f.recording, 7};
  auto loop = GenerationLoop::open(replay, {{&f.tmpl, &shared}, {&second_tmpl, &shared}}, o);
  ASSERT_TRUE(loop.ok()) << loop.status().to_string();
  Observer obs;
  ASSERT_TRUE((*loop)->run(obs, nullptr, nullptr).ok());
  EXPECT_EQ(most.load(), 1);
}

}  // namespace
}  // namespace tilesmith::loop_test
