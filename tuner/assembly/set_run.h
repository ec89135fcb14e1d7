#pragma once
// A problem set's run (--problems, docs/problem-sets.md; the steps: assembled_run.h).
// prepare() refuses a set with a problem no template can serve; a problem's proposers are
// made when the scheduler first gives it a slice, seeded from related problems' winners.
// Reported and printed by cli/run_set_command.cpp.

#include <map>

#include "tuner/assembly/assembled_run.h"
#include "tuner/loop/problem_set.h"
#include "tuner/loop/problem_set_run.h"

namespace tilesmith {

class SetRun final : public AssembledRun {
 public:
  static Result<std::unique_ptr<SetRun>> prepare(const RunSettings& settings);
  Status assemble(ScaleOut* scale_out);  // the factory is seeded from every problem's templates
  Result<ProblemSetReport> run(LoopObserver& observer, const std::atomic<bool>* stop);

  const ProblemSet& set() const { return set_; }

 private:
  explicit SetRun(const RunSettings& settings) : AssembledRun(settings) {}
  Result<ProblemTargets> make_targets(const ProblemSetEntry& e,
                                      const std::vector<std::filesystem::path>& related);

  ProblemSet set_;
  std::map<std::string, std::vector<const KernelTemplate*>> templates_;  // by problem name
};

}  // namespace tilesmith
