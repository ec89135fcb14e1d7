// Whole problem sets in process on the synthetic replayed recording of the loop tests.
// The recording has one shape, so ShapedEvaluator stands in for a GPU that measures
// several: it answers every problem from the recording, its times scaled by the
// problem's flops, and times a "vendor library" at 1.5x the recording's fastest config
// scaled the same way. So the problems differ in what they cost per step, as a set's do.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "tests/tuner/loop/loop_fixture.h"
#include "tuner/loop/problem_set_folder.h"
#include "tuner/loop/problem_set_run.h"
#include "tuner/records/history.h"

namespace tilesmith::loop_test {
namespace {

class ShapedEvaluator final : public Evaluator {
 public:
  ShapedEvaluator(Evaluator& inner, GemmProblem recorded) : inner_(inner), recorded_(recorded) {}
  const DeviceFacts& device() const override { return inner_.device(); }
  Evaluation prepare(const KernelTemplate& t, const GemmProblem&, const Config& c) override {
    return inner_.prepare(t, recorded_, c);
  }
  Evaluation evaluate(const KernelTemplate& t, const GemmProblem& p, const Config& c) override {
    Evaluation e = inner_.evaluate(t, recorded_, c);
    if (e.ok()) {
      const double s = scale(p);
      for (double* v : {&e.timing.median_ms, &e.timing.min_ms, &e.timing.p20_ms, &e.timing.p80_ms, &e.timing.mean_ms})
        *v *= s;
      e.tflops = p.flops() / (e.timing.median_ms * 1e9);
    }
    return e;
  }
  Result<Evaluation> vendor_baseline(const GemmProblem& p) override {
    ++vendor_calls;
    Evaluation e;
    e.outcome = Outcome::kOk;
    e.timing.median_ms = e.timing.min_ms = e.timing.p20_ms = e.timing.p80_ms = e.timing.mean_ms = 1.5 * scale(p);
    e.tflops = p.flops() / (e.timing.median_ms * 1e9);
    return e;
  }
  std::string vendor_name() const override { return "scaled vendor"; }
  int vendor_calls = 0;

 private:
  double scale(const GemmProblem& p) const { return p.flops() / recorded_.flops(); }
  Evaluator& inner_;
  GemmProblem recorded_;
};

ProblemSet three_problems() {
  auto set = problem_set_from_json(json::parse(R"({"name": "trio", "source": "test", "problems": [
      {"name": "small", "count": 1, "m": 64, "n": 64, "k": 64},
      {"name": "heavy", "count": 32, "m": 1024, "n": 1024, "k": 1024},
      {"name": "middle", "count": 4, "m": 512, "n": 512, "k": 512}]})"),
                                   "trio.json");
  EXPECT_TRUE(set.ok()) << set.status().to_string();
  return *set;
}

struct SetFixture : Fixture {
  ShapedEvaluator shaped{replay, problem};
  ShapedEvaluator shaped_retimer{retimer, problem};
  InlineRunner runner{shaped};
  std::vector<std::vector<std::filesystem::path>> warm_starts;  // what each make_targets call was given

  ProblemSetOptions options(const fs::path& dir, std::int64_t max_evals) {
    ProblemSetOptions o;
    o.results_dir = dir;
    o.set = three_problems();
    o.loop = Fixture::options(dir, 0);
    o.loop.retime_top = 2;
    o.max_evals = max_evals;
    o.min_slice = 6;
    o.slice = 6;
    return o;
  }
  ProblemTargetsFactory factory() {
    return [this](const ProblemSetEntry&, const std::vector<fs::path>& warm) -> Result<ProblemTargets> {
      warm_starts.push_back(warm);
      ProblemTargets t;
      auto p = make_offline_proposer("random");
      if (!p.ok()) return p.status();
      t.proposers.push_back(std::move(p).value());
      t.targets.push_back({&tmpl, t.proposers.back().get()});
      return t;
    };
  }
};

