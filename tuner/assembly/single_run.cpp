#include "tuner/assembly/single_run.h"

#include <nlohmann/json.hpp>

#include "base/files.h"

namespace tilesmith {
namespace {

using nlohmann::json;

Result<GemmProblem> problem_from_file(const std::string& path) {
  TS_ASSIGN_OR_RETURN(std::string text, read_file(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::parse_error(path + " is not valid JSON");
  auto p = problem_from_json(j);
  if (!p.ok()) return p.status().with_context(path);
  return p;
}

// The problem, from the settings or a problem file, or (replay) later from the recording.
Status read_problem(const RunSettings& f, bool replay, std::optional<GemmProblem>* problem) {
  if (!f.problem_file.empty()) {
    auto p = problem_from_file(f.problem_file);
    if (!p.ok()) return Status::invalid(p.status().message());
    *problem = *p;
  } else if (f.problem) {
    *problem = f.problem;
  } else if (!replay) {
    return Status::invalid(
        "give the problem: --m M --n N --k K (with --dtype, --layout, ... as needed) or "
        "--problem-file FILE. Try --help for examples.");
  }
  if (replay && !f.kernels_dir.empty())
    return Status::invalid(
        "--kernels-dir does not go with --backend replay: the recording is the template");
  if (!replay && (!f.evaluator.replay_files.empty() || !f.evaluator.replay_space.empty()))
    return Status::invalid("--replay-file and --replay-space go with --backend replay");
  return Status::ok_status();
}

}  // namespace

Result<std::unique_ptr<SingleRun>> SingleRun::prepare(const RunSettings& settings) {
  if (settings.problem && !settings.problem_file.empty())
    return Status::invalid("give the problem with --m/--n/--k or with --problem-file, not both");
  std::unique_ptr<SingleRun> r(new SingleRun(settings));
  const RunSettings& f = r->settings_;
  r->replay_ = f.evaluator.backend == "replay";
  TS_RETURN_IF_ERROR(read_convergence_stop(f, &r->start_.stop));
  // Problem, templates, proposer and warm-start files are checked before anything slow starts.
  TS_RETURN_IF_ERROR(read_problem(f, r->replay_, &r->problem_));
  TS_RETURN_IF_ERROR(r->start(r->replay_));
  TS_RETURN_IF_ERROR(choose_templates(f, r->replay_, *r->start_.opened, r->start_.library,
                                      &r->problem_, &r->templates_, &r->left_out_));
  if (Status st = GenerationLoop::check_folder(f.results, *r->problem_, r->device(), r->templates_, f.objective);
      !st.ok())
    return Status::invalid("--results: " + st.message());
  return r;
}

Status SingleRun::assemble(ScaleOut* scale_out) {
  const RunSettings& f = settings_;
  // The other ranks are waited for once the run is known to be able to start.
  TS_RETURN_IF_ERROR(connect_and_make_factory(scale_out, templates_, &*problem_));
  std::vector<LoopTarget> targets;
  for (const KernelTemplate* t : templates_) {
    auto p = factory_->make(*t, device(), *problem_);
    if (!p.ok()) return Status::invalid(p.status().message());
    proposers_.push_back(std::move(p).value());
    targets.push_back({t, proposers_.back().get()});
  }
  TS_ASSIGN_OR_RETURN(
      loop_, GenerationLoop::open(*runner_, targets,
                                  loop_options(f, *problem_, *runner_, proposer_, start_.stop)));
  return Status::ok_status();
}

Result<LoopReport> SingleRun::run(LoopObserver& observer, const std::atomic<bool>* stop) {
  return loop_->run(observer, stop, start_.opened->retimer.get());
}

}  // namespace tilesmith
