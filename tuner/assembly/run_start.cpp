#include "tuner/assembly/run_start.h"

#include <set>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "runtime/replay/replay_set.h"
#include "tuner/search/prior_rescale.h"

namespace tilesmith {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json settings_json(const RunSettings& f, const std::string& proposer,
                   const std::vector<std::string>& devices) {
  return json{
      {"proposer", proposer},
      {"devices", devices},
      {"in_process", f.evaluator.in_process},
      {"candidates", f.candidates},
      {"allocation", f.allocation},
      {"seed", f.seed},
      {"generations", f.generations},
      {"max_evals", f.max_evals},
      {"hours", f.hours},
      {"patience", f.patience},
      {"stop_when_converged", f.stop_when_converged ? json(*f.stop_when_converged) : json(nullptr)},
      {"objective", objective_name(f.objective)},
      {"retime", f.retime},
      {"race_margin", f.race_margin},
      {"overlap", f.overlap},
      {"retime_rounds", f.retime_rounds},
      {"retime_within", f.retime_within ? json(*f.retime_within) : json("all")},
      {"backend", f.evaluator.backend},
      {"replay_file",
       f.evaluator.replay_files.empty() ? std::string() : f.evaluator.replay_files.front()},
      {"replay_files", f.evaluator.replay_files},
      {"llm_url", f.llm.url},
      {"llm_model", f.llm.model},
      {"provider", f.llm.provider},
      {"warm_start", f.warm_start},
      {"prior", f.prior}};
}

// The template library (not for replay), checking that every --template names one.
Status load_library(const RunSettings& f, bool replay, std::optional<TemplateLibrary>* library) {
  if (replay) return Status::ok_status();
  auto lib = load_templates(f.kernels_dir);
  if (!lib.ok()) return Status::invalid(lib.status().message());
  *library = std::move(lib).value();
  for (const auto& name : f.templates) {
    const KernelTemplate* t = (*library)->find(name);
    if (!t) {
      std::string known;
      for (const auto& n : (*library)->names()) known += " " + n;
      return Status::invalid("no template named '" + name + "' (known:" + known + ")");
    }
  }
  return Status::ok_status();
}

ProposerSettings proposer_settings(const RunSettings& f) {
  ProposerSettings ps;
  ps.name = f.proposer;
  ps.fallback = f.fallback_proposer;
  ps.llm = f.llm;
  ps.objective = f.objective;
  ps.llm.log_path = fs::path(f.results) / "llm_log.jsonl";
  ps.llm.capabilities_path = fs::path(f.results) / "llm_capabilities.json";
  ps.on_event = [](const std::string& line) { spdlog::warn(line); };
  return ps;
}

Status load_warm_starts(const RunSettings& f, std::vector<WarmStartFile>* warm_start) {
  for (const auto& path : f.warm_start) {
    auto w = load_warm_start(path);
    if (!w.ok()) return Status::invalid("--warm-start: " + w.status().message());
    warm_start->push_back(std::move(w).value());
  }
  return Status::ok_status();
}

Status load_priors(const RunSettings& f, std::vector<PriorSource>* prior) {
  for (const auto& path : f.prior) {
    auto sources = load_prior(path);
    if (!sources.ok()) return Status::invalid("--prior: " + sources.status().message());
    for (auto& s : *sources) prior->push_back(std::move(s));
  }
  return Status::ok_status();
}

}  // namespace

Status read_convergence_stop(const RunSettings& f, std::optional<ConvergenceStop>* stop) {
  if (!f.stop_when_converged) return Status::ok_status();
  auto s = parse_convergence_stop(*f.stop_when_converged);
  if (!s.ok()) return Status::invalid(s.status().message());
  *stop = *s;
  return Status::ok_status();
}

Status start_run(const RunSettings& f, bool replay, RunStart* s) {
  TS_RETURN_IF_ERROR(load_library(f, replay, &s->library));
  s->proposers = proposer_settings(f);
  if (auto resolved = resolve_proposer(s->proposers); !resolved.ok())
    return Status::invalid(resolved.status().message());
  TS_RETURN_IF_ERROR(load_warm_starts(f, &s->warm_start));
  TS_RETURN_IF_ERROR(load_priors(f, &s->prior));
  if (auto a = parse_template_allocation(f.allocation); !a.ok())
    return Status::invalid("--allocation: " + a.status().message());
  if (Status st = check_evaluator_settings(f.evaluator); !st.ok())
    return Status::invalid(st.message());
  if (Status st = check_writable_directory(f.results, "--results"); !st.ok())
    return Status::invalid(st.message());
  // Worker processes, in process, or the replay recordings; its errors keep their code.
  TS_ASSIGN_OR_RETURN(auto opened, open_evaluator(f.evaluator, evaluator_context(f)));
  s->opened.emplace(std::move(opened));
  return Status::ok_status();
}

Status choose_templates(const RunSettings& f, bool replay, OpenedEvaluator& opened,
                        const std::optional<TemplateLibrary>& library,
                        std::optional<GemmProblem>* problem,
                        std::vector<const KernelTemplate*>* templates,
                        std::vector<std::string>* left_out) {
  if (replay) {
    if (!*problem) {
      if (opened.recordings.size() > 1)
        return Status::invalid(
            "with several --replay-file recordings, give the problem (--m/--n/--k) or a set "
            "(--problems)");
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
      return Status::invalid("no --replay-file recorded " + (*problem)->describe() + " (" +
                             recorded + "); give a recording of that problem" +
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
        return Status::invalid("--template " + name +
                               ": the replay backend has only the recordings' templates (" + names +
                               ")");
    }
    if (templates->empty())
      return Status::invalid("--template leaves no recording of " + (*problem)->describe() + " (" +
                             recorded + ")");
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
      if (candidates.size() > 1)
        left_out->push_back("leaving out " + t->name() + ": " + st.message());
    }
  }
  if (templates->empty())
    return Status::invalid("no template can serve " + (*problem)->describe() + " on " +
                           device.name + ":" + why);
  return {};
}