void expect_no_repeats(const fs::path& folder) {
  auto h = read_history(folder / "history.csv");
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  std::set<std::string> keys;
  for (const auto& r : h->rows)
    if (r.evaluated()) {
      EXPECT_TRUE(keys.insert(r.key()).second) << folder << ": evaluated twice: " << r.config;
    }
}

TEST(ProblemSetRun, SplitsTheBudgetByCostAndWritesTheSummary) {
  SetFixture f;
  const fs::path dir = fresh_dir("set_split");
  Observer obs;
  auto report = run_problem_set(f.runner, f.options(dir, 90), f.factory(), obs, nullptr, &f.shaped_retimer);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(report->reason, StopReason::kMaxEvals);
  EXPECT_EQ(report->evals, 90);
  EXPECT_EQ(f.shaped.vendor_calls, 3) << "the vendor is timed once per problem, not per slice";

  // The set as run, one folder per problem with a single run's files, and the summary.
  auto set_json = json::parse(std::ifstream(dir / "problem_set.json"));
  EXPECT_EQ(set_json["problems"][1]["folder"], "heavy");
  auto summary = json::parse(std::ifstream(dir / "summary.json"));
  ASSERT_EQ(summary["problems"].size(), 3u);
  std::map<std::string, std::int64_t> evals;
  for (const auto& p : summary["problems"]) {
    const std::string name = p["name"];
    evals[name] = p["evals"];
    EXPECT_GE(evals[name], 6) << name << " had its minimum slice";
    EXPECT_TRUE(p["ours_ms"].is_number()) << name;
    EXPECT_DOUBLE_EQ(p["vendor_ratio"].get<double>(), p["vendor_ms"].get<double>() / p["ours_ms"].get<double>());
    // The spreads the rule uses, and its pick (a problem given only its minimum slice may
    // not have beaten the vendor).
    EXPECT_TRUE(p["ours_spread"].is_number()) << name;
    EXPECT_TRUE(p["vendor_spread"].is_number()) << name;
    const bool tuned = p["ours_ms"].get<double>() * 1.01 < p["vendor_ms"].get<double>();
    EXPECT_EQ(p["runs"], tuned ? "tuned" : "vendor") << name;
    EXPECT_DOUBLE_EQ(p["dispatched_ms"].get<double>(), p[tuned ? "ours_ms" : "vendor_ms"].get<double>()) << name;
    for (const char* file : {"history.csv", "journal.jsonl", "best_config.json"})
      EXPECT_TRUE(fs::exists(dir / name / file)) << name << "/" << file;
    expect_no_repeats(dir / name);
    auto folder = read_problem_folder(dir / name);
    ASSERT_TRUE(folder.ok());
    EXPECT_EQ(folder->evals, evals[name]);
    EXPECT_TRUE(folder->retimed) << name << ": finalists re-timed at the end of the set";
    ASSERT_EQ(folder->winners.size(), 1u);
    EXPECT_EQ(folder->winners[0].metrics["source"], "retime");
  }
  EXPECT_EQ(evals["small"] + evals["heavy"] + evals["middle"], 90);
  // heavy costs 32 x 512 x small's flops per step, middle 4 x 64 x: heavy gets the most.
  EXPECT_GT(evals["heavy"], evals["middle"]);
  EXPECT_GE(evals["middle"], evals["small"]);
  EXPECT_EQ(evals["small"], 6) << "the cheapest problem gets no more than its minimum";
  const auto& totals = summary["totals"];
  EXPECT_GT(totals["speedup"].get<double>(), 1.0);
  EXPECT_GT(totals["vendor_us_per_step"].get<double>(), totals["ours_us_per_step"].get<double>());
  const std::string table = format_problem_set_summary(*report);
  EXPECT_NE(table.find("these GEMMs take"), std::string::npos) << table;
  EXPECT_NE(table.find("heavy"), std::string::npos);

  // Warm start between problems: the first problem started (the heaviest: the minimum
  // round goes by weight) has nothing to start from; the later ones start from the
  // winners of those already tuned (all fp32 NN here).
  ASSERT_EQ(f.warm_starts.size(), 3u);
  EXPECT_TRUE(f.warm_starts[0].empty());
  ASSERT_EQ(f.warm_starts[1].size(), 1u);
  EXPECT_EQ(f.warm_starts[1][0], dir / "heavy" / "best_config.json");
  ASSERT_EQ(f.warm_starts[2].size(), 2u);
  EXPECT_EQ(f.warm_starts[2][0], dir / "middle" / "best_config.json") << "nearest shape first";
}

