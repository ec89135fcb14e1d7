#include "cli/run_command.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "base/format.h"
#include "base/files.h"
#include "cli/console.h"
#include "cli/exit_codes.h"
#include "cli/scale_out.h"
#include "base/host_name.h"
#include "cli/signals.h"
#include "runtime/replay/replay_set.h"
#include "tuner/loop/loop.h"
#include "tuner/loop/problem_set_run.h"
#include "tuner/search/offline_proposers.h"
#include "tuner/loop/run_setup.h"
#include "tuner/loop/summary.h"
#include "tuner/search/warm_start.h"

namespace tilesmith::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

class ConsoleObserver final : public LoopObserver {
 public:
  explicit ConsoleObserver(Console& console) : console_(console) {}
  void log(LogLevel level, const std::string& message) override {
    switch (level) {
      case LogLevel::kDebug: spdlog::debug(message); break;
      case LogLevel::kInfo: spdlog::info(message); break;
      case LogLevel::kWarn: spdlog::warn(message); break;
      case LogLevel::kError: spdlog::error(message); break;
    }
  }
  void on_row(const HistoryRow&, const LoopProgress& p) override { console_.progress(p); }
  void on_generation(const LoopProgress& p) override { console_.progress(p, console_.live()); }
  void on_idle(const LoopProgress& p) override { console_.progress(p); }

 private:
  Console& console_;
};

int usage(const std::string& message) {
  std::cerr << "autotune-loop: " << message << "\n";
  return kExitUsage;
}

int status_exit(const Status& st) {
  switch (st.code()) {
    case StatusCode::kUnavailable: return kExitNoDevice;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kParseError:
    case StatusCode::kFailedPrecondition: return kExitUsage;
    default: return kExitFailed;
  }
}

