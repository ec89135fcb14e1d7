// The run's objective through the loop, on the replayed synthetic recording with energy
// figures a device would add: the winner, best_config.json, the proposers' scores and the
// certification follow the objective; a device without an energy counter stops a run for
// energy at once and says why; a folder keeps the objective it was tuned with.

#include <cmath>

#include "tests/tuner/loop/loop_fixture.h"

namespace tilesmith::loop_test {
namespace {

// The recording's time is least at A=8, B=4, C=1; this energy is least at A=2, B=8, C=2,
// so the fastest configuration is not the thriftiest. From the config alone (not the
// replay's noisy time), so every measurement of a config reports the same energy.
double joules_of(const Config& c) {
  return 0.1 * (1 + std::abs(std::log2(double(c.at("A"))) - 1) + std::abs(std::log2(double(c.at("B"))) - 3) +
                0.1 * std::abs(double(c.at("C")) - 2));
}
const Config kFastest{{"A", 8}, {"B", 4}, {"C", 1}};
const Config kThriftiest{{"A", 2}, {"B", 8}, {"C", 2}};

// The replayed GPU with the energy of each ok launch (or, without a counter, only the note
// the NVML backend gives), and optionally a vendor baseline measured the same way.
class EnergyEvaluator final : public Evaluator {
 public:
  EnergyEvaluator(Evaluator& inner, bool counter) : inner_(inner), counter_(counter) {}
  const DeviceFacts& device() const override { return inner_.device(); }
  Evaluation prepare(const KernelTemplate& t, const GemmProblem& p, const Config& c) override {
    return inner_.prepare(t, p, c);
  }
  Evaluation evaluate(const KernelTemplate& t, const GemmProblem& p, const Config& c) override {
    return with_energy(inner_.evaluate(t, p, c), c == missing_ ? std::nullopt : std::optional(joules_of(c)));
  }
  Result<Evaluation> vendor_baseline(const GemmProblem& p) override {
    if (!vendor_) return inner_.vendor_baseline(p);
    Evaluation e;
    e.outcome = Outcome::kOk;
    e.timing.median_ms = 1.5;
    return with_energy(e, 0.2);
  }
  std::string vendor_name() const override { return vendor_ ? "cuBLASLt" : inner_.vendor_name(); }

  bool vendor_ = false;  // answer the vendor baseline (else the recording's: none)
  Config missing_;       // this config comes back without its energy, as a missed window would

 private:
  Evaluation with_energy(Evaluation e, std::optional<double> joules) const {
    if (!e.ok()) return e;
    if (counter_ && joules) {
      TelemetrySummary s;
      s.readings = 2;
      s.joules_per_launch = joules;
      e.telemetry = s;
    } else if (!counter_) {
      e.telemetry_note = "no energy counter on this GPU (NVML: not supported; Volta and later have one)";
    }
    return e;
  }

