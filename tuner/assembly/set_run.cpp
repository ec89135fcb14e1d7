#include "tuner/assembly/set_run.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "registry/template_library.h"
#include "tuner/search/prior_rescale.h"

namespace tilesmith {

Result<std::unique_ptr<SetRun>> SetRun::prepare(const RunSettings& settings) {
  if (settings.problem || !settings.problem_file.empty())
    return Status::invalid(
        "--problems takes the problems from the set file: leave out --m/--n/--k and "
        "--problem-file");
  if (settings.generations)
    return Status::invalid(
        "--generations does not go with --problems: the set shares --max-evals and/or --hours, "
        "split by the scheduler (docs/problem-sets.md)");
  std::unique_ptr<SetRun> r(new SetRun(settings));
  const RunSettings& f = r->settings_;
  const bool replay = f.evaluator.backend == "replay";
  if (replay && !f.kernels_dir.empty())
    return Status::invalid(
        "--kernels-dir does not go with --backend replay: the recordings are the templates");
  TS_RETURN_IF_ERROR(read_convergence_stop(f, &r->start_.stop));
  auto set = read_problem_set(f.problems);
  if (!set.ok()) return Status::invalid(set.status().message());
  r->set_ = std::move(set).value();
  TS_RETURN_IF_ERROR(r->start(replay));
  // Every problem must have a template that can serve it before anything is measured.
  for (const auto& e : r->set_.entries) {
    std::optional<GemmProblem> problem = e.problem;
    std::vector<std::string> left;
    if (Status st = choose_templates(f, replay, *r->start_.opened, r->start_.library, &problem,
                                     &r->templates_[e.name], &left);
        !st.ok())
      return Status::invalid("problem '" + e.name + "' of " + f.problems + ": " + st.message());
    for (const auto& line : left) r->left_out_.push_back(e.name + ": " + line);
  }
  if (Status st = check_problem_set_folder(f.results, r->set_); !st.ok())
    return Status::invalid("--results: " + st.message());
  // Each problem's folder as its loop will check it (the objective it was tuned for among
  // the rest), before the first slice rather than at its problem's turn.
  for (const auto& e : r->set_.entries)
    if (Status st = GenerationLoop::check_folder(std::filesystem::path(f.results) / e.name, e.problem, r->device(),
                                                 r->templates_[e.name], f.objective);
        !st.ok())
      return Status::invalid("--results: problem '" + e.name + "': " + st.message());
  return r;
}

Status SetRun::assemble(ScaleOut* scale_out) {
  std::vector<const KernelTemplate*> every;  // each template once, for the --warm-start seeds
  for (const auto& e : set_.entries)
    for (const KernelTemplate* t : templates_[e.name])
      if (std::find(every.begin(), every.end(), t) == every.end()) every.push_back(t);
  // The other ranks are waited for once every problem is known to have a template.
  return connect_and_make_factory(scale_out, every);
}

Result<ProblemTargets> SetRun::make_targets(const ProblemSetEntry& e,
                                            const std::vector<std::filesystem::path>& related) {
  std::vector<WarmStartFile> files;
  // The neighbours' whole histories as priors besides their winners: a few of their fastest
  // configurations, spread over their good regions (tuner/search/prior.h).
  std::vector<PriorSource> histories;
  for (const auto& path : related) {
    if (auto w = load_warm_start(path); w.ok()) files.push_back(std::move(w).value());
    if (auto h = load_prior(path.parent_path()); h.ok())
      for (auto& source : *h) histories.push_back(std::move(source));
  }
  ProblemTargets t;
  for (const KernelTemplate* tmpl : templates_[e.name]) {
    auto seeds = warm_start_seeds(files, tmpl->name(), device().name, tmpl);
    const std::size_t winners = seeds.size();
    // The neighbours were tuned on other problems: their times carried to this one by their
    // blocks' waves (on replay, those of the embedded template of the recordings' kernel).
    const std::vector<PriorSource> carried =
        priors_for_problem(histories, launch_geometry_of(*tmpl), e.problem, start_.opened->launch_device());
    append_prior_picks(seeds, carried, *tmpl);
    for (auto& seed : seeds) seed.quiet_if_invalid = true;
    if (!seeds.empty())
      spdlog::info("{}: {} warm-start seed(s) for {} from the set ({} winners, {} from their histories)", e.name,
                   seeds.size(), tmpl->name(), winners, seeds.size() - winners);
    TS_ASSIGN_OR_RETURN(auto p, factory_->make(*tmpl, device(), e.problem, seeds,
                                               prior_measurements_for(carried, tmpl->name(), tmpl)));
    t.proposers.push_back(std::move(p));
    t.targets.push_back({tmpl, t.proposers.back().get()});
  }
  return t;
}

Result<ProblemSetReport> SetRun::run(LoopObserver& observer, const std::atomic<bool>* stop) {
  const RunSettings& f = settings_;
  ProblemSetOptions so;
  so.results_dir = f.results;
  so.set = set_;
  so.loop = loop_options(f, set_.entries.front().problem, *runner_, proposer_, start_.stop);
  so.loop.settings["problems"] = f.problems;
  so.max_evals = f.max_evals;
  so.hours = f.hours;
  // Two generations' worth: enough for a first result and a step from it.
  so.min_slice = so.slice = 2 * static_cast<std::int64_t>(f.candidates);
  ProblemTargetsFactory make = [this](const ProblemSetEntry& e,
                                      const std::vector<std::filesystem::path>& related) {
    return make_targets(e, related);
  };
  return run_problem_set(*runner_, so, make, observer, stop, start_.opened->retimer.get());
}

}  // namespace tilesmith
