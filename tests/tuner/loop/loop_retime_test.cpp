// The re-timing at the end of a loop on the replayed synthetic recording: interleaved
// rounds, the verdict in best_config.json and the journal, a tie and its rule.

#include <random>
#include <set>

#include "tests/tuner/loop/loop_fixture.h"

namespace tilesmith::loop_test {
namespace {

// The replayed GPU with its times replaced: every config takes the time `time(renewals)`
// gives, where renewals counts the fresh processes asked for so far (renew_process).
class ScriptedTimesEvaluator final : public Evaluator {
 public:
  ScriptedTimesEvaluator(Evaluator& inner, std::function<double(int renewals)> time)
      : inner_(inner), time_(std::move(time)) {}
  const DeviceFacts& device() const override { return inner_.device(); }
  Evaluation prepare(const KernelTemplate& t, const GemmProblem& p, const Config& c) override {
    return inner_.prepare(t, p, c);
  }
  Evaluation evaluate(const KernelTemplate& t, const GemmProblem& p, const Config& c) override {
    Evaluation e = inner_.evaluate(t, p, c);
    calls_.push_back("kernel");
    if (e.ok()) e.timing.median_ms = time_(renewals_);
    return e;
  }
  bool renew_process() override {
    ++renewals_;
    return true;
  }
  Result<Evaluation> vendor_baseline(const GemmProblem& p) override {
    calls_.push_back("vendor");
    if (!vendor_ms_) return inner_.vendor_baseline(p);
    Evaluation v;
    v.outcome = Outcome::kOk;
    v.timing.median_ms = vendor_ms_;
    return v;
  }
  std::string vendor_name() const override { return inner_.vendor_name(); }
  int renewals() const { return renewals_; }
  // The vendor's time when set (0: the inner evaluator's).
  void set_vendor_ms(double ms) { vendor_ms_ = ms; }
  // "vendor" or "kernel", in call order.
  const std::vector<std::string>& calls() const { return calls_; }

 private:
  Evaluator& inner_;
  std::function<double(int)> time_;
  int renewals_ = 0;
  double vendor_ms_ = 0;
  std::vector<std::string> calls_;
};

// The replayed GPU serving a second template as the recorded one, with its times multiplied
// by `factor`, in the search and the re-timing alike.
class SlowedTemplateEvaluator final : public Evaluator {
 public:
  SlowedTemplateEvaluator(Evaluator& inner, const KernelTemplate& recorded, std::string slow, double factor)
      : inner_(inner), recorded_(recorded), slow_(std::move(slow)), factor_(factor) {}
  const DeviceFacts& device() const override { return inner_.device(); }
  Evaluation prepare(const KernelTemplate& t, const GemmProblem& p, const Config& c) override {
    return inner_.prepare(t.name() == slow_ ? recorded_ : t, p, c);
  }
  Evaluation evaluate(const KernelTemplate& t, const GemmProblem& p, const Config& c) override {
    if (t.name() != slow_) return inner_.evaluate(t, p, c);
    Evaluation e = inner_.evaluate(recorded_, p, c);
    if (e.ok()) e.timing.median_ms *= factor_;
    return e;
  }
  bool renew_process() override { return inner_.renew_process(); }
  Result<Evaluation> vendor_baseline(const GemmProblem& p) override { return inner_.vendor_baseline(p); }
  std::string vendor_name() const override { return inner_.vendor_name(); }

 private:
  Evaluator& inner_;
  const KernelTemplate& recorded_;
  std::string slow_;
  double factor_;
};

// Every config takes the same time, give or take 1%: whatever the search found, its
// finalists cannot be told apart.
ScriptedTimesEvaluator equal_times(Evaluator& inner) {
  return ScriptedTimesEvaluator(inner, [rng = std::mt19937(3)](int) mutable {
    return 1.0 + 0.01 * (double(rng()) / double(std::mt19937::max()) * 2 - 1);
  });
}

// Equal times within 0.1%, but each measuring process runs at its own level (where its
// buffers landed, its clocks when it started): 1.00, then 1.01, 0.99, 1.02 after each
// renewal. One process's rounds would all sit at one level.
ScriptedTimesEvaluator process_levels(Evaluator& inner) {
  return ScriptedTimesEvaluator(inner, [rng = std::mt19937(5)](int renewals) mutable {
    static constexpr double kLevels[] = {1.00, 1.01, 0.99, 1.02};
    return kLevels[renewals % 4] * (1.0 + 0.001 * (double(rng()) / double(std::mt19937::max())));
  });
}

std::vector<json> journal_of(const fs::path& dir, const std::string& event) {
  std::vector<json> out;
  std::ifstream in(dir / kJournalFileName);
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("event", "") == event) out.push_back(j);
  }
  return out;
}

