// Racing through the loop (analysis/race.h, LoopOptions::race_margin): every candidate is
// handed the best so far's slow side times 1 + margin, recomputed as rows come in; none
// before the first measurement, none with the margin off or under an energy objective; a
// candidate the evaluator raced is recorded as measured, with its samples and the reason;
// the finalists' re-timing is never raced.

#include <map>

#include "analysis/race.h"
#include "tests/tuner/loop/loop_fixture.h"

namespace tilesmith::loop_test {
namespace {

// The replayed GPU, remembering the bound each candidate was handed. A candidate whose
// replayed median is above its bound comes back raced, as GpuEvaluator's would: 10
// samples and the reason.
class RacingEvaluator final : public Evaluator {
 public:
  explicit RacingEvaluator(Evaluator& inner) : inner_(inner) {}
  const DeviceFacts& device() const override { return inner_.device(); }
  Evaluation prepare(const KernelTemplate& t, const GemmProblem& p, const Config& c) override {
    return inner_.prepare(t, p, c);
  }
  Evaluation evaluate(const KernelTemplate& t, const GemmProblem& p, const Config& c) override {
    return evaluate_racing(t, p, c, 0);
  }
  Evaluation evaluate_racing(const KernelTemplate& t, const GemmProblem& p, const Config& c,
                             double race_ms) override {
    bounds.emplace_back(config_hash(c), race_ms);
    Evaluation e = inner_.evaluate(t, p, c);
    if (e.ok() && race_ms > 0 && e.timing.median_ms > race_ms) {
      e.timing.samples = 10;
      e.timing.raced_above_ms = race_ms;
      e.message = "raced: sampling stopped after 10 samples";
    }
    return e;
  }
  Result<Evaluation> vendor_baseline(const GemmProblem& p) override { return inner_.vendor_baseline(p); }
  std::string vendor_name() const override { return inner_.vendor_name(); }

  std::vector<std::pair<std::string, double>> bounds;  // config hash, bound, in call order

 private:
  Evaluator& inner_;
};

struct RaceRun {
  Result<LoopReport> report = Status::internal("not run");
  std::vector<HistoryRow> rows;
  std::vector<std::pair<std::string, double>> bounds, retime_bounds;
};

RaceRun run(const std::string& name, double margin, Objective objective = Objective::kTime) {
  Fixture f;
  Observer obs;
  RaceRun out;
  const fs::path dir = fresh_dir("loop_race_" + name);
  RacingEvaluator ev(f.replay), retimer(f.retimer);
  auto options = f.options(dir, 40);
  options.race_margin = margin;
  options.objective = objective;
  options.compile_threads = 0;  // one candidate at a time: each is handed out after the row before it
  auto proposer = make_offline_proposer("random");
  if (!proposer.ok()) return out;
  auto loop = GenerationLoop::open(ev, {{&f.tmpl, proposer->get()}}, options);
  if (!loop.ok()) {
    out.report = loop.status();
    return out;
  }
  out.report = (*loop)->run(obs, nullptr, &retimer);
  auto history = read_history(dir / "history.csv");
  if (history.ok()) out.rows = history->rows;
  out.bounds = ev.bounds;
  out.retime_bounds = retimer.bounds;
  return out;
}

TEST(LoopRace, EachCandidateIsRacedAgainstTheBestSoFar) {
  RaceRun r = run("time", 0.25);
  ASSERT_TRUE(r.report.ok()) << r.report.status().to_string();
  std::vector<const HistoryRow*> evaluated;
  for (const auto& row : r.rows)
    if (row.stage == "evaluation") evaluated.push_back(&row);
  ASSERT_GE(r.bounds.size(), 20u);
  const HistoryRow* best = nullptr;
  int raced = 0;
  std::size_t call = 0;  // rows the compile step decided never reached the evaluator
  for (const HistoryRow* rowp : evaluated) {
    const HistoryRow& row = *rowp;
    if (call < r.bounds.size() && r.bounds[call].first == row.config_hash) {
      const double expected =
          best ? analysis::race_bound_ms(best->p80_ms.value_or(0), best->median_ms.value_or(0), 0.25) : 0;
      EXPECT_DOUBLE_EQ(r.bounds[call].second, expected) << "candidate " << call;
      ++call;
    } else {
      EXPECT_NE(row.outcome, Outcome::kOk) << "only rows decided before measuring are missing from the calls";
    }
    if (row.message.rfind("raced:", 0) == 0) {
      ++raced;
      EXPECT_EQ(row.outcome, Outcome::kOk) << "a raced candidate was measured";
      EXPECT_EQ(row.samples, 10);
    }
    if (row.ok() && row.median_ms && (!best || *row.median_ms < *best->median_ms)) best = &row;
  }
  EXPECT_EQ(call, r.bounds.size()) << "every call is a row, in the order measured";
  EXPECT_EQ(r.bounds.front().second, 0) << "nothing to race against before the first measurement";
  EXPECT_GT(raced, 0) << "some candidates of a random search are clearly slower than the best";
  EXPECT_EQ(r.report->raced, raced) << "the summary's count";
  ASSERT_FALSE(r.retime_bounds.empty());
  for (const auto& [hash, bound] : r.retime_bounds) EXPECT_EQ(bound, 0) << "the re-timing is never raced";
}

TEST(LoopRace, OffWithoutAMarginAndUnderEnergy) {
  for (const auto& [name, margin] : {std::pair<const char*, double>{"off", 0.0}, {"energy", 0.25}}) {
    SCOPED_TRACE(name);
    RaceRun r = run(name, margin, std::string(name) == "energy" ? Objective::kEnergy : Objective::kTime);
    // The energy run stops at its first measurement (the replay has no energy counter);
    // what it handed out before that was not raced.
    ASSERT_FALSE(r.bounds.empty());
    for (const auto& [hash, bound] : r.bounds) EXPECT_EQ(bound, 0);
  }
}

}  // namespace
}  // namespace tilesmith::loop_test
