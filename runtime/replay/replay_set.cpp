#include "runtime/replay/replay_set.h"

namespace tilesmith::replay {

Result<std::vector<std::shared_ptr<const Recording>>> load_recordings(
    const std::vector<std::filesystem::path>& files, const RecordingOptions& options) {
  std::vector<std::shared_ptr<const Recording>> out;
  for (const auto& file : files) {
    auto rec = Recording::load(file, options);
    if (!rec.ok()) return rec.status().with_context(file.string());
    for (const auto& other : out) {
      if (other->name() == (*rec)->name())
        return Status::invalid("two recordings are named '" + other->name() + "' (" + other->origin() + " and " +
                               file.string() + "): the name is the template's, so rename one of the files");
      if (other->device_name() != (*rec)->device_name())
        return Status::invalid("the recordings come from different devices: " + other->origin() + " from " +
                               other->device_name() + ", " + file.string() + " from " + (*rec)->device_name() +
                               "; a run compares its results with each other, so replay one device's recordings");
    }
    out.push_back(std::move(rec).value());
  }
  return out;
}

std::vector<std::shared_ptr<const Recording>> recordings_for(
    const std::vector<std::shared_ptr<const Recording>>& recordings, const GemmProblem& problem) {
  std::vector<std::shared_ptr<const Recording>> out;
  for (const auto& r : recordings) {
    const GemmProblem p = r->problem();
    if (p.m == problem.m && p.n == problem.n && p.k == problem.k && p.key() == problem.key()) out.push_back(r);
  }
  return out;
}

ReplaySetEvaluator::ReplaySetEvaluator(std::vector<std::shared_ptr<const Recording>> recordings,
                                       std::uint64_t seed) {
  for (auto& r : recordings) {
    const std::string name = r->name();
    evaluators_.push_back(std::make_unique<ReplayEvaluator>(std::move(r), seed));
    by_name_[name] = evaluators_.back().get();
  }
}

ReplayEvaluator* ReplaySetEvaluator::find(const KernelTemplate& tmpl, Evaluation* e) {
  auto it = by_name_.find(tmpl.name());
  if (it != by_name_.end()) return it->second;
  e->outcome = Outcome::kInvalid;
  e->message = "the replay backend has no recording named '" + tmpl.name() + "'";
  return nullptr;
}

Evaluation ReplaySetEvaluator::prepare(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) {
  Evaluation e;
  if (ReplayEvaluator* ev = find(tmpl, &e)) return ev->prepare(tmpl, problem, config);
  return e;
}

Evaluation ReplaySetEvaluator::evaluate(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) {
  Evaluation e;
  if (ReplayEvaluator* ev = find(tmpl, &e)) return ev->evaluate(tmpl, problem, config);
  return e;
}

}  // namespace tilesmith::replay
