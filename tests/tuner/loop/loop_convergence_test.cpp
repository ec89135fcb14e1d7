// --stop-when-converged: its text form, and the loop ending a run on the proposers'
// convergence estimate (and showing that estimate when it does not stop on it).

#include "tests/tuner/loop/loop_fixture.h"
#include "tuner/loop/convergence_stop.h"
#include "tuner/loop/summary.h"

namespace tilesmith::loop_test {
namespace {

TEST(ConvergenceStop, ParsesMarginAndProbability) {
  auto d = parse_convergence_stop("");
  ASSERT_TRUE(d.ok());
  EXPECT_DOUBLE_EQ(d->margin, 0.05);
  EXPECT_DOUBLE_EQ(d->probability, 0.95);
  auto a = parse_convergence_stop("2%/0.95");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_DOUBLE_EQ(a->margin, 0.02);
  EXPECT_DOUBLE_EQ(a->probability, 0.95);
  auto b = parse_convergence_stop("1%/99%");
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_DOUBLE_EQ(b->margin, 0.01);
  EXPECT_DOUBLE_EQ(b->probability, 0.99);
  auto c = parse_convergence_stop("0.5%");
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->margin, 0.005);
  EXPECT_DOUBLE_EQ(c->probability, 0.95);
  EXPECT_EQ(format_margin(0.05), "5%");
  EXPECT_EQ(format_margin(0.005), "0.5%");
}

TEST(ConvergenceStop, BadValuesSayWhatIsWrong) {
  for (const char* text : {"five", "5", "0.05", "5%/", "/0.9", "0%", "100%", "-1%", "5%/1", "5%/0", "5%/high", "5%%", "5%/0.9/1",
                           "5%/95"}) {
    auto r = parse_convergence_stop(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(r.status().message().find("--stop-when-converged"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("e.g. 5%"), std::string::npos) << r.status().message();
  }
}

// Proposes configs in a fixed order and says it is converged from `converged_from` on.
class ConvergingProposer final : public Proposer {
 public:
  int converged_from = 2;
  std::vector<std::optional<double>> margins_asked;
  std::string name() const override { return "converging"; }
  ProposalBatch propose(const ProposalRequest& r) override {
    margins_asked.push_back(r.convergence_margin);
    ProposalBatch b;
    b.proposer = name();
    const std::vector<Config> order = {{{"A", 1}, {"B", 1}, {"C", 0}}, {{"A", 2}, {"B", 1}, {"C", 0}},
                                       {{"A", 4}, {"B", 1}, {"C", 0}}, {{"A", 8}, {"B", 1}, {"C", 0}},
                                       {{"A", 8}, {"B", 2}, {"C", 0}}, {{"A", 8}, {"B", 4}, {"C", 0}},
                                       {{"A", 8}, {"B", 4}, {"C", 1}}, {{"A", 8}, {"B", 8}, {"C", 1}}};
    const size_t start = static_cast<size_t>(r.generation) * 2;
    for (size_t i = start; i < start + 2 && i < order.size(); ++i) b.proposals.push_back({order[i], "", ""});
    if (b.proposals.empty()) b.status = Status::failed_precondition("nothing left");
    b.converged = r.generation >= converged_from ? 0.97 : 0.5;
    return b;
  }
};

TEST(LoopConvergence, StopsWhenTheEstimateIsReached) {
  Fixture f;
  ConvergingProposer p;
  const fs::path dir = fresh_dir("loop_converged");
  LoopOptions o = f.options(dir, 0);
  o.candidates = 2;
  o.stop_when_converged = ConvergenceStop{0.02, 0.95};
  auto loop = GenerationLoop::open(f.replay, {{&f.tmpl, &p}}, o);
  ASSERT_TRUE(loop.ok()) << loop.status().to_string();
  Observer obs;
  auto report = (*loop)->run(obs, nullptr, &f.retimer);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(report->reason, StopReason::kConverged) << report->detail;
  // Generations 0 and 1 ran; generation 2's plan came with the estimate 0.97 >= 0.95 and
  // was not evaluated.
  EXPECT_EQ(report->rows.size(), 4u);
  ASSERT_TRUE(report->converged.has_value());
  EXPECT_DOUBLE_EQ(*report->converged, 0.97);
  EXPECT_EQ(report->converged_at, 4);
  EXPECT_DOUBLE_EQ(report->convergence_margin, 0.02);
  for (const auto& m : p.margins_asked) {
    ASSERT_TRUE(m.has_value());
    EXPECT_DOUBLE_EQ(*m, 0.02);
  }
  EXPECT_NE(report->detail.find("2%"), std::string::npos) << report->detail;
  EXPECT_NE(convergence_line(*report).find("P(best found within 2% of the space's best) = 0.97"), std::string::npos)
      << convergence_line(*report);
  // The finalists are still re-timed: a converged run ends like a finished one.
  EXPECT_FALSE(report->retimes.empty());
  // `autotune-loop history` finds the estimate that ended the run in the journal.
  auto recorded = read_last_convergence(dir / kJournalFileName);
  ASSERT_TRUE(recorded.has_value());
  EXPECT_DOUBLE_EQ(recorded->probability, 0.97);
  EXPECT_DOUBLE_EQ(recorded->margin, 0.02);
  EXPECT_EQ(recorded->evaluated, 4);
  EXPECT_FALSE(read_last_convergence(dir / "no-such-journal.jsonl").has_value());
  // And the device the run measured on (`history --kernel-tuner-cache` writes it into a recording).
  auto device = read_first_device(dir / kJournalFileName);
  ASSERT_TRUE(device.has_value());
  EXPECT_EQ(device->name, f.replay.device().name);
  EXPECT_FALSE(read_first_device(dir / "no-such-journal.jsonl").has_value());
}

TEST(LoopConvergence, WithoutTheFlagTheEstimateIsOnlyReported) {
  Fixture f;
  ConvergingProposer p;
  LoopOptions o = f.options(fresh_dir("loop_converged_report"), 8);
  o.candidates = 2;
  auto loop = GenerationLoop::open(f.replay, {{&f.tmpl, &p}}, o);
  ASSERT_TRUE(loop.ok()) << loop.status().to_string();
  struct ProgressObserver final : LoopObserver {
    std::vector<std::optional<double>> seen;
    void log(LogLevel, const std::string&) override {}
    void on_row(const HistoryRow&, const LoopProgress&) override {}
    void on_generation(const LoopProgress& p) override { seen.push_back(p.converged); }
  } obs;
  auto report = (*loop)->run(obs, nullptr, &f.retimer);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(report->reason, StopReason::kMaxEvals);
  EXPECT_EQ(report->rows.size(), 8u);
  ASSERT_EQ(obs.seen.size(), 4u);
  EXPECT_EQ(obs.seen[0], 0.5);
  EXPECT_EQ(obs.seen[3], 0.97);
  EXPECT_DOUBLE_EQ(report->convergence_margin, 0.05);  // the default margin is asked
  LoopProgress lp;
  lp.converged = 0.97;
  lp.convergence_margin = 0.05;
  EXPECT_NE(format_progress_line(lp).find("P(within 5%) 0.97"), std::string::npos) << format_progress_line(lp);
}

TEST(LoopConvergence, AProposerWithoutAnEstimateNeverStopsTheRun) {
  Fixture f;
  auto proposer = make_offline_proposer("random");
  ASSERT_TRUE(proposer.ok());
  LoopOptions o = f.options(fresh_dir("loop_converged_random"), 12);
  o.stop_when_converged = ConvergenceStop{};
  auto loop = GenerationLoop::open(f.replay, {{&f.tmpl, proposer->get()}}, o);
  ASSERT_TRUE(loop.ok());
  Observer obs;
  auto report = (*loop)->run(obs, nullptr, &f.retimer);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->reason, StopReason::kMaxEvals);
  EXPECT_FALSE(report->converged.has_value());
  EXPECT_NE(convergence_line(*report).find("no estimate"), std::string::npos);
}

}  // namespace
}  // namespace tilesmith::loop_test