Result<GemmProblem> problem_from_file(const std::string& path) {
  TS_ASSIGN_OR_RETURN(std::string text, read_file(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::parse_error(path + " is not valid JSON");
  auto p = problem_from_json(j);
  if (!p.ok()) return p.status().with_context(path);
  return p;
}

json settings_json(const RunFlags& f, const std::string& proposer, const std::vector<std::string>& devices) {
  return json{{"proposer", proposer},
              {"devices", devices},
              {"in_process", f.evaluator.in_process},
              {"candidates", f.candidates},
              {"seed", f.seed},
              {"generations", f.generations},
              {"max_evals", f.max_evals},
              {"hours", f.hours},
              {"patience", f.patience},
              {"stop_when_converged", f.stop_when_converged ? json(*f.stop_when_converged) : json(nullptr)},
              {"retime", f.retime},
              {"backend", f.evaluator.backend},
              {"replay_file", f.evaluator.replay_files.empty() ? std::string() : f.evaluator.replay_files.front()},
              {"replay_files", f.evaluator.replay_files},
              {"llm_url", f.llm_url},
              {"llm_model", f.llm_model},
              {"provider", f.provider},
              {"warm_start", f.warm_start}};
}

// The steps of run_tuning. A step that returns an int wants the run to end with that
// exit code now; std::nullopt means go on.

// The problem, from the flags, a problem file, or (replay) later from the recording.
std::optional<int> read_problem(const RunFlags& f, bool replay, std::optional<GemmProblem>* problem) {
  if (!f.problem_file.empty()) {
    if (problem_given(f.problem))
      return usage("give the problem with --m/--n/--k or with --problem-file, not both");
    auto p = problem_from_file(f.problem_file);
    if (!p.ok()) return usage(p.status().message());
    *problem = *p;
  } else if (problem_given(f.problem)) {
    auto p = to_problem(f.problem);
    if (!p.ok()) return usage(p.status().message());
    *problem = *p;
  } else if (f.problem.m || f.problem.n || f.problem.k) {
    return usage("give all of --m, --n and --k (or --problem-file FILE)");
  } else if (!replay) {
    return usage("give the problem: --m M --n N --k K (with --dtype, --layout, ... as needed) or --problem-file "
                 "FILE. Try --help for examples.");
  }
  if (replay && !f.kernels_dir.empty())
    return usage("--kernels-dir does not go with --backend replay: the recording is the template");
  if (!replay && (!f.evaluator.replay_files.empty() || !f.evaluator.replay_space.empty()))
    return usage("--replay-file and --replay-space go with --backend replay");
  return std::nullopt;
}

// The template library (not for replay), checking that every --template names one.
std::optional<int> load_library(const RunFlags& f, bool replay, std::optional<TemplateLibrary>* library) {
  if (replay) return std::nullopt;
  auto lib = load_templates(f.kernels_dir);
  if (!lib.ok()) return usage(lib.status().message());
  *library = std::move(lib).value();
  for (const auto& name : f.templates) {
    const KernelTemplate* t = (*library)->find(name);
    if (!t) {
      std::string known;
      for (const auto& n : (*library)->names()) known += " " + n;
      return usage("no template named '" + name + "' (known:" + known + ")");
    }
  }
  return std::nullopt;
}

ProposerSettings proposer_settings(const RunFlags& f) {
  ProposerSettings ps;
  ps.name = f.proposer;
  ps.fallback = f.fallback_proposer;
  ps.llm.url = f.llm_url;
  ps.llm.model = f.llm_model;
  ps.llm.api_key_env = f.llm_api_key_env;
  ps.llm.provider = f.provider;
  ps.llm.request_timeout_s = f.llm_timeout_s;
  ps.llm.connect_timeout_s = f.llm_connect_timeout_s;
  ps.llm.total_deadline_s = f.llm_deadline_s;
  ps.llm.retries = f.llm_retries;
  ps.llm.temperature = f.llm_temperature;
  ps.llm.max_output_tokens = f.llm_max_tokens;
  ps.llm.prompt_token_budget = f.llm_prompt_tokens;
  ps.llm.log_path = fs::path(f.results) / "llm_log.jsonl";
  ps.llm.capabilities_path = fs::path(f.results) / "llm_capabilities.json";
  ps.on_event = [](const std::string& line) { spdlog::warn(line); };
  return ps;
}

std::optional<int> load_warm_starts(const RunFlags& f, std::vector<WarmStartFile>* warm_start) {
  for (const auto& path : f.warm_start) {
    auto w = load_warm_start(path);
    if (!w.ok()) return usage("--warm-start: " + w.status().message());
    warm_start->push_back(std::move(w).value());
  }
  return std::nullopt;
}

Result<std::unique_ptr<Console>> open_console(const RunFlags& f) {
  ConsoleOptions co;
  co.verbosity = f.quiet ? -1 : f.verbose;
  co.progress = f.progress;
  co.interval_s = f.status_interval_s;
  if (!f.no_log_file) co.log_file = f.log_file.empty() ? fs::path(f.results) / "autotune-loop.log" : fs::path(f.log_file);
  return Console::create(co);
}

// The templates to tune: the recording's (replay, which also gives the problem when the
// flags do not), or those of the library that can serve the problem on this device.
// Templates left out are said in `left_out`, logged once the console is open;
// invalid_argument when none can serve.
Status choose_templates(const RunFlags& f, bool replay, OpenedEvaluator& opened,
                                    const std::optional<TemplateLibrary>& library, std::optional<GemmProblem>* problem,
                                    std::vector<const KernelTemplate*>* templates, std::vector<std::string>* left_out) {
  if (replay) {
    if (!*problem) {
      if (opened.recordings.size() > 1)
        return Status::invalid("with several --replay-file recordings, give the problem (--m/--n/--k) or a set (--problems)");
      *problem = opened.recording->problem();
    }
    // Each recording answers for the one problem it measured: a problem is tuned on the
    // recordings of its own shape, never on another's.
    const auto matching = replay::recordings_for(opened.recordings, **problem);
    std::string recorded;
    for (std::size_t i = 0; i < opened.recordings.size(); ++i)
      recorded += (i ? ", " : "") + opened.recordings[i]->origin() + " measured " +
                  opened.recordings[i]->problem().describe();
    if (matching.empty())
      return Status::invalid("no --replay-file recorded " + (*problem)->describe() + " (" + recorded +
                   "); give a recording of that problem" +
                   (opened.recordings.size() == 1 && f.problems.empty()
                        ? ", or leave out --m/--n/--k to use the recording's"
                        : ""));
    std::string names;
    for (std::size_t i = 0; i < opened.recordings.size(); ++i) {
      const KernelTemplate& t = opened.recorded_templates[i];
      names += (i ? ", " : "") + t.name();
      bool match = false;
      for (const auto& r : matching) match = match || r == opened.recordings[i];
      bool named = f.templates.empty();
      for (const auto& name : f.templates) named = named || name == t.name();
      if (match && named) templates->push_back(&t);
    }
    for (const auto& name : f.templates) {
      bool known = false;
      for (const auto& t : opened.recorded_templates) known = known || t.name() == name;
      if (!known)
        return Status::invalid("--template " + name + ": the replay backend has only the recordings' templates (" + names + ")");
    }
    if (templates->empty())
      return Status::invalid("--template leaves no recording of " + (*problem)->describe() + " (" + recorded + ")");
    return {};
  }
  // The named templates, or every one; those that cannot serve this problem on this GPU
  // (layout, epilogue, or no valid configuration, e.g. a Hopper-only template elsewhere)
  // are left out with the reason, and the run needs at least one.
  const DeviceFacts& device = opened.primary().device();
  std::vector<const KernelTemplate*> candidates;
  if (f.templates.empty())
    for (const auto& t : library->templates()) candidates.push_back(&t);
  else
    for (const auto& name : f.templates) candidates.push_back(library->find(name));
  std::string why;
  for (const KernelTemplate* t : candidates) {
    Status st = t->can_serve(**problem, device);
    if (st.ok()) {
      templates->push_back(t);
    } else {
      why += "\n  " + st.message();
      if (candidates.size() > 1) left_out->push_back("leaving out " + t->name() + ": " + st.message());
    }
  }
  if (templates->empty())
    return Status::invalid("no template can serve " + (*problem)->describe() + " on " + device.name + ":" + why);
  return {};
}

// Each template's warm-start seeds into `ps`, saying what the files gave.
void add_warm_start_seeds(const std::vector<WarmStartFile>& warm_start, const std::vector<const KernelTemplate*>& templates,
                          const DeviceFacts& device, ProposerSettings* ps) {
  if (warm_start.empty()) return;
  std::size_t total = 0;
  std::string tuned;
  for (const KernelTemplate* t : templates) {
    auto seeds = warm_start_seeds(warm_start, t->name(), device.name, t);
    spdlog::info("warm start: {} seed(s) for {}", seeds.size(), t->name());
    for (const auto& s : seeds)
      for (const auto& u : s.updates) spdlog::info("warm start: {} {}: {}", t->name(), s.origin, u);
    total += seeds.size();
    tuned += (tuned.empty() ? "" : ", ") + t->name();
    ps->warm_start[t->name()] = std::move(seeds);
  }
  // Not an error (another recording's template, a renamed template), but the user
  // expected a head start and gets none: say why.
  if (total == 0) {
    std::set<std::string> recorded;
    for (const auto& w : warm_start)
      for (const auto& e : w.entries) recorded.insert(e.template_name);
    std::string names;
    for (const auto& n : recorded) names += (names.empty() ? "" : ", ") + n;
    spdlog::warn("--warm-start: no entry for {} (the files have {}); the search starts from scratch", tuned,
                 names.empty() ? "no entries" : "entries for " + names);
  }
}

LoopOptions loop_options(const RunFlags& f, const GemmProblem& problem, const CandidateRunner& runner,
                         const std::string& proposer, const std::optional<ConvergenceStop>& stop) {
  LoopOptions lo;
  lo.stop_when_converged = stop;
  if (stop) lo.convergence_margin = stop->margin;
  lo.results_dir = f.results;
  lo.problem = problem;
  lo.candidates = f.candidates;
  lo.seed = f.seed;
  lo.budget.generations = f.generations;
  lo.budget.max_evals = f.max_evals;
  lo.budget.hours = f.hours;
  lo.budget.patience = f.patience;
  lo.retime_top = f.retime;
  // Several devices eat compiles as fast as one each: the default is per device.
  lo.compile_threads = compile_threads_for(f.compile_threads, runner.width());
  lo.vendor_baseline = !f.no_vendor;
  lo.settings = settings_json(f, proposer, runner.devices());
  return lo;
}

// What the run starts from: new or resumed, repairs, problem, device, templates, budgets.
void log_run_start(const RunFlags& f, bool replay, const GenerationLoop& loop, const GemmProblem& problem,
                   const OpenedEvaluator& opened, const DeviceFacts& device,
                   const std::vector<const KernelTemplate*>& templates, const std::string& proposer) {
  const ResumePoint& rp = loop.resume_point();
  const std::size_t rows = loop.history().rows().size();
  if (rows > 0 || rp.session > 1) {
    spdlog::info("resuming run {} in {}: session {}, {} rows, next generation {}{}", rp.run_id, f.results, rp.session,
                 rows, rp.unfinished ? rp.unfinished->generation : rp.next_generation,
                 rp.crashed.empty() ? "" : ", " + std::to_string(rp.crashed.size()) + " candidate(s) in flight at the stop");
  } else {
    spdlog::info("new run in {}", f.results);
  }
  if (loop.repaired_history_bytes())
    spdlog::warn("history.csv ended in a torn row ({} bytes: \"{}\"), cut off; every complete row is kept",
                 loop.repaired_history_bytes(), loop.history().repaired_excerpt());
  for (const auto& note : loop.notes()) spdlog::warn(note);
  if (loop.repaired_journal_bytes())
    spdlog::info("journal.jsonl ended in a torn line ({} bytes), cut off", loop.repaired_journal_bytes());
  spdlog::info("problem {} on {} [{} {}], measured {}", problem.describe(), device.name, device.backend, device.arch,
               opened.description);
  if (f.evaluator.in_process && !replay)
    spdlog::warn("--in-process: candidates run in this process; a kernel that faults or hangs ends the run (resume "
                 "records it as crash)");
  std::string tnames;
  for (const auto* t : templates) tnames += (tnames.empty() ? "" : ", ") + t->name() + "@" + t->source_hash();
  spdlog::info("templates: {}; proposer: {}; {} candidates per generation; seed {}", tnames, proposer, f.candidates,
               f.seed);
  std::string budgets;
  if (f.generations) budgets += " --generations " + std::to_string(f.generations);
  if (f.max_evals) budgets += " --max-evals " + std::to_string(f.max_evals);
  if (f.hours > 0) budgets += " --hours " + format_number(f.hours);
  if (f.patience) budgets += " --patience " + std::to_string(f.patience);
  if (f.stop_when_converged)
    budgets += " --stop-when-converged " + (f.stop_when_converged->empty() ? "5%/0.95" : *f.stop_when_converged);
  spdlog::info("budget:{}", budgets.empty() ? " none (until the space is exhausted or Ctrl-C)" : budgets);
}

EvaluatorContext evaluator_context(const RunFlags& f) {
  EvaluatorContext ec;
  ec.seed = f.seed;
  if (!f.kernels_dir.empty()) ec.template_dirs.push_back(f.kernels_dir);
  // The workers' own logs (driver messages, compiler noise) go to the log file; what
  // matters of them also reaches the history (a crash's message carries its stderr tail).
  ec.on_worker_log = [](const std::string& line) { spdlog::debug(line); };
  ec.compile_threads = f.compile_threads;
  return ec;
}

// Rank 0 of a run over several ranks: the runner over every rank's devices in *runner.
// An exit code when a rank cannot serve (said in the log).
std::optional<int> connect_ranks(ScaleOut* scale_out, CandidateRunner** runner) {
  if (!scale_out) return std::nullopt;
  auto r = scale_out->connect(**runner);
  if (!r.ok()) {
    spdlog::error("the run over {} MPI ranks cannot start: {}", scale_out->size(), r.status().message());
    return status_exit(r.status());
  }
  *runner = *r;
  return std::nullopt;
}

// Ends the other ranks' part before the local runner they measure beside goes away.
struct ScaleOutEnd {
  ScaleOut* scale_out;
  ~ScaleOutEnd() {
    if (scale_out) scale_out->end();
  }
};

// A rank other than 0: open this host's devices as the flags say, with the templates
// rank 0 may name, and measure what it sends. Writes nothing but its log lines (stderr).
int serve_remote_rank(const RunFlags& f, ScaleOut& scale_out) {
  spdlog::set_pattern("[rank " + std::to_string(scale_out.rank()) + " " + local_host_name() + "] %l: %v");
  spdlog::set_level(f.verbose ? spdlog::level::info : spdlog::level::warn);
  const bool replay = f.evaluator.backend == "replay";
  std::optional<TemplateLibrary> library;
  if (!replay) {
    auto lib = load_templates(f.kernels_dir);
    if (!lib.ok()) return scale_out.refuse(local_host_name() + ": " + lib.status().message());
    library = std::move(lib).value();
  }
  auto o = open_evaluator(f.evaluator, evaluator_context(f));
  if (!o.ok()) {
    spdlog::error(o.status().message());
    return scale_out.refuse(local_host_name() + ": " + o.status().message());
  }
  RankTemplateFinder find = [&](const std::string& name, const std::string& hash) -> const KernelTemplate* {
    for (const auto& t : o->recorded_templates)
      if (t.name() == name && t.source_hash() == hash) return &t;
    if (library)
      if (const KernelTemplate* t = library->find(name); t && t->source_hash() == hash) return t;
    return nullptr;
  };
  spdlog::info("serving rank 0 with {}", o->description);
  return scale_out.serve(o->runner(), find);
}

// The evaluator (worker processes, in process, or the replay recordings). Nothing is
// written yet: a refused run leaves no folder behind. An exit code when it fails, said on
// stderr.
std::optional<int> open_measuring(const RunFlags& f, std::optional<OpenedEvaluator>* opened) {
  auto o = open_evaluator(f.evaluator, evaluator_context(f));
  if (!o.ok()) {
    std::cerr << "autotune-loop: " << o.status().message() << "\n";
    return status_exit(o.status());
  }
  opened->emplace(std::move(o).value());
  return std::nullopt;
}

// The results folder and the console (with its log file), once every input is known to
// be good: the first thing a run writes.
std::optional<int> open_output(const RunFlags& f, std::unique_ptr<Console>* console) {
  if (Status st = ensure_directory(f.results); !st.ok()) {
    std::cerr << "autotune-loop: --results: " << st.message() << "\n";
    return kExitFailed;
  }
  auto c = open_console(f);
  if (!c.ok()) return usage(c.status().message());
  *console = std::move(c).value();
  return std::nullopt;
}

// What a run (one problem or a set) has before it measures anything: the templates, the
// proposers' settings, --warm-start files and whether --results can be written, checked
// first (nothing slow has started), then the evaluator; the console and its log come
// later (open_output), once the templates are known to serve the problem.
struct RunStart {
  std::optional<TemplateLibrary> library;
  ProposerSettings proposers;
  std::vector<WarmStartFile> warm_start;
  std::unique_ptr<Console> console;
  std::optional<OpenedEvaluator> opened;
};

std::optional<int> start_run(const RunFlags& f, bool replay, RunStart* s) {
  if (auto code = load_library(f, replay, &s->library)) return *code;
  s->proposers = proposer_settings(f);
  if (auto resolved = resolve_proposer(s->proposers); !resolved.ok()) return usage(resolved.status().message());
  if (auto code = load_warm_starts(f, &s->warm_start)) return *code;
  if (Status st = check_evaluator_flags(f.evaluator); !st.ok()) return usage(st.message());
  if (Status st = check_writable_directory(f.results, "--results"); !st.ok()) return usage(st.message());
  if (!f.no_log_file && !f.log_file.empty())
    if (Status st = check_writable_directory(fs::path(f.log_file).parent_path().empty()
                                                 ? fs::path(".")
                                                 : fs::path(f.log_file).parent_path(),
                                             "--log-file");
        !st.ok())
      return usage(st.message());
  return open_measuring(f, &s->opened);
}

// --stop-when-converged's value, checked before anything starts.
std::optional<int> read_convergence_stop(const RunFlags& f, std::optional<ConvergenceStop>* stop) {
  if (!f.stop_when_converged) return std::nullopt;
  auto s = parse_convergence_stop(*f.stop_when_converged);
  if (!s.ok()) return usage(s.status().message());
  *stop = *s;
  return std::nullopt;
}

// --problems: the set, its problems' templates, and the run under one budget.
int run_problem_set_tuning(const RunFlags& f, ScaleOut* scale_out);

}  // namespace

int run_tuning(const RunFlags& flags) {
  RunFlags f = flags;
  // Under mpirun/srun with several ranks: rank 0 runs below, the others serve it.
  auto joined = join_scale_out(&f.evaluator);
  if (!joined.ok()) {
    if (joined.status().code() == StatusCode::kInvalidArgument) return usage(joined.status().message());
    std::cerr << "autotune-loop: " << joined.status().message() << "\n";
    return kExitFailed;
  }
  std::unique_ptr<ScaleOut> scale_out = std::move(joined).value();
  if (scale_out && scale_out->rank() > 0) return serve_remote_rank(f, *scale_out);
  if (!f.problems.empty()) return run_problem_set_tuning(f, scale_out.get());
  std::optional<ConvergenceStop> stop;
  if (auto code = read_convergence_stop(f, &stop)) return *code;
  const bool replay = f.evaluator.backend == "replay";
  // Problem, templates, proposer and warm-start files are checked before anything slow starts.
  std::optional<GemmProblem> problem;
  if (auto code = read_problem(f, replay, &problem)) return *code;
  RunStart start;
  if (auto code = start_run(f, replay, &start)) return *code;
  std::optional<TemplateLibrary>& library = start.library;
  ProposerSettings& ps = start.proposers;
  std::vector<WarmStartFile>& warm_start = start.warm_start;
  std::unique_ptr<Console>& console = start.console;
  std::optional<OpenedEvaluator>& opened = start.opened;
  Evaluator& evaluator = opened->primary();
  const DeviceFacts& device = evaluator.device();
  std::vector<const KernelTemplate*> templates;
  std::vector<std::string> left_out;
  if (Status st = choose_templates(f, replay, *opened, library, &problem, &templates, &left_out); !st.ok())
    return usage(st.message());
  if (Status st = GenerationLoop::check_folder(f.results, *problem, device, templates); !st.ok())
    return usage("--results: " + st.message());
  if (auto code = open_output(f, &console)) return *code;
  for (const auto& line : left_out) spdlog::warn(line);
  // The other ranks are waited for once the run is known to be able to start.
  CandidateRunner* runner_ptr = &opened->runner();
  ScaleOutEnd end_ranks{scale_out.get()};
  if (auto code = connect_ranks(scale_out.get(), &runner_ptr)) return *code;
  CandidateRunner& runner = *runner_ptr;
  add_warm_start_seeds(warm_start, templates, device, &ps);

  auto factory = ProposerFactory::create(ps);
  if (!factory.ok()) return usage(factory.status().message());
  std::vector<std::unique_ptr<Proposer>> proposers;
  std::vector<LoopTarget> targets;
  for (const KernelTemplate* t : templates) {
    auto p = (*factory)->make(*t, device, *problem);
    if (!p.ok()) return usage(p.status().message());
    proposers.push_back(std::move(p).value());
    targets.push_back({t, proposers.back().get()});
  }
  auto loop = GenerationLoop::open(runner, targets, loop_options(f, *problem, runner, (*factory)->describe(), stop));
  if (!loop.ok()) {
    spdlog::error(loop.status().message());
    return status_exit(loop.status());
  }
  log_run_start(f, replay, **loop, *problem, *opened, device, templates, (*factory)->describe());

  install_stop_handlers();
  ConsoleObserver observer(*console);
  auto report = (*loop)->run(observer, &stop_requested(), opened->retimer.get());
  console->clear_status();
  if (!report.ok()) {
    spdlog::error("the run stopped: {}", report.status().message());
    spdlog::error("every row written so far is in {}; run the same command again to resume",
                  (fs::path(f.results) / kHistoryFileName).string());
    return exit_code_for_signal(kExitFailed);
  }
  SummaryContext sc;
  sc.problem = *problem;
  sc.device = device;
  sc.results_dir = f.results;
  spdlog::default_logger()->flush();
  std::string summary = format_run_summary(*report, sc);
  if (scale_out) summary += scale_out->host_summary();
  std::cout << summary << std::flush;
  spdlog::debug("summary:\n{}", summary);
  return exit_code_for_signal(report->winners.empty() ? kExitFailed : kExitOk);
}

namespace {

int run_problem_set_tuning(const RunFlags& f, ScaleOut* scale_out) {
  if (problem_given(f.problem) || f.problem.m || f.problem.n || f.problem.k || !f.problem_file.empty())
    return usage("--problems takes the problems from the set file: leave out --m/--n/--k and --problem-file");
  if (f.generations)
    return usage("--generations does not go with --problems: the set shares --max-evals and/or --hours, split "
                 "by the scheduler (docs/problem-sets.md)");
  const bool replay = f.evaluator.backend == "replay";
  if (replay && !f.kernels_dir.empty())
    return usage("--kernels-dir does not go with --backend replay: the recordings are the templates");
  std::optional<ConvergenceStop> stop;
  if (auto code = read_convergence_stop(f, &stop)) return *code;
  auto set = read_problem_set(f.problems);
  if (!set.ok()) return usage(set.status().message());
  RunStart start;
  if (auto code = start_run(f, replay, &start)) return *code;
  std::optional<TemplateLibrary>& library = start.library;
  ProposerSettings& ps = start.proposers;
  std::vector<WarmStartFile>& warm_start = start.warm_start;
  std::unique_ptr<Console>& console = start.console;
  std::optional<OpenedEvaluator>& opened = start.opened;
  const DeviceFacts& device = opened->primary().device();
  // Every problem must have a template that can serve it before anything is measured.
  std::map<std::string, std::vector<const KernelTemplate*>> templates;
  std::vector<const KernelTemplate*> every;  // each template once, for the --warm-start seeds
  std::vector<std::string> left_out;
  for (const auto& e : set->entries) {
    std::optional<GemmProblem> problem = e.problem;
    std::vector<std::string> left;
    if (Status st = choose_templates(f, replay, *opened, library, &problem, &templates[e.name], &left); !st.ok())
      return usage("problem '" + e.name + "' of " + f.problems + ": " + st.message());
    for (const KernelTemplate* t : templates[e.name])
      if (std::find(every.begin(), every.end(), t) == every.end()) every.push_back(t);
    for (const auto& line : left) left_out.push_back(e.name + ": " + line);
  }
  if (Status st = check_problem_set_folder(f.results, *set); !st.ok()) return usage("--results: " + st.message());
  if (auto code = open_output(f, &console)) return *code;
  for (const auto& line : left_out) spdlog::warn(line);
  // The other ranks are waited for once every problem is known to have a template.
  CandidateRunner* runner_ptr = &opened->runner();
  ScaleOutEnd end_ranks{scale_out};
  if (auto code = connect_ranks(scale_out, &runner_ptr)) return *code;
  CandidateRunner& runner = *runner_ptr;
  add_warm_start_seeds(warm_start, every, device, &ps);
  auto factory = ProposerFactory::create(ps);
  if (!factory.ok()) return usage(factory.status().message());

  ProblemTargetsFactory make_targets = [&](const ProblemSetEntry& e,
                                           const std::vector<fs::path>& related) -> Result<ProblemTargets> {
    std::vector<WarmStartFile> files;
    for (const auto& path : related)
      if (auto w = load_warm_start(path); w.ok()) files.push_back(std::move(w).value());
    ProblemTargets t;
    for (const KernelTemplate* tmpl : templates[e.name]) {
      auto seeds = warm_start_seeds(files, tmpl->name(), device.name, tmpl);
      for (auto& seed : seeds) seed.quiet_if_invalid = true;
      if (!seeds.empty()) spdlog::info("{}: {} warm-start seed(s) for {} from the set", e.name, seeds.size(), tmpl->name());
      TS_ASSIGN_OR_RETURN(auto p, (*factory)->make(*tmpl, device, e.problem, seeds));
      t.proposers.push_back(std::move(p));
      t.targets.push_back({tmpl, t.proposers.back().get()});
    }
    return t;
  };

  ProblemSetOptions so;
  so.results_dir = f.results;
  so.set = *set;
  so.loop = loop_options(f, set->entries.front().problem, runner, (*factory)->describe(), stop);
  so.loop.settings["problems"] = f.problems;
  so.max_evals = f.max_evals;
  so.hours = f.hours;
  // Two generations' worth: enough for a first result and a step from it.
  so.min_slice = so.slice = 2 * static_cast<std::int64_t>(f.candidates);
  spdlog::info("problem set {} ({} problems) from {} in {}; proposer: {}; budget:{}{}", set->name,
               set->entries.size(), f.problems, f.results, (*factory)->describe(),
               f.max_evals ? " --max-evals " + std::to_string(f.max_evals) : "",
               f.hours > 0 ? " --hours " + format_number(f.hours) : (f.max_evals ? "" : " none (until every search ends or Ctrl-C)"));

  install_stop_handlers();
  ConsoleObserver observer(*console);
  auto report = run_problem_set(runner, so, make_targets, observer, &stop_requested(), opened->retimer.get());
  console->clear_status();
  if (!report.ok()) {
    spdlog::error("the problem set stopped: {}", report.status().message());
    spdlog::error("every row written so far is in the problems' folders under {}; run the same command again to "
                  "resume", f.results);
    return exit_code_for_signal(status_exit(report.status()) == kExitUsage ? kExitUsage : kExitFailed);
  }
  spdlog::default_logger()->flush();
  std::string summary = format_problem_set_summary(*report);
  if (scale_out) summary += scale_out->host_summary();
  std::cout << summary << "summary: " << (fs::path(f.results) / "summary.json").string() << "\n" << std::flush;
  spdlog::debug("summary:\n{}", summary);
  bool any = false;
  for (const auto& p : report->problems) any = any || p.ours_ms.has_value();
  return exit_code_for_signal(any ? kExitOk : kExitFailed);
}

}  // namespace

}  // namespace tilesmith::cli
