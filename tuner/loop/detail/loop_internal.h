#pragma once
// The insides of GenerationLoop (tuner/loop/loop.h), shared by its three files:
//   loop.cpp       opening the folder, the run from start to end: sessions, the vendor
//                  baseline, crashes found on resume, re-timing and finishing;
//   loop_plan.cpp  planning a generation, budgets and stops;
//   loop_run.cpp   running a plan's candidates and recording their rows and the best.
// Private to tuner/loop.

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/host_name.h"
#include "tuner/loop/compile_ahead.h"
#include "tuner/loop/loop.h"
#include "tuner/loop/loop_rows.h"
#include "tuner/loop/retime.h"
#include "tuner/records/best_entry.h"
#include "tuner/records/journal.h"
#include "tuner/records/plan.h"

namespace tilesmith {
namespace loop_detail {

using Clock = std::chrono::steady_clock;
inline constexpr int kMaxEmptyGenerations = 3;
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace loop_detail

struct TargetState {
  LoopTarget target;
  SpaceContext context;
  // One per known config of this template, in generation order and, within a
  // generation, by config hash: not in the order the rows were written. With several
  // devices (or hosts) a generation's results come back in completion order, and the
  // proposers must see the same history whatever that order was, so a seed evaluates
  // the same configurations on one device as on many. `trial_keys` runs beside
  // `trials`: (generation, config_hash) of each.
  std::vector<Trial> trials;
  std::vector<std::pair<int, std::string>> trial_keys;
  bool exhausted = false;
  std::optional<std::size_t> best;  // index of the best ok evaluation row (by the objective) in the history
  // The proposer's last convergence estimate (ProposalBatch::converged); 1 once exhausted.
  std::optional<double> converged;
};

struct GenerationLoop::State {
  using Clock = loop_detail::Clock;
  CandidateRunner* runner = nullptr;
  std::unique_ptr<CandidateRunner> owned_runner;  // open(Evaluator&): an InlineRunner
  Evaluator* evaluator = nullptr;                 // runner->evaluator()
  LoopOptions options;
  std::vector<TargetState> targets;
  RunJournal journal;
  int lock_fd = -1;
  std::string run_id;
  int session = 1;
  int next_generation = 0;
  int current_generation = 0;

  std::set<std::string> known;      // keys of every row with a config hash
  std::set<std::string> evaluated;  // keys of evaluation rows
  std::int64_t evaluated_count = 0, evaluated_session = 0, rejected_count = 0;
  std::map<std::string, std::int64_t> outcomes;
  // The run's best row by the objective: its value, and its time and throughput (what the
  // progress line shows and the workers' deadlines scale from).
  std::optional<double> best_value, best_ms, best_tflops;
  std::string best_template;
  // Whether any evaluation (a row of the history, the vendor's) had an energy figure: the
  // device has a counter, and a later one without is a miss, not a missing counter.
  bool energy_seen = false;
  // The last plan's evaluations per template, "tma_half 24, wgmma_half 8" (several
  // templates only), for the progress line.
  std::string split;
  int last_improving_generation = -1;
  // A journal write that failed on a compile-ahead thread; the loop's thread ends the run.
  std::atomic<bool> journal_failed{false};
  std::mutex journal_error_mutex;
  std::string journal_error;

  std::optional<Evaluation> vendor;
  std::string vendor_name, vendor_note;
  std::set<std::string> telemetry_notes;  // said once each (Evaluation::telemetry_note)
  Clock::time_point started = Clock::now();
  LoopReport report;
  LoopObserver* observer = nullptr;
  const std::atomic<bool>* stop = nullptr;

  ~State() {
    if (lock_fd >= 0) ::close(lock_fd);
  }

  TargetState* target(const std::string& name) {
    for (auto& t : targets)
      if (t.target.tmpl->name() == name) return &t;
    return nullptr;
  }
  bool stop_requested() const { return stop && stop->load(); }
  // Keeps the counters, the per-template trials and bests in step with one row.
  // `config`: the row's config where the caller holds it (a candidate just measured), so
  // it is not parsed back from the row's JSON text; null: parsed (rows read from disk).
  void absorb(const HistoryRow& row, const Config* config = nullptr);
  // The row's value under the run's objective (nullopt: it cannot be ranked).
  std::optional<double> value(const HistoryRow& row) const { return objective_value(options.objective, row); }
  // failed_precondition when the objective needs energy, `e` is an ok measurement without
  // it and nothing measured so far had it: the device has no energy counter, and the run
  // cannot rank anything. `what` names the measurement ("the vendor baseline").
  Status check_energy(const Evaluation& e, const std::string& what);
  void log(LogLevel level, const std::string& m) {
    if (observer) observer->log(level, m);
  }
};

class GenerationLoop::Runner {
 public:
  Runner(GenerationLoop::State& s, HistoryFile& history, const std::filesystem::path& best_path, Evaluator* retimer)
      : s_(s),
        history_(history),
        best_path_(best_path),
        retimer_(retimer ? *retimer : *s.evaluator),
        rows_(s.run_id, s.session, s.options.problem, s.evaluator->device(), local_host_name()) {}