  Evaluator& inner_;
  bool counter_;
};

// The history proposers were given at their last call, for a look at the scores.
class WatchingProposer final : public Proposer {
 public:
  explicit WatchingProposer(std::unique_ptr<Proposer> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  ProposalBatch propose(const ProposalRequest& r) override {
    if (r.history) seen = *r.history;
    return inner_->propose(r);
  }
  std::vector<Trial> seen;

 private:
  std::unique_ptr<Proposer> inner_;
};

struct ObjectiveRun {
  Result<LoopReport> report = Status::internal("not run");
  std::vector<Trial> seen;  // the history the proposer saw last
};

// Every configuration of the space once (exhaustive), so the winner is the space's best
// by the objective, then the top 3 re-timed on the same kind of device.
ObjectiveRun run(Fixture& f, const fs::path& dir, Objective objective, bool counter, Observer& obs,
        std::int64_t max_evals = 80, const Config& missing = {}, bool vendor = false) {
  ObjectiveRun out;
  auto exhaustive = make_offline_proposer("exhaustive");
  if (!exhaustive.ok()) {
    out.report = exhaustive.status();
    return out;
  }
  WatchingProposer proposer(std::move(exhaustive).value());
  EnergyEvaluator ev(f.replay, counter), retimer(f.retimer, counter);
  ev.missing_ = retimer.missing_ = missing;
  ev.vendor_ = vendor;
  auto options = f.options(dir, max_evals);
  options.candidates = 16;
  options.objective = objective;
  auto loop = GenerationLoop::open(ev, {{&f.tmpl, &proposer}}, options);
  if (!loop.ok()) {
    out.report = loop.status();
    return out;
  }
  out.report = (*loop)->run(obs, nullptr, &retimer);
  out.seen = proposer.seen;
  return out;
}

Result<BestEntry> only_entry(const fs::path& dir) {
  auto entries = read_best_config(dir / "best_config.json");
  if (!entries.ok()) return entries.status();
  if (entries->size() != 1) return Status::internal("expected one entry");
  return entries->front();
}

TEST(LoopObjective, EnergyPicksTheThriftiestConfigurationAndTimeTheFastest) {
  for (Objective objective : {Objective::kTime, Objective::kEnergy}) {
    SCOPED_TRACE(objective_name(objective));
    Fixture f;
    Observer obs;
    const fs::path dir = fresh_dir(std::string("loop_objective_") + objective_name(objective));
    ObjectiveRun r = run(f, dir, objective, /*counter=*/true, obs);
    ASSERT_TRUE(r.report.ok()) << r.report.status().to_string();
    EXPECT_EQ(r.report->objective, objective);

    auto entry = only_entry(dir);
    ASSERT_TRUE(entry.ok()) << entry.status().to_string();
    EXPECT_EQ(entry->objective, objective);
    EXPECT_EQ(entry->config, objective == Objective::kEnergy ? kThriftiest : kFastest);
    // Both figures of the winner, whichever decided.
    ASSERT_TRUE(entry->metrics.contains("median_ms"));
    ASSERT_TRUE(entry->metrics.contains("joules_per_launch")) << entry->metrics.dump();
    EXPECT_DOUBLE_EQ(entry->metrics["joules_per_launch"].get<double>(), joules_of(entry->config));
    EXPECT_EQ(entry->metrics.value("source", ""), "retime");
    // The finalists were compared by the objective, and the winner certified by it.
    const json& c = entry->certification;
    ASSERT_TRUE(c.is_object());
    EXPECT_EQ(c["objective"], objective_name(objective));
    EXPECT_EQ(c["verdict"], "certified") << c.dump();
    if (objective == Objective::kEnergy) {
      EXPECT_DOUBLE_EQ(c["median_value"].get<double>(), joules_of(kThriftiest));
      EXPECT_EQ(c["unit"], "J");
    } else {
      EXPECT_FALSE(c.contains("median_value"));
    }
    ASSERT_EQ(r.report->winners.size(), 1u);
    EXPECT_EQ(r.report->winners[0].config, entry->config);
  }
}

TEST(LoopObjective, ProposersSeeTheObjectiveAsTheScoreAndARowWithoutItAsUnranked) {
  Fixture f;
  Observer obs;
  const fs::path dir = fresh_dir("loop_objective_scores");
  // The thriftiest configuration's energy goes missing (the device has a counter: others had it).
  ObjectiveRun r = run(f, dir, Objective::kEnergy, true, obs, 80, kThriftiest);
  ASSERT_TRUE(r.report.ok()) << r.report.status().to_string();
  ASSERT_FALSE(r.seen.empty());
  int scored = 0;
  for (const Trial& t : r.seen) {
    if (t.outcome != Outcome::kOk) {
      EXPECT_FALSE(t.score);
      continue;
    }
    ASSERT_TRUE(t.median_ms);
    if (t.config == kThriftiest) {
      EXPECT_FALSE(t.score) << "an ok row without its energy ranks as a failure";
    } else {
      ASSERT_TRUE(t.score);
      EXPECT_DOUBLE_EQ(*t.score, joules_of(t.config));
      ++scored;
    }
  }
  EXPECT_GT(scored, 10);
  // So the winner is the next thriftiest, and the run went on past the missing figure.
  auto entry = only_entry(dir);
  ASSERT_TRUE(entry.ok()) << entry.status().to_string();
  EXPECT_NE(entry->config, kThriftiest);
  const auto next = Config{{"A", 2}, {"B", 8}, {"C", 1}};  // one step of C away
  EXPECT_EQ(entry->config, next);
}

TEST(LoopObjective, WithoutAnEnergyCounterTheRunStopsAtItsFirstMeasurementAndSaysWhy) {
  Fixture f;
  Observer obs;
  const fs::path dir = fresh_dir("loop_objective_no_counter");
  ObjectiveRun r = run(f, dir, Objective::kEnergy, /*counter=*/false, obs);
  ASSERT_FALSE(r.report.ok());
  EXPECT_EQ(r.report.status().code(), StatusCode::kFailedPrecondition);
  const std::string& m = r.report.status().message();
  for (const char* want : {"--objective energy needs the energy of each launch", "no energy counter on this GPU",
                           "--objective time", "another --results folder"})
    EXPECT_NE(m.find(want), std::string::npos) << "missing: " << want << "\n" << m;
  // What was measured is kept, and nothing more was measured after it.
  auto history = read_history(dir / kHistoryFileName);
  ASSERT_TRUE(history.ok());
  int ok = 0;
  for (const auto& row : history->rows) ok += row.ok();
  EXPECT_EQ(ok, 1);
  std::error_code ec;
  EXPECT_FALSE(fs::exists(dir / "best_config.json", ec)) << "nothing could be ranked";

  // The folder is now one tuned for energy: a run for time goes elsewhere.
  Observer again;
  ObjectiveRun time = run(f, dir, Objective::kTime, false, again, 4);
  ASSERT_FALSE(time.report.ok());
  EXPECT_NE(time.report.status().message().find("was tuned for --objective energy"), std::string::npos)
      << time.report.status().message();
}

TEST(LoopObjective, AVendorBaselineWithoutEnergyStopsTheRunBeforeAnyCandidateAndLeavesTheFolderFree) {
  Fixture f;
  const fs::path dir = fresh_dir("loop_objective_vendor_no_counter");
  Observer obs;
  ObjectiveRun r = run(f, dir, Objective::kEdp, /*counter=*/false, obs, 80, {}, /*vendor=*/true);
  ASSERT_FALSE(r.report.ok());
  const std::string& m = r.report.status().message();
  EXPECT_NE(m.find("--objective edp"), std::string::npos) << m;
  EXPECT_NE(m.find("the vendor baseline (cuBLASLt)"), std::string::npos) << m;
  EXPECT_NE(m.find("the same --results folder will do"), std::string::npos) << m;
  auto history = read_history(dir / kHistoryFileName);
  ASSERT_TRUE(history.ok());
  EXPECT_TRUE(history->rows.empty());
  // Nothing was ranked by edp, so the folder takes a run for time.
  Observer again;
  ObjectiveRun time = run(f, dir, Objective::kTime, false, again, 6, {}, true);
  ASSERT_TRUE(time.report.ok()) << time.report.status().to_string();
  auto entry = only_entry(dir);
  ASSERT_TRUE(entry.ok()) << entry.status().to_string();
  EXPECT_EQ(entry->objective, Objective::kTime);
}

TEST(LoopObjective, AFolderTunedForOneObjectiveRefusesAnotherAndResumesWithItsOwn) {
  Fixture f;
  const fs::path dir = fresh_dir("loop_objective_resume");
  Observer obs;
  ObjectiveRun first = run(f, dir, Objective::kEnergy, true, obs, 8);
  ASSERT_TRUE(first.report.ok()) << first.report.status().to_string();

  for (Objective other : {Objective::kTime, Objective::kEdp}) {
    Observer again;
    ObjectiveRun refused = run(f, dir, other, true, again, 16);
    ASSERT_FALSE(refused.report.ok()) << objective_name(other);
    EXPECT_EQ(refused.report.status().code(), StatusCode::kFailedPrecondition);
    const std::string& m = refused.report.status().message();
    EXPECT_NE(m.find("was tuned for --objective energy"), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("asks for --objective ") + objective_name(other)), std::string::npos) << m;
    EXPECT_NE(m.find("Resume with --objective energy"), std::string::npos) << m;
    // The same check without opening the folder (what a command makes before its log).
    EXPECT_FALSE(GenerationLoop::check_folder(dir, f.problem, f.replay.device(), {&f.tmpl}, other).ok());
  }
  EXPECT_TRUE(GenerationLoop::check_folder(dir, f.problem, f.replay.device(), {&f.tmpl}, Objective::kEnergy).ok());
  auto before = read_history(dir / kHistoryFileName);
  ASSERT_TRUE(before.ok());

  Observer resumed_obs;
  ObjectiveRun resumed = run(f, dir, Objective::kEnergy, true, resumed_obs, 16);
  ASSERT_TRUE(resumed.report.ok()) << resumed.report.status().to_string();
  EXPECT_EQ(resumed.report->session, 2);
  auto after = read_history(dir / kHistoryFileName);
  ASSERT_TRUE(after.ok());
  EXPECT_GT(after->rows.size(), before->rows.size()) << "the refused runs lost nothing, the resumed one added";
}

}  // namespace
}  // namespace tilesmith::loop_test
