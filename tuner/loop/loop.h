#pragma once
// The generation loop: propose -> validate -> drop what the run already knows -> compile
// ahead while the GPU measures -> evaluate -> append to history.csv -> update
// best_config.json -> next generation, until a budget, a plateau, the end of the space
// or a stop request; then the top few are re-timed and the winner goes to
// best_config.json. Everything it learns is on disk before it acts on it, so a run
// resumes after kill -9 at any moment (tuner/records/resume.h). docs/autotune-loop.md has the
// whole story.
//
// Files in the results folder: history.csv (tuner/records/history.h), journal.jsonl
// (tuner/records/journal.h), best_config.json (tuner/records/best_config.h), and a lock file that keeps
// a second loop out of the folder while this one runs.
//
// Candidates are measured by a CandidateRunner (tuner/loop/candidate_runner.h): one evaluator
// in this process, or worker processes on one or several devices measuring several
// candidates at once, their rows appended in completion order.
//
// Threads: run() drives the runner from the calling thread; compile-ahead threads call
// Evaluator::prepare; the runner's device threads write the journal's "started"
// markers. The observer is called from the calling thread only.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "registry/kernel_template.h"
#include "registry/problem.h"
#include "runtime/evaluator.h"
#include "tuner/records/best_config.h"
#include "tuner/loop/candidate_runner.h"
#include "tuner/loop/convergence_stop.h"
#include "tuner/records/history.h"
#include "tuner/records/objective.h"
#include "tuner/loop/progress.h"
#include "tuner/search/proposer.h"
#include "tuner/search/template_allocation.h"
#include "tuner/records/resume.h"
#include "tuner/loop/retime.h"