// An evolve run of `evals` evaluations on the replayed recording, its finalists re-timed by
// `retimer` in at most `max_rounds` rounds (0: the default budget).
Result<LoopReport> run_and_retime(Fixture& f, const fs::path& dir, std::int64_t evals, int max_rounds,
                                  Evaluator& retimer, Observer& obs) {
  auto proposer = make_offline_proposer("evolve");
  if (!proposer.ok()) return proposer.status();
  auto options = f.options(dir, evals);
  if (max_rounds > 0) options.retime_rounds.max_rounds = max_rounds;
  auto loop = GenerationLoop::open(f.replay, {{&f.tmpl, proposer->get()}}, options);
  if (!loop.ok()) return loop.status();
  return (*loop)->run(obs, nullptr, &retimer);
}

TEST(LoopRetime, FinalistsAreMeasuredInAlternatingRoundsUntilTheWinnerIsCertified) {
  Fixture f;
  const fs::path dir = fresh_dir("loop_retime_certified");
  CountingEvaluator retimer(f.retimer);
  Observer obs;
  auto report = run_and_retime(f, dir, 40, 0, retimer, obs);
  ASSERT_TRUE(report.ok()) << report.status().to_string();

  // Three finalists, A B C then C B A, ...: a round never measures one twice in a row
  // except across the turn.
  const auto order = retimer.evaluate_order();
  ASSERT_EQ(order.size() % 3, 0u);
  ASSERT_GE(order.size(), 3u * 8);
  for (std::size_t r = 1; r < order.size() / 3; ++r)
    for (std::size_t k = 0; k < 3; ++k)
      EXPECT_EQ(order[3 * r + k], order[3 * (r - 1) + 2 - k]) << "round " << r + 1;

  auto entries = read_best_config(dir / "best_config.json");
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  ASSERT_EQ(entries->size(), 1u);
  const json& c = (*entries)[0].certification;
  ASSERT_TRUE(c.is_object());
  // The recording's configs differ by 30% and more, its repetitions by 3%.
  EXPECT_EQ(c["verdict"], "certified");
  EXPECT_EQ(c["rounds"].get<int>() * 3, int(order.size()));
  EXPECT_EQ(c["max_rounds"], 16);
  ASSERT_TRUE(c["interval_ms"].is_array());
  EXPECT_LE(c["interval_ms"][0].get<double>(), c["median_ms"].get<double>());
  EXPECT_GE(c["interval_ms"][1].get<double>(), c["median_ms"].get<double>());
  // The range of the winner's rounds holds its interval of the median.
  ASSERT_TRUE(c["range_ms"].is_array());
  EXPECT_LE(c["range_ms"][0].get<double>(), c["interval_ms"][0].get<double>());
  EXPECT_GE(c["range_ms"][1].get<double>(), c["interval_ms"][1].get<double>());
  const double n = c["rounds"].get<double>();
  EXPECT_DOUBLE_EQ(c["range_coverage"].get<double>(), (n - 1) / (n + 1));
  const json& retime = (*entries)[0].retime;
  ASSERT_EQ(retime.size(), 3u);
  for (const auto& fin : retime) {
    EXPECT_EQ(fin["rounds_ms"].size(), c["rounds"].get<std::size_t>());
    EXPECT_EQ(fin["winner"].get<bool>(), fin["ratio_to_fastest"].get<double>() == 1.0);
    if (!fin["winner"].get<bool>()) {
      EXPECT_GT(fin["ratio_interval"][0].get<double>(), 1.0);
    }
  }
  // The journal has every round's evaluation and the verdict.
  EXPECT_EQ(journal_of(dir, "retime").size(), order.size());
  auto verdicts = journal_of(dir, "certification");
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0]["verdict"], "certified");
  EXPECT_TRUE(std::any_of(obs.logs.begin(), obs.logs.end(), [](const std::string& l) {
    return l.find("synthetic: certified after") == 0;
  }));
}

