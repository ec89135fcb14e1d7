#include "runtime/replay/replay_set.h"

#include <algorithm>

namespace tilesmith::replay {

Result<std::vector<std::filesystem::path>> expand_recording_paths(const std::vector<std::filesystem::path>& paths) {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  for (const auto& path : paths) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return Status::not_found(path.string() + " does not exist");
    if (!fs::is_directory(path, ec)) {
      out.push_back(path);
      continue;
    }
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      const std::string name = entry.path().filename().string();
      const auto ends = [&](const std::string& tail) {
        return name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
      };
      if (entry.is_regular_file(ec) && (ends(".json") || ends(".json.gz"))) found.push_back(entry.path());
    }
    if (ec) return Status::invalid("reading the folder " + path.string() + ": " + ec.message());
    if (found.empty())
      return Status::invalid("the folder " + path.string() + " holds no recording (*.json or *.json.gz)");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

Result<std::vector<std::shared_ptr<const Recording>>> load_recordings(
    const std::vector<std::filesystem::path>& files, const RecordingOptions& options) {
  std::vector<std::shared_ptr<const Recording>> out;
  for (const auto& file : files) {
    auto rec = Recording::load(file, options);
    if (!rec.ok()) {
      // Most messages name the file already.
      const std::string& m = rec.status().message();
      return m.rfind(file.string(), 0) == 0 ? rec.status() : rec.status().with_context(file.string());
    }
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

Result<Evaluation> ReplaySetEvaluator::vendor_baseline(const GemmProblem& problem) {
  Status last = Status::unavailable("no recording of " + problem.describe());
  for (const auto& e : evaluators_) {
    auto v = e->vendor_baseline(problem);
    if (v.ok()) return v;
    last = v.status();
  }
  return last;
}

}  // namespace tilesmith::replay