  Status run();

  void set_resume(const ResumePoint& rp) { resume_ = rp; }

 private:
  // --- rows -------------------------------------------------------------------------

  const std::string& template_hash(const std::string& template_name) const;

  std::optional<double> vendor_ms() const;

  HistoryRow evaluation_row(const PlanItem& item, int generation, const Evaluation& e, std::optional<double> eval_ms,
                            const std::string& host, const std::string& device) {
    HistoryRow row = rows_.evaluation(item, generation, template_hash(item.template_name), e, eval_ms, vendor_ms(),
                                      host, device);
    if (!e.code_hash.empty()) code_hashes_[candidate_key(row.template_name, row.config_hash)] = e.code_hash;
    return row;
  }

  // Measuring time as a share of the devices: with several, each second of one device is
  // 1/width of the whole.
  void add_measure(double device_seconds, bool candidate);

  HistoryRow rejection_row(const PlanRejection& rej, int generation);

  // `config` as State::absorb's.
  Status append(HistoryRow row, const Config* config = nullptr);

  // --- best_config.json -----------------------------------------------------------

  // `vendor`: the vendor's measurement to record beside it (default: the run's baseline).
  BestEntry entry_for(const TargetState& t, const HistoryRow& row, const Evaluation* retimed,
                      const Evaluation* vendor = nullptr) const;

  Status update_best(const HistoryRow& row);

  // After a crash between a row and its best_config update, the file lags the history.
  Status ensure_best_written();

  // --- sessions, vendor, crashes ------------------------------------------------------

  Status start_session();

  Status record_crashes();

  // The vendor's baseline; failed_precondition from State::check_energy.
  Status measure_vendor();

  void note_journal(const Status& st);

  // --- planning ---------------------------------------------------------------------

  std::uint64_t request_seed(const std::string& template_name, int generation) const;

  // How many candidates each target is asked for this generation (targets' order; 0 for
  // an exhausted one) when the split is by gain over several live templates, within
  // `remaining` evaluations; empty otherwise (each asked for `candidates`, as always).
  std::vector<int> split_generation(std::int64_t remaining) const;

  Status make_plan(int generation, GenerationPlan* plan);

  Status write_plan(const GenerationPlan& plan);

  bool all_exhausted() const;

  // The run's convergence estimate from the targets' last ones (their product: each is
  // the chance that its template holds nothing faster than its own best by the margin,
  // a lower bound for the run's best), kept in the report; true (and stopped) when
  // --stop-when-converged is met.
  bool check_converged();
  double convergence_margin() const;

  // --- executing a plan ---------------------------------------------------------------

  // Measures the plan's candidates and records them. With `leave_in_flight` it returns
  // as soon as every candidate of the plan has gone to a device (none is left queued),
  // leaving their results to the next call: the next generation is planned and its first
  // compiles start while the last candidates of this one are measured (issue 33). Without
  // it, it returns once nothing is in flight. Results of earlier plans still in flight are
  // recorded whichever plan's call they arrive in.
  Status execute(const GenerationPlan& plan, bool leave_in_flight = false);
  // Candidates handed to the runner whose results are not recorded yet.
  struct InFlight {
    PlanItem item;
    int generation = 0;
    double compile_ms = 0;
    bool compile_cache_hit = false;
  };
  // Candidates planned and not yet recorded: compiling or compiled and waiting for the
  // runner (unfed_), or with the runner (in_flight_).
  bool anything_in_flight() const { return !in_flight_.empty() || !unfed_.empty(); }
  // Records what is still in flight (the run's end, or before a last plan).
  Status collect_in_flight() {
    if (!anything_in_flight()) return {};
    GenerationPlan none;
    none.generation = -1;
    return execute(none, false);
  }
  // A generation whose plan is fed (or was never fed) and whose last result is in.
  void result_recorded(int generation);

