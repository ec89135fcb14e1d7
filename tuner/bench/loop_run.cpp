#include "tuner/bench/loop_run.h"

#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include <unistd.h>

#include "runtime/replay/recorded_template.h"
#include "runtime/replay/replay_evaluator.h"
#include "runtime/replay/replay_set.h"

namespace tilesmith::bench {

namespace {

namespace fs = std::filesystem;

// The proposer's reason without its numbers: "expected improvement, predicted 5.9 ms
// (best so far 6.1 ms)" -> "expected improvement".
std::string reason_kind(const std::string& rationale) {
  auto cut = rationale.find(", predicted");
  std::string k = rationale.substr(0, cut);
  if (k.rfind("initial design", 0) == 0) return "initial design";
  return k;
}

std::atomic<std::uint64_t> g_run_counter{0};

}  // namespace

// The run itself, on whichever evaluators the caller built; `recorded(template, config)`
// gives a configuration's recorded mean time (0 when not recorded).
static LoopRunResult run_loop_on(
    Evaluator& evaluator, Evaluator& retimer, const std::vector<LoopTarget>& targets,
    const GemmProblem& problem, const std::string& name, double optimum,
    const std::function<double(const std::string&, const Config&)>& recorded, std::uint64_t seed,
    const LoopRunOptions& options) {
  LoopRunResult result;
  result.evaluations_to_target.assign(options.targets.size(), std::nullopt);
  const fs::path dir =
      options.keep
          ? options.scratch / (name + "-seed" + std::to_string(seed))
          : options.scratch / ("tilesmith-loop-run-" + std::to_string(::getpid()) + "-" +
                               std::to_string(g_run_counter++) + "-" + std::to_string(seed));
  std::error_code ec;
  fs::remove_all(dir, ec);
  LoopOptions lo;
  lo.results_dir = dir;
  lo.problem = problem;
  lo.candidates = options.candidates;
  lo.seed = seed;
  lo.budget.max_evals = options.max_evals;
  lo.retime_top = options.retime_top;
  lo.compile_threads = 0;  // replay has nothing to compile; the rows do not depend on it
  lo.stop_when_converged = options.stop_when_converged;
  lo.convergence_margin = options.convergence_margin;
  lo.allocation = options.allocation;
  lo.allocation_options = options.allocation_options;

  auto loop = GenerationLoop::open(evaluator, targets, lo);
  if (!loop.ok()) {
    result.status = loop.status();
    return result;
  }
  // Hears each generation's convergence estimate (made when it was planned).
  class Observer final : public LoopObserver {
   public:
    explicit Observer(LoopRunResult& r) : r_(r) {}
    void log(LogLevel, const std::string&) override {}
    void on_row(const HistoryRow&, const LoopProgress&) override {}
    void on_generation(const LoopProgress& p) override {
      LoopGeneration g;
      g.generation = p.generation;
      g.p_converged = p.converged;
      r_.generation_log.push_back(g);
    }

   private:
    LoopRunResult& r_;
  } observer(result);
  auto report = (*loop)->run(observer, nullptr, &retimer);
  if (!report.ok()) {
    result.status = report.status();
    fs::remove_all(dir, ec);
    return result;
  }
  result.reason = report->reason;
  result.propose_seconds = report->propose_s;
  result.dropped_known = report->dropped_known;
  result.final_p_converged = report->converged;

  double best = std::numeric_limits<double>::infinity();
  std::map<int, std::int64_t> evaluated_before;  // generation -> evaluations before it
  std::map<int, double> best_before;
  for (const auto& row : report->rows) {
    if (!row.evaluated()) {
      ++result.proposal_rows;
      continue;
    }
    if (!evaluated_before.count(row.generation)) {
      evaluated_before[row.generation] = result.evaluations;
      best_before[row.generation] = best / optimum;
    }
    ++result.evaluations;
    LoopRunRow r;
    r.template_name = row.template_name;
    r.proposer = row.proposer;
    r.rationale = reason_kind(row.rationale);
    r.generation = row.generation;
    r.ok = row.ok();
    if (r.ok) {
      auto config = config_from_json_text(row.config);
      if (config.ok()) r.recorded_ms = recorded(row.template_name, *config);
      if (r.recorded_ms > 0) best = std::min(best, r.recorded_ms);
    }
    result.rows.push_back(r);
    for (size_t k = 0; k < options.targets.size(); ++k)
      if (!result.evaluations_to_target[k] && best <= optimum * (1.0 + options.targets[k]))
        result.evaluations_to_target[k] = result.evaluations;
  }
  // The observer heard of each generation after it ran, with the estimate made when it
  // was planned; give each the evaluations and the best before it.
  for (auto& g : result.generation_log) {
    auto it = evaluated_before.find(g.generation);
    g.evaluated_before = it == evaluated_before.end() ? result.evaluations : it->second;
    g.best_before_over_optimum = it == evaluated_before.end() ? best / optimum : best_before[g.generation];
  }
  // A run that stopped on convergence made one more estimate, after its last generation.
  if (report->converged && (result.generation_log.empty() ||
                            result.generation_log.back().evaluated_before != report->converged_at)) {
    LoopGeneration g;
    g.generation = result.generation_log.empty() ? 0 : result.generation_log.back().generation + 1;
    g.evaluated_before = report->converged_at;
    g.best_before_over_optimum = best / optimum;
    g.p_converged = report->converged;
    result.generation_log.push_back(g);
  }
  result.generations = static_cast<int>(result.generation_log.size());
  result.best_over_optimum = best / optimum;
  if (!options.keep) fs::remove_all(dir, ec);
  return result;
}

LoopRunResult run_loop(const std::shared_ptr<const replay::Recording>& recording,
                       Proposer& proposer, std::uint64_t seed, const LoopRunOptions& options) {
  const replay::Recording& rec = *recording;
  // The same evaluators autotune-loop --backend replay builds (tuner/assembly/open_evaluator.cpp).
  replay::ReplayEvaluator evaluator(recording, seed);
  replay::ReplayEvaluator retimer(recording, seed ^ 0x9E3779B97F4A7C15ull);
  const KernelTemplate tmpl = replay::recorded_template(rec);
  auto recorded = [&](const std::string&, const Config& c) {
    const auto* found = rec.find(c);
    return found ? found->time_ms : 0.0;
  };
  return run_loop_on(evaluator, retimer, {LoopTarget{&tmpl, &proposer}}, rec.problem(), rec.name(),
                     rec.optimum_ms(), recorded, seed, options);
}

LoopRunResult run_loop(const std::vector<std::shared_ptr<const replay::Recording>>& recordings,
                       const std::vector<Proposer*>& proposers, std::uint64_t seed,
                       const LoopRunOptions& options) {
  if (recordings.empty() || proposers.size() != recordings.size()) {
    LoopRunResult r;
    r.status = Status::invalid("run_loop: one proposer per recording, at least one");
    return r;
  }
  // A set's evaluators, as autotune-loop builds them for several --replay-file recordings.
  replay::ReplaySetEvaluator evaluator(recordings, seed);
  replay::ReplaySetEvaluator retimer(recordings, seed ^ 0x9E3779B97F4A7C15ull);
  std::vector<KernelTemplate> templates;
  templates.reserve(recordings.size());
  std::map<std::string, const replay::Recording*> by_name;
  double optimum = std::numeric_limits<double>::infinity();
  for (const auto& r : recordings) {
    templates.push_back(replay::recorded_template(*r));
    by_name[r->name()] = r.get();
    optimum = std::min(optimum, r->optimum_ms());
  }
  std::vector<LoopTarget> targets;
  for (std::size_t i = 0; i < templates.size(); ++i)
    targets.push_back(LoopTarget{&templates[i], proposers[i]});
  auto recorded = [&](const std::string& name, const Config& c) {
    auto it = by_name.find(name);
    const auto* found = it == by_name.end() ? nullptr : it->second->find(c);
    return found ? found->time_ms : 0.0;
  };
  return run_loop_on(evaluator, retimer, targets, recordings.front()->problem(),
                     "set-" + recordings.front()->name(), optimum, recorded, seed, options);
}

SearchRunResult as_search_result(const LoopRunResult& r) {
  SearchRunResult s;
  s.evaluations_to_target = r.evaluations_to_target;
  s.evaluations = r.evaluations;
  s.best_over_optimum = r.best_over_optimum;
  s.propose_calls = r.generations;
  s.propose_seconds = r.propose_seconds;
  s.status = r.status;
  return s;
}

}  // namespace tilesmith::bench