namespace tilesmith {

struct LoopBudget {
  int generations = 0;         // generations of the whole run, resumed sessions included; 0: no limit
  std::int64_t max_evals = 0;  // evaluated candidates of the whole run; 0: no limit
  double hours = 0;            // wall time of this session; 0: no limit
  int patience = 0;            // stop after this many generations without a faster config; 0: off
};

// A template to tune and the proposer that serves it (one proposer per template: they
// keep per-space state). Both must outlive the loop.
struct LoopTarget {
  const KernelTemplate* tmpl = nullptr;
  Proposer* proposer = nullptr;
};

struct LoopOptions {
  std::filesystem::path results_dir = "results";
  GemmProblem problem;
  int candidates = 8;  // per template per generation (see `allocation`)
  // How a generation's candidates x templates evaluations are split over several
  // templates (tuner/search/template_allocation.h); one template always gets `candidates`.
  TemplateAllocation allocation = TemplateAllocation::kByGain;
  AllocationOptions allocation_options;
  std::uint64_t seed = 1;  // with the generation and template: each request's seed
  // What "best" means everywhere in the run (tuner/records/objective.h): the proposers'
  // scores, the best so far, the finalists and their certification (it overrides
  // retime_rounds.objective), best_config.json. Energy and edp need an evaluator that
  // reports the energy of a launch: where the first measurement has none (and no earlier
  // one had), run() stops with failed_precondition saying so. A results folder keeps the
  // objective its rows were ranked by (open() refuses another).
  Objective objective = Objective::kTime;
  LoopBudget budget;
  int retime_top = 3;      // finalists re-timed per template at the end; 0: none
  // How they are re-timed: rounds, looks and the confidence of a certified winner
  // (tuner/loop/certify.h); max_rounds is the budget.
  CertifyOptions retime_rounds;
  // Which templates are re-timed: those whose fastest search measurement (by the objective)
  // is within 1 + retime_within of the fastest template's. A template further behind cannot
  // win the re-timing, whose rounds (several processes, the vendor in each) cost far more
  // than the search's measurements (run 349: 174 of a shape's 213 s, 110 s of it on
  // templates 1.3-2.6x behind); its entry keeps the search's measurement. nullopt: every template.
  std::optional<double> retime_within = 0.25;
  int compile_threads = 2; // compile-ahead threads; 0: compile just before measuring
  // Racing (analysis/race.h): a candidate stops sampling once its fast side is above the
  // best so far's slow side (p80) times 1 + race_margin, and is recorded with the samples
  // it has. Only when ranking by time (energy and edp measure every candidate in full);
  // 0: off. The finalists' re-timing is never raced.
  double race_margin = 0.25;
  // Plan the next generation while the last candidates of one are measured, where the
  // runner measures on threads of its own (worker processes, ranks): the GPU does not wait
  // for the proposer or for the first compiles of the next generation. The proposals then
  // depend on which results have arrived, so a run is no longer reproduced exactly by the
  // same seed on another number of devices, or by a resume. Off: each generation ends with
  // its last result (autotune-loop's --overlap; off for the replay backend by default).
  bool overlap_generations = false;
  bool vendor_baseline = true;
  // The vendor library's time measured by an earlier session (a problem set times it at
  // a problem's first slice only): used as this session's baseline instead of timing it
  // again. Ignored without vendor_baseline.
  std::optional<Evaluation> vendor_known;
  // What won on related problems of a problem set, handed to every proposal request.
  std::vector<RelatedResult> related;
  // Shown before the progress line's facts: "3/8 qkv_t16 · 42/300 evals, share 18%".
  std::string progress_label;
  // Ends the run when converged (see ConvergenceStop); nullopt: never.
  std::optional<ConvergenceStop> stop_when_converged;
  // The margin the convergence estimate is asked for when the run does not stop on it
  // (it is still shown in the progress line and the summary).
  double convergence_margin = 0.05;
  nlohmann::json settings = nlohmann::json::object();  // recorded in the journal's session event
};

enum class StopReason { kGenerations, kMaxEvals, kTime, kPlateau, kExhausted, kNoProposals, kConverged, kInterrupted, kError };
// "generation budget reached", "plateau: ...", ...
const char* stop_reason_name(StopReason r);

enum class LogLevel { kDebug, kInfo, kWarn, kError };

class LoopObserver {
 public:
  virtual ~LoopObserver() = default;
  virtual void log(LogLevel level, const std::string& message) = 0;
  // After every history row.
  virtual void on_row(const HistoryRow& row, const LoopProgress& progress) = 0;
  // After every generation.
  virtual void on_generation(const LoopProgress& progress) = 0;
  // About once a second while the loop waits for results (a long measurement, devices
  // backing off), so a status line stays current.
  virtual void on_idle(const LoopProgress&) {}
};

struct LoopReport {
  std::string run_id;
  int session = 1;
  Objective objective = Objective::kTime;  // what the run ranked by (LoopOptions::objective)
  StopReason reason = StopReason::kExhausted;
  std::string detail;                   // the reason in words, with numbers
  std::vector<HistoryRow> rows;         // the whole history at the end
  std::int64_t rows_at_start = 0;
  double wall_s = 0;                    // this session
  // Time measuring (candidates, vendor baseline, re-timing), averaged over the devices:
  // measure_s / wall_s is how busy the devices were.
  double measure_s = 0;
  double candidate_measure_s = 0;       // the same for candidates alone
  double compile_wait_s = 0;            // every device waited for a compile
  std::size_t devices = 1;              // candidates measured at once
  std::vector<std::string> device_summaries;  // per worker: crashes, timeouts, restarts (none in-process)
  double propose_s = 0;                 // inside propose()
  std::int64_t dropped_known = 0;       // proposals dropped as already in the history
  std::int64_t raced = 0;               // candidates whose sampling stopped early (--race)
  std::optional<Evaluation> vendor;
  std::string vendor_name, vendor_note; // note: why there is no vendor figure
  std::vector<RetimeResult> retimes;
  std::vector<BestEntry> winners;       // written to best_config.json at the end
  // The last convergence estimate: the probability that the best found is within
  // convergence_margin of the space's best (every template's estimate multiplied; absent
  // when a proposer cannot tell), made when `converged_at` evaluations had been done.
  std::optional<double> converged;
  double convergence_margin = 0.05;
  std::int64_t converged_at = 0;
};

class GenerationLoop {
 public:
  // Opens the results folder (created when missing): takes its lock, reads and repairs
  // history.csv and journal.jsonl, finds the resume point, and checks that what the
  // folder holds was recorded for this problem, device and these templates' sources, and
  // ranked by this objective (a session whose rows are in history.csv recorded another).
  // failed_precondition naming the difference and what to do otherwise; io_error,
  // parse_error as the files give them. The runner and targets must outlive the loop.
  static Result<std::unique_ptr<GenerationLoop>> open(CandidateRunner& runner, std::vector<LoopTarget> targets,
                                                      LoopOptions options);
  // open()'s checks of what the folder holds (this problem, device and these templates'
  // sources; a history.csv tilesmith can read), made without writing anything: no lock,
  // no repair, nothing created. A missing folder passes. So a command can refuse a folder
  // before it creates its log there. The same errors as open().
  static Status check_folder(const std::filesystem::path& dir, const GemmProblem& problem, const DeviceFacts& device,
                             const std::vector<const KernelTemplate*>& templates,
                             Objective objective = Objective::kTime);
  // The same with one evaluator in this process (an InlineRunner the loop owns). The
  // evaluator must outlive the loop.
  static Result<std::unique_ptr<GenerationLoop>> open(Evaluator& evaluator, std::vector<LoopTarget> targets,
                                                      LoopOptions options);
  ~GenerationLoop();

  const ResumePoint& resume_point() const { return resume_; }
  const HistoryFile& history() const { return *history_; }
  std::size_t repaired_history_bytes() const { return history_->repaired_bytes(); }
  std::size_t repaired_journal_bytes() const;
  // Things open() did about the folder that a person should hear about (a stale journal
  // set aside, ...).
  const std::vector<std::string>& notes() const { return notes_; }
  const std::filesystem::path& best_config_path() const { return best_path_; }

  // Runs to the end. `stop` (optional) is polled between candidates: once it is set the
  // candidates being measured are finished and recorded, nothing new starts, re-timing
  // is skipped, and the report says kInterrupted. `retimer` (optional) measures the
  // finalists instead of the loop's evaluator (the replay backend uses an independent
  // draw so a resumed run re-times exactly like an uninterrupted one). Errors: io_error
  // when history.csv or best_config.json cannot be written (the run stops; nothing
  // recorded is lost); failed_precondition when the objective needs energy and the
  // device reports none (the message says why and what to do; what was measured is in
  // history.csv).
  Result<LoopReport> run(LoopObserver& observer, const std::atomic<bool>* stop = nullptr,
                         Evaluator* retimer = nullptr);

 private:
  struct State;   // what the run knows (tuner/loop/detail/loop_internal.h)
  class Runner;   // one call of run()
  GenerationLoop() = default;
  std::unique_ptr<State> s_;
  std::unique_ptr<HistoryFile> history_;
  ResumePoint resume_;
  std::filesystem::path best_path_;
  std::vector<std::string> notes_;
};

}  // namespace tilesmith
