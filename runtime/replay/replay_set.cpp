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

namespace {

bool same_problem(const GemmProblem& a, const GemmProblem& b) {
  return a.m == b.m && a.n == b.n && a.k == b.k && a.key() == b.key();
}

// Names recordings of one kernel at several problems after the kernel (replay_set.h).
void name_by_kernel_across_problems(std::vector<std::shared_ptr<const Recording>>& recordings) {
  std::map<std::string, std::vector<GemmProblem>> problems_of;
  for (const auto& r : recordings) {
    if (r->kernel_name().empty()) continue;
    auto& ps = problems_of[r->kernel_name()];
    const GemmProblem p = r->problem();
    if (std::none_of(ps.begin(), ps.end(), [&](const GemmProblem& q) { return same_problem(p, q); }))
      ps.push_back(p);
  }
  for (auto& r : recordings)
    if (!r->kernel_name().empty() && problems_of[r->kernel_name()].size() > 1 && r->name() != r->kernel_name())
      r = r->renamed(r->kernel_name());
}

}  // namespace

bool answers_for(const Recording& recording, const GemmProblem& problem) {
  return same_problem(recording.problem(), problem);
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
      if (other->device_name() != (*rec)->device_name())
        return Status::invalid("the recordings come from different devices: " + other->origin() + " from " +
                               other->device_name() + ", " + file.string() + " from " + (*rec)->device_name() +
                               "; a run compares its results with each other, so replay one device's recordings");
    }
    out.push_back(std::move(rec).value());
  }
  name_by_kernel_across_problems(out);
  for (std::size_t i = 0; i < out.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (out[j]->name() == out[i]->name() && same_problem(out[j]->problem(), out[i]->problem()))
        return Status::invalid("two recordings of " + out[i]->problem().describe() + " are named '" +
                               out[i]->name() + "' (" + out[j]->origin() + " and " + out[i]->origin() +
                               "): the name is the template's, so rename one of the files" +
                               (out[i]->name() == out[i]->kernel_name()
                                    ? " (recordings of one kernel at several problems are named after the kernel: "
                                      "keep one recording per kernel and problem)"
                                    : ""));
  return out;
}

std::vector<std::shared_ptr<const Recording>> recordings_for(
    const std::vector<std::shared_ptr<const Recording>>& recordings, const GemmProblem& problem) {
  std::vector<std::shared_ptr<const Recording>> out;
  for (const auto& r : recordings) {
    if (answers_for(*r, problem)) out.push_back(r);
  }
  return out;
}

ReplaySetEvaluator::ReplaySetEvaluator(std::vector<std::shared_ptr<const Recording>> recordings,
                                       std::uint64_t seed)
    : recordings_(recordings) {
  for (auto& r : recordings) evaluators_.push_back(std::make_unique<ReplayEvaluator>(std::move(r), seed));
}

ReplayEvaluator* ReplaySetEvaluator::find(const KernelTemplate& tmpl, const GemmProblem& problem, Evaluation* e) {
  ReplayEvaluator* named = nullptr;
  int with_name = 0;
  for (std::size_t i = 0; i < recordings_.size(); ++i) {
    if (recordings_[i]->name() != tmpl.name()) continue;
    ++with_name;
    named = evaluators_[i].get();
    if (answers_for(*recordings_[i], problem)) return named;
  }
  // One recording of that name: it answers (and refuses a problem it did not record).
  if (with_name == 1) return named;
  e->outcome = Outcome::kInvalid;
  e->message = with_name == 0 ? "the replay backend has no recording named '" + tmpl.name() + "'"
                              : "no recording of " + tmpl.name() + " measured " + problem.describe();
  return nullptr;
}

Evaluation ReplaySetEvaluator::prepare(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) {
  Evaluation e;
  if (ReplayEvaluator* ev = find(tmpl, problem, &e)) return ev->prepare(tmpl, problem, config);
  return e;
}

Evaluation ReplaySetEvaluator::evaluate(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) {
  Evaluation e;
  if (ReplayEvaluator* ev = find(tmpl, problem, &e)) return ev->evaluate(tmpl, problem, config);
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