TEST(ProblemSetRun, StoppedSetResumesWithNothingLostOrRepeated) {
  SetFixture f;
  const fs::path dir = fresh_dir("set_resume");
  for (std::int64_t stop_after : {5, 17, 30, -1}) {
    SetFixture g;  // a new process: new proposers, evaluators and counters
    Observer obs;
    obs.stop_after = stop_after;
    auto report = run_problem_set(g.runner, g.options(dir, 72), g.factory(), obs, &obs.stop, &g.shaped_retimer);
    ASSERT_TRUE(report.ok()) << report.status().to_string();
    if (stop_after >= 0) {
      EXPECT_EQ(report->reason, StopReason::kInterrupted);
    }
    else EXPECT_EQ(report->reason, StopReason::kMaxEvals);
  }
  std::int64_t total = 0;
  for (const char* name : {"small", "heavy", "middle"}) {
    expect_no_repeats(dir / name);
    auto folder = read_problem_folder(dir / name);
    ASSERT_TRUE(folder.ok());
    EXPECT_GE(folder->evals, 6) << name;
    EXPECT_TRUE(folder->retimed) << name;
    total += folder->evals;
  }
  EXPECT_EQ(total, 72) << "the budget is spent exactly, across the stops";
  auto summary = json::parse(std::ifstream(dir / "summary.json"));
  EXPECT_EQ(summary["evals"], 72);
}

// Dies by SIGKILL after its `kill_at`-th row of this process: nothing is flushed, nothing
// is closed, the journal may hold a candidate planned but not measured.
class KillingObserver final : public LoopObserver {
 public:
  explicit KillingObserver(std::int64_t kill_at) : kill_at_(kill_at) {}
  void log(LogLevel, const std::string&) override {}
  void on_row(const HistoryRow&, const LoopProgress&) override {
    if (++rows_ == kill_at_) ::kill(::getpid(), SIGKILL);
  }
  void on_generation(const LoopProgress&) override {}

 private:
  std::int64_t kill_at_, rows_ = 0;
};

std::int64_t rows_in(const fs::path& folder) {
  auto h = read_history(folder / "history.csv");
  return h.ok() ? std::int64_t(h->rows.size()) : 0;
}

