#pragma once
// One problem's run (the steps: assembled_run.h). The problem is the one given, the one
// in --problem-file, or the recording's; assemble() makes each template's proposer and
// opens the loop on the results folder. Reported and printed by cli/run_command.cpp.

#include <atomic>
#include <optional>

#include "tuner/assembly/assembled_run.h"
#include "tuner/loop/loop.h"

namespace tilesmith {

class SingleRun final : public AssembledRun {
 public:
  static Result<std::unique_ptr<SingleRun>> prepare(const RunSettings& settings);
  Status assemble(ScaleOut* scale_out);
  Result<LoopReport> run(LoopObserver& observer, const std::atomic<bool>* stop);

  const GenerationLoop& loop() const { return *loop_; }
  const GemmProblem& problem() const { return *problem_; }
  const std::vector<const KernelTemplate*>& templates() const { return templates_; }
  bool replay() const { return replay_; }

 private:
  explicit SingleRun(const RunSettings& settings) : AssembledRun(settings) {}

  bool replay_ = false;
  std::optional<GemmProblem> problem_;
  std::vector<const KernelTemplate*> templates_;
  // Destroyed before AssembledRun ends the ranks: the loop uses the runner over them.
  std::vector<std::unique_ptr<Proposer>> proposers_;
  std::unique_ptr<GenerationLoop> loop_;
};

}  // namespace tilesmith