// A GPU that runs 10% slower by the end of the run (a power cap after minutes of load): the
// winner's ratio to the vendor comes from the vendor measured in the same rounds, first in
// odd rounds and last in even ones, not from the run's first, cooler vendor measurement.
TEST(LoopRetime, TheVendorIsMeasuredInTheSameRoundsAndTheRatioIsPaired) {
  Fixture f;
  const fs::path dir = fresh_dir("loop_retime_vendor");
  auto hot = ScriptedTimesEvaluator(f.retimer, [rng = std::mt19937(9)](int) mutable {
    return 0.99 * (1.0 + 0.002 * (double(rng()) / double(std::mt19937::max())));
  });
  hot.set_vendor_ms(1.10);
  Observer obs;
  auto proposer = make_offline_proposer("evolve");
  ASSERT_TRUE(proposer.ok());
  auto options = f.options(dir, 30);
  options.retime_rounds.max_rounds = 8;
  // The run's first vendor measurement, on the cool GPU (the synthetic recording has none).
  Evaluation cool;
  cool.outcome = Outcome::kOk;
  cool.timing.median_ms = 1.0;
  options.vendor_known = cool;
  auto loop = GenerationLoop::open(f.replay, {{&f.tmpl, proposer->get()}}, options);
  ASSERT_TRUE(loop.ok()) << loop.status().to_string();
  auto report = (*loop)->run(obs, nullptr, &hot);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  auto entries = read_best_config(dir / "best_config.json");
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  ASSERT_EQ(entries->size(), 1u);
  const BestEntry& e = (*entries)[0];
  const json& v = e.certification["vendor"];
  ASSERT_TRUE(v.is_object()) << e.certification.dump();
  const int rounds = e.certification["rounds"].get<int>();
  EXPECT_EQ(v["rounds"].get<int>(), rounds);
  EXPECT_DOUBLE_EQ(v["median_ms"].get<double>(), 1.10);
  EXPECT_NEAR(v["ratio"].get<double>(), 1.10 / 0.991, 0.003);
  ASSERT_TRUE(e.vendor_ratio);
  EXPECT_DOUBLE_EQ(*e.vendor_ratio, v["ratio"].get<double>());
  ASSERT_TRUE(e.vendor_median_ms);
  EXPECT_DOUBLE_EQ(*e.vendor_median_ms, 1.10);
  // One vendor measurement a round: first in odd rounds, last in even ones.
  const auto& calls = hot.calls();
  const std::size_t per_round = calls.size() / std::size_t(rounds);
  ASSERT_EQ(calls.size(), per_round * std::size_t(rounds));
  for (int r = 0; r < rounds; ++r) {
    const std::size_t at = std::size_t(r) * per_round + (r % 2 == 0 ? 0 : per_round - 1);
    EXPECT_EQ(calls[at], "vendor") << "round " << r + 1;
  }
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "vendor"), rounds);
}

TEST(LoopRetime, FinalistsThatCannotBeToldApartAreATieRecordedAsOne) {
  Fixture f;
  const fs::path dir = fresh_dir("loop_retime_tie");
  ScriptedTimesEvaluator retimer = equal_times(f.retimer);
  Observer obs;
  auto report = run_and_retime(f, dir, 40, 12, retimer, obs);
  ASSERT_TRUE(report.ok()) << report.status().to_string();

  auto entries = read_best_config(dir / "best_config.json");
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  const json& c = (*entries)[0].certification;
  EXPECT_EQ(c["verdict"], "tie");
  EXPECT_EQ(c["rounds"], 12) << "the whole budget is spent before a tie is declared";
  ASSERT_TRUE(c["tied_with"].is_array());
  EXPECT_FALSE(c["tied_with"].empty());
  EXPECT_TRUE(c["tie_rule"] == "spread" || c["tie_rule"] == "median") << c.dump();
  // The winner the entry names is the one the tie rule picked.
  for (const auto& fin : (*entries)[0].retime)
    if (fin["winner"].get<bool>()) {
      EXPECT_EQ(fin["config_hash"], config_hash((*entries)[0].config));
      EXPECT_TRUE(fin["tied"].get<bool>());
    }
  ASSERT_EQ(report->retimes.size(), 3u);
  EXPECT_EQ(report->retimes[0].verdict, Verdict::kTie);
}

TEST(LoopRetime, RoundsAreSpreadOverFreshProcessesSoTheRangeHoldsTheirDifferences) {
  Fixture f;
  const fs::path dir = fresh_dir("loop_retime_processes");
  ScriptedTimesEvaluator retimer = process_levels(f.retimer);
  Observer obs;
  auto report = run_and_retime(f, dir, 40, 12, retimer, obs);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  // 12 rounds, a fresh process after rounds 4 and 8 (none after the last).
  EXPECT_EQ(retimer.renewals(), 2);
  auto entries = read_best_config(dir / "best_config.json");
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  const json& c = (*entries)[0].certification;
  EXPECT_EQ(c["rounds"], 12);
  EXPECT_EQ(c["processes"], 3);
  // The winner's rounds come from the three levels, so its range spans them: a later
  // process at any of those levels falls inside.
  ASSERT_TRUE(c["range_ms"].is_array()) << c.dump();
  EXPECT_LT(c["range_ms"][0].get<double>(), 0.995);
  EXPECT_GT(c["range_ms"][1].get<double>(), 1.005);
}