  // One candidate's row, and its line in the log.
  Status record(const PlanItem& item, int generation, Evaluation e, std::optional<double> eval_ms,
                const std::string& host, const std::string& device) {
    HistoryRow row = evaluation_row(item, generation, e, eval_ms, host, device);
    char buf[200];
    if (e.ok())
      std::snprintf(buf, sizeof buf, "gen %d %s [%s] ok %.4g ms %.2f TFLOP/s", generation, item.template_name.c_str(),
                    item.proposer.c_str(), e.timing.median_ms, e.tflops);
    else
      std::snprintf(buf, sizeof buf, "gen %d %s [%s] %s", generation, item.template_name.c_str(),
                    item.proposer.c_str(), outcome_name(e.outcome));
    std::string line = std::string(buf) + (device.empty() ? "" : " on " + device) + " " +
                       config_to_json_text(item.config) +
                       (e.ok() || e.message.empty() ? "" : ": " + e.message.substr(0, 200));
    // A candidate that cost its worker is worth a look; the run goes on without it.
    const bool lost = e.outcome == Outcome::kCrash || e.outcome == Outcome::kTimeout;
    s_.log(lost ? LogLevel::kWarn : LogLevel::kDebug, line);
    // Why the telemetry columns are empty (or the energy is): once per reason, not per row.
    if (e.ok() && !e.telemetry_note.empty() && s_.telemetry_notes.insert(e.telemetry_note).second)
      s_.log(LogLevel::kInfo,
             e.telemetry_note + (e.telemetry ? " (no joules_per_launch in history.csv)"
                                             : " (history.csv's telemetry columns stay empty)"));
    TS_RETURN_IF_ERROR(append(std::move(row), &item.config));
    note_device_health();
    // The row is kept either way; a run that cannot rank anything stops now, not at dawn.
    return s_.check_energy(e, "the first measurement (" + item.template_name + " " +
                                  config_to_json_text(item.config) + ")");
  }

  // Says so when a device turns unhealthy (a failed health check: it backs off) and when
  // every device is healthy again.
  void note_device_health();
  // The time a candidate handed out now is raced against (LoopOptions::race_margin); 0: none.
  double race_bound_ms() const;

  // --- budgets and ends ---------------------------------------------------------------

  void stop(StopReason reason, std::string detail);

  // True (and stopped) when the run must end before the next candidate, or before the
  // next generation when `between_generations`.
  bool check_budgets(bool between_generations);

  // The generation's line in the log (its rows from `from_row` on) and the observer's call.
  void generation_done(int generation, std::int64_t from_row);

  LoopProgress progress() const;
  // The best's objective value with its unit ("0.0123 J"), for a run not tuned for time; "".
  std::string best_objective() const;

  // --- the end: re-timing the finalists -------------------------------------------------

  void collect_search_winners();
  void collect_search_winner(TargetState& t);  // its search best, as the report's winner

  Status retime();
  // The templates whose best so far is beyond LoopOptions::retime_within of the fastest
  // template's (each logged): the re-timing leaves them out.
  std::set<std::string> templates_out_of_retime_reach();

  void finish_session();

  GenerationLoop::State& s_;
  HistoryFile& history_;
  std::filesystem::path best_path_;
  Evaluator& retimer_;
  RowMaker rows_;
  ResumePoint resume_;
  bool stopped_ = false;
  bool degraded_ = false;  // a device was unhealthy when last looked at
  // The runner's tags of candidates in flight (unique over the session, so a result of an
  // earlier plan is never taken for one of the current plan's), and their keys: a plan
  // made meanwhile must not measure them again.
  std::map<std::uint64_t, InFlight> in_flight_;
  // The code hash of each candidate measured in this process (candidate_key), for its
  // best_config.json entry; rows of earlier sessions have none until the winners are
  // re-timed.
  std::map<std::string, std::string> code_hashes_;
  std::map<std::string, int> in_flight_keys_;  // in_flight_'s and unfed_'s
  // A candidate no longer in flight (recorded, or dropped by a stop).
  void forget_in_flight(const std::string& key) {
    if (auto it = in_flight_keys_.find(key); it != in_flight_keys_.end() && --it->second <= 0) in_flight_keys_.erase(it);
  }
  std::uint64_t next_tag_ = 0;
  // Planned candidates compiling (or compiled) and not yet handed to the runner, oldest
  // plan first. With overlapped generations they outlive the execute() that planned them:
  // the next plan is made while the compile threads still work on these, so neither the
  // compiler nor the devices wait for the proposer (issue 33).
  struct Unfed {
    std::size_t ticket = 0;
    PlanItem item;
    int generation = 0;
  };
  std::deque<Unfed> unfed_;
  std::map<int, int> unfed_count_;  // per generation
  std::size_t largest_plan_ = 0;    // candidates of the largest plan so far: how far ahead to plan
  // Marks a generation whose candidates have all left unfed_ (the plan is fed).
  void plan_fed(int generation);
  // Results still to come per generation, and the generations whose plans are all fed.
  std::map<int, int> pending_;
  std::set<int> fed_;
  std::map<int, std::int64_t> rows_before_;  // each plan's rows_before, for its summary line
  // The compile threads, kept from plan to plan. Last: destroyed first, it waits for its
  // compiles, whose markers use this Runner.
  std::unique_ptr<CompileAhead> ahead_;
};

}  // namespace tilesmith