Result<CandidateRunner*> connect_ranks(ScaleOut* scale_out, CandidateRunner& local, int compile_threads) {
  if (!scale_out) return &local;
  auto r = scale_out->connect(local, host_compile_slots(compile_threads, local));
  if (!r.ok())
    return Status(r.status().code(), "the run over " + std::to_string(scale_out->size()) +
                                         " MPI ranks cannot start: " + r.status().message());
  return *r;
}

void add_warm_start_seeds(const std::vector<WarmStartFile>& warm_start, const std::vector<PriorSource>& prior,
                          const std::vector<const KernelTemplate*>& templates, const DeviceFacts& device,
                          const GemmProblem* problem, ProposerSettings* ps) {
  if (warm_start.empty() && prior.empty()) return;
  std::size_t winners = 0, picks = 0;
  std::string tuned;
  for (const KernelTemplate* t : templates) {
    auto seeds = warm_start_seeds(warm_start, t->name(), device.name, t);
    const std::size_t from_files = seeds.size();
    // Sources measured on another problem are carried to this one by their blocks' waves
    // (on replay, those of the embedded template of the recording's name).
    const std::vector<PriorSource> carried =
        problem ? priors_for_problem(prior, launch_geometry_of(*t), *problem, device) : prior;
    const std::size_t from_prior = append_prior_picks(seeds, carried, *t);
    if (!warm_start.empty()) spdlog::info("warm start: {} seed(s) for {}", from_files, t->name());
    if (from_prior > 0)
      spdlog::info("prior: {} configuration(s) for {}, the first {}", from_prior, t->name(), seeds[from_files].origin);
    for (const auto& s : seeds)
      for (const auto& u : s.updates) spdlog::info("warm start: {} {}: {}", t->name(), s.origin, u);
    winners += from_files;
    picks += from_prior;
    tuned += (tuned.empty() ? "" : ", ") + t->name();
    if (!seeds.empty()) ps->warm_start[t->name()] = std::move(seeds);
    if (auto rows = prior_measurements_for(carried, t->name(), t); !rows.empty()) {
      spdlog::info("prior: {} measurement(s) of {} for the search's model of its space", rows.size(), t->name());
      ps->prior[t->name()] = std::move(rows);
    }
  }
  // Not an error (another recording's template, a renamed template), but the user
  // expected a head start and gets none: say why.
  auto names_of = [](const std::set<std::string>& recorded) {
    std::string names;
    for (const auto& n : recorded) names += (names.empty() ? "" : ", ") + n;
    return names;
  };
  if (!warm_start.empty() && winners == 0) {
    std::set<std::string> recorded;
    for (const auto& w : warm_start)
      for (const auto& e : w.entries) recorded.insert(e.template_name);
    spdlog::warn("--warm-start: no entry for {} (the files have {}); the search starts from scratch", tuned,
                 recorded.empty() ? "no entries" : "entries for " + names_of(recorded));
  }
  if (!prior.empty() && picks == 0) {
    std::set<std::string> recorded;
    for (const auto& p : prior) recorded.insert(p.template_name);
    spdlog::warn("--prior: no source measured any template of this run ({}; the sources are of {}); the search "
                 "starts without it",
                 tuned, names_of(recorded));
  }
}

LoopOptions loop_options(const RunSettings& f, const GemmProblem& problem,
                         const CandidateRunner& runner, const std::string& proposer,
                         const std::optional<ConvergenceStop>& stop) {
  LoopOptions lo;
  lo.stop_when_converged = stop;
  if (stop) lo.convergence_margin = stop->margin;
  lo.results_dir = f.results;
  lo.problem = problem;
  lo.candidates = f.candidates;
  // Checked when the run starts (check_evaluator_settings' neighbour below); "gain" otherwise.
  if (auto a = parse_template_allocation(f.allocation); a.ok()) lo.allocation = *a;
  lo.seed = f.seed;
  lo.budget.generations = f.generations;
  lo.budget.max_evals = f.max_evals;
  lo.budget.hours = f.hours;
  lo.budget.patience = f.patience;
  lo.objective = f.objective;
  lo.retime_top = f.retime;
  lo.race_margin = f.race_margin;
  lo.overlap_generations = f.overlap == "on" || (f.overlap == "auto" && f.evaluator.backend != "replay");
  lo.retime_rounds.max_rounds = f.retime_rounds;
  lo.retime_within = f.retime_within;
  // Several devices eat compiles as fast as one each: the default is per device.
  lo.compile_threads = compile_threads_for(f.compile_threads, runner.width());
  lo.vendor_baseline = !f.no_vendor;
  lo.settings = settings_json(f, proposer, runner.devices());
  return lo;
}

EvaluatorContext evaluator_context(const RunSettings& f) {
  EvaluatorContext ec;
  ec.seed = f.seed;
  if (!f.kernels_dir.empty()) ec.template_dirs.push_back(f.kernels_dir);
  // The workers' own logs (driver messages, compiler noise) go to the log file; what
  // matters of them also reaches the history (a crash's message carries its stderr tail).
  ec.on_worker_log = [](const std::string& line) { spdlog::debug(line); };
  ec.compile_threads = f.compile_threads;
  if (needs_energy(f.objective)) ec.energy_ms = kEnergyWindowMs;
  return ec;
}

}  // namespace tilesmith