TEST(ProblemSetRun, KilledSetResumesWithNothingLostOrRepeated) {
  const fs::path dir = fresh_dir("set_kill9");
  std::vector<std::string> names = {"small", "heavy", "middle"};
  std::map<std::string, std::vector<std::string>> before;  // each folder's rows before the next kill
  for (std::int64_t kill_at : {4, 11, 23}) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {  // a process of its own that tunes the set until it is killed
      SetFixture g;
      KillingObserver obs(kill_at);
      auto report = run_problem_set(g.runner, g.options(dir, 72), g.factory(), obs, nullptr, &g.shaped_retimer);
      ::_exit(report.ok() ? 0 : 3);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child was to die by SIGKILL at row "
                                                                     << kill_at << " (status " << status << ")";
    // What every earlier process recorded is still there, in order.
    for (const auto& name : names) {
      auto h = read_history(dir / name / "history.csv");
      std::vector<std::string> keys;
      if (h.ok())
        for (const auto& r : h->rows) keys.push_back(r.key());
      const auto& old = before[name];
      ASSERT_GE(keys.size(), old.size()) << name;
      EXPECT_TRUE(std::equal(old.begin(), old.end(), keys.begin())) << name << ": rows changed after a kill";
      before[name] = keys;
    }
  }
  SetFixture f;  // the run after the last kill goes to the end
  Observer obs;
  auto report = run_problem_set(f.runner, f.options(dir, 72), f.factory(), obs, &obs.stop, &f.shaped_retimer);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(report->reason, StopReason::kMaxEvals);
  std::int64_t total = 0;
  for (const auto& name : names) {
    expect_no_repeats(dir / name);
    EXPECT_GE(rows_in(dir / name), std::int64_t(before[name].size())) << name;
    auto folder = read_problem_folder(dir / name);
    ASSERT_TRUE(folder.ok());
    EXPECT_TRUE(folder->retimed) << name;
    total += folder->evals;
  }
  EXPECT_EQ(total, 72) << "the budget is spent exactly, across three kill -9s";
  auto summary = json::parse(std::ifstream(dir / "summary.json"));
  EXPECT_EQ(summary["evals"], 72);
}

TEST(ProblemSetRun, FolderOfAnotherSetIsRefusedSayingWhatDiffers) {
  SetFixture f;
  const fs::path dir = fresh_dir("set_other");
  Observer obs;
  ASSERT_TRUE(run_problem_set(f.runner, f.options(dir, 18), f.factory(), obs, nullptr, &f.shaped_retimer).ok());
  auto o = f.options(dir, 18);
  o.set.entries[2].problem.k = 256;
  auto again = run_problem_set(f.runner, o, f.factory(), obs, nullptr, &f.shaped_retimer);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("entry 2 ('middle') was 512x512x512 fp32 NN, now 512x512x256 fp32 NN"),
            std::string::npos)
      << again.status().message();
}