TEST(LoopRetime, ABudgetTooSmallForAnIntervalKeepsTheFastestAndSaysSo) {
  Fixture f;
  const fs::path dir = fresh_dir("loop_retime_few");
  CountingEvaluator retimer(f.retimer);
  Observer obs;
  auto report = run_and_retime(f, dir, 30, 1, retimer, obs);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(retimer.evaluate_order().size(), 3u) << "one round, as the re-timing was before rounds";
  auto entries = read_best_config(dir / "best_config.json");
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ((*entries)[0].certification["verdict"], "too_few_rounds");
  EXPECT_TRUE((*entries)[0].certification["interval_ms"].is_null());
  EXPECT_TRUE(std::any_of(obs.logs.begin(), obs.logs.end(), [](const std::string& l) {
    return l.find("raise --retime-rounds") != std::string::npos;
  }));
}

// Two templates, the second three times slower than the first: by default only the first
// is re-timed (the second cannot win it) and the second's entry keeps its search
// measurement, with a line saying so; with every template asked for, both are re-timed;
// and a second template within the reach is re-timed too.
TEST(LoopRetime, OnlyTemplatesWithinReachOfTheFastestAreRetimed) {
  Fixture f;
  auto second = synthetic("Synthetic GPU", {1, 2, 4, 8, 16}, "second");
  KernelTemplate second_tmpl = replay::recorded_template(*second);
  struct Case {
    const char* dir;
    double slower;
    std::optional<double> within;
    bool second_retimed;
  };
  for (const Case& c : {Case{"loop_retime_within", 3.0, 0.25, false}, Case{"loop_retime_all", 3.0, std::nullopt, true},
                        Case{"loop_retime_near", 1.1, 0.25, true}}) {
    SCOPED_TRACE(c.dir);
    const fs::path dir = fresh_dir(c.dir);
    SlowedTemplateEvaluator search(f.replay, f.tmpl, "second", c.slower), retimer(f.retimer, f.tmpl, "second", c.slower);
    auto p1 = make_offline_proposer("evolve");
    auto p2 = make_offline_proposer("evolve");
    ASSERT_TRUE(p1.ok() && p2.ok());
    // Enough evaluations for each search to reach its template's fastest (75 configs each).
    LoopOptions o = f.options(dir, 100);
    o.retime_rounds.max_rounds = 8;
    o.retime_within = c.within;
    auto loop = GenerationLoop::open(search, {{&f.tmpl, p1->get()}, {&second_tmpl, p2->get()}}, o);
    ASSERT_TRUE(loop.ok()) << loop.status().to_string();
    Observer obs;
    auto report = (*loop)->run(obs, nullptr, &retimer);
    ASSERT_TRUE(report.ok()) << report.status().to_string();

    std::set<std::string> retimed;
    for (const json& e : journal_of(dir, "retime")) retimed.insert(e["template"].get<std::string>());
    const std::set<std::string> expected =
        c.second_retimed ? std::set<std::string>{"second", "synthetic"} : std::set<std::string>{"synthetic"};
    EXPECT_EQ(retimed, expected);
    EXPECT_EQ(journal_of(dir, "certification").size(), expected.size());
    auto entries = read_best_config(dir / "best_config.json");
    ASSERT_TRUE(entries.ok()) << entries.status().to_string();
    ASSERT_EQ(entries->size(), 2u);
    for (const BestEntry& e : *entries) {
      const bool certified = e.template_name == "synthetic" || c.second_retimed;
      EXPECT_EQ(e.certification.is_object(), certified) << e.template_name;
      EXPECT_EQ(e.metrics.value("source", ""), certified ? "retime" : "search") << e.template_name;
    }
    EXPECT_EQ(report->winners.size(), 2u) << "every template's best is reported, re-timed or not";
    const bool said = std::any_of(obs.logs.begin(), obs.logs.end(), [](const std::string& l) {
      return l.find("second: not re-timed: its best") == 0 && l.find("beyond --retime-within 25%") != std::string::npos;
    });
    EXPECT_EQ(said, !c.second_retimed);
  }
}

}  // namespace
}  // namespace tilesmith::loop_test