TEST(ProblemSetRun, NearestTunedProblemsShareTypesAndLayout) {
  auto set = problem_set_from_json(json::parse(R"({"problems": [
      {"name": "a", "m": 16, "n": 4096, "k": 4096, "dtype": "bf16"},
      {"name": "b", "m": 128, "n": 4096, "k": 4096, "dtype": "bf16"},
      {"name": "c", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"},
      {"name": "d", "m": 16, "n": 4096, "k": 4096, "dtype": "fp32"},
      {"name": "e", "m": 16, "n": 4096, "k": 4096, "dtype": "bf16", "layout": "NT"}]})"),
                                   "s.json");
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(nearest_tuned(*set, 0, {false, true, true, true, true}, 5), (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(nearest_tuned(*set, 2, {true, true, false, true, true}, 1), (std::vector<std::size_t>{1}));
  EXPECT_TRUE(nearest_tuned(*set, 0, {false, false, false, true, true}, 5).empty());
}

// The per-step figures follow the library's rule (analysis/vendor_rule.h): a problem whose
// tuned kernel lost to the vendor, or won only within the noise, counts at the vendor's
// time, so "with ours" never exceeds the vendor's; ours as tuned is shown beside it.
TEST(ProblemSetSummary, PerStepTimeCountsEachProblemAtWhatTheLibraryWouldRun) {
  ProblemSetReport r;
  r.name = "mixed";
  r.evals = 40;
  auto add = [&](const std::string& name, std::int64_t m, std::int64_t count, std::optional<double> ours,
                 std::optional<double> ours_spread, double vendor, std::optional<double> vendor_spread) {
    ProblemResult p;
    p.name = name;
    p.problem.m = m;
    p.problem.n = p.problem.k = 256;
    p.count = count;
    p.evals = 10;
    p.ours_ms = ours;
    p.ours_spread = ours_spread;
    p.vendor_ms = vendor;
    p.vendor_spread = vendor_spread;
    r.problems.push_back(p);
  };
  add("wins", 16, 8, 0.030, 0.01, 0.040, 0.01);       // 33% faster: ours
  add("loses", 128, 64, 0.050, 0.01, 0.045, 0.01);    // the vendor is faster
  add("close", 64, 4, 0.0212, 0.02, 0.0215, 0.004);   // 1.4% faster, within the 2% noise
  add("unfinished", 256, 1, std::nullopt, std::nullopt, 0.1, std::nullopt);  // no ok result

  EXPECT_TRUE(against_vendor(r.problems[0]).runs_tuned());
  EXPECT_EQ(against_vendor(r.problems[1]).verdict, analysis::VendorVerdict::kVendorFaster);
  EXPECT_EQ(against_vendor(r.problems[2]).verdict, analysis::VendorVerdict::kWithinNoise);

  const json j = problem_set_summary_json(r);
  EXPECT_EQ(j["schema"], "tilesmith.problem_set_summary/2");
  const json& p = j["problems"];
  EXPECT_EQ(p[0]["runs"], "tuned");
  EXPECT_DOUBLE_EQ(p[0]["dispatched_ms"].get<double>(), 0.030);
  EXPECT_EQ(p[1]["runs"], "vendor");
  EXPECT_DOUBLE_EQ(p[1]["dispatched_ms"].get<double>(), 0.045);
  EXPECT_DOUBLE_EQ(p[1]["ours_ms"].get<double>(), 0.050);  // as tuned, as before
  EXPECT_EQ(p[1]["vs_vendor"], "tuned kernel 0.0500 ms vs vendor 0.0450 ms at tuning: vendor faster");
  EXPECT_EQ(p[2]["runs"], "vendor");
  EXPECT_EQ(p[2]["vs_vendor"], "tuned kernel 0.0212 ms vs vendor 0.0215 ms at tuning: within noise (1.4% <= 2.0%)");
  EXPECT_EQ(p[3]["runs"], "vendor");
  EXPECT_DOUBLE_EQ(p[3]["dispatched_ms"].get<double>(), 0.1);

  const json& t = j["totals"];
  const double vendor_us = (8 * 0.040 + 64 * 0.045 + 4 * 0.0215 + 0.1) * 1000;   // 3386
  const double tuned_us = (8 * 0.030 + 64 * 0.050 + 4 * 0.0212 + 0.1) * 1000;    // 3624.8: slower as tuned
  const double ours_us = (8 * 0.030 + 64 * 0.045 + 4 * 0.0215 + 0.1) * 1000;     // 3306
  EXPECT_NEAR(t["vendor_us_per_step"].get<double>(), vendor_us, 1e-9);
  EXPECT_NEAR(t["tuned_us_per_step"].get<double>(), tuned_us, 1e-9);
  EXPECT_NEAR(t["ours_us_per_step"].get<double>(), ours_us, 1e-9);
  EXPECT_LE(t["ours_us_per_step"].get<double>(), t["vendor_us_per_step"].get<double>());
  EXPECT_NEAR(t["speedup"].get<double>(), vendor_us / ours_us, 1e-12);
  EXPECT_NEAR(t["tuned_speedup"].get<double>(), vendor_us / tuned_us, 1e-12);
  EXPECT_EQ(t["problems_on_vendor"], json({"loses", "close"}));
  EXPECT_EQ(t["problems_without_result"], json({"unfinished"}));

  const std::string table = format_problem_set_summary(r);
  EXPECT_NE(table.find("these GEMMs take 3386.0 us per step with the vendor library, 3306.0 us with ours as "
                       "dispatched: 1.02x faster (ours as tuned: 3624.8 us, 1.07x slower)"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("dispatched to the vendor library (tuned kernel not faster by more than the noise): loses, "
                       "close"),
            std::string::npos)
      << table;
}

}  // namespace
}  // namespace tilesmith::loop_test
