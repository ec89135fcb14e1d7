#pragma once
// What a run of one problem (single_run.h) and of a set (set_run.h) share: the settings,
// what run_start opened, the templates left out, and — once the command has opened its
// output — the other ranks waited for and the proposer factory built.
//
// Each run is used in three steps, the command's console opened between the first two:
//  - Run::prepare(settings), a static: everything checked and opened that can be before
//    anything is written, so a refused run leaves no folder behind. invalid_argument for
//    settings that cannot run (bad usage); the evaluator's errors keep their code
//    (unavailable: no GPU).
//  - assemble(scale_out): the other ranks, the proposers, the loop; errors as
//    connect_and_make_factory's, and the loop's own when it opens the results folder.
//  - run(observer, stop): until a budget, the search's end or `stop` ends it.

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "tuner/assembly/run_start.h"
#include "tuner/assembly/scale_out.h"

namespace tilesmith {

class AssembledRun {
 public:
  // Templates left out with the reason ("leaving out NAME: ..."), to log.
  const std::vector<std::string>& left_out() const { return left_out_; }
  // The factory's description ("evolve", "llm:MODEL ... with evolve as fallback").
  const std::string& proposer() const { return proposer_; }
  const DeviceFacts& device() const { return *device_; }
  const OpenedEvaluator& opened() const { return *start_.opened; }

  // Tells the other ranks the run is over before the local runner they measure beside
  // goes away (a derived run's loop and proposers are gone by then).
  virtual ~AssembledRun();

 protected:
  explicit AssembledRun(const RunSettings& settings) : settings_(settings) {}

  // run_start's checks and the evaluator (start_run).
  Status start(bool replay);
  // The other ranks (when `scale_out` is given; "the run over N MPI ranks cannot start:
  // ..."), the --warm-start seeds of `templates`, the proposer factory (invalid_argument).
  // `problem`: the run's, which a --prior measured on another problem is carried to; nullptr for a set.
  Status connect_and_make_factory(ScaleOut* scale_out, const std::vector<const KernelTemplate*>& templates,
                                  const GemmProblem* problem = nullptr);

  RunSettings settings_;
  RunStart start_;
  const DeviceFacts* device_ = nullptr;  // the evaluator's
  std::vector<std::string> left_out_;
  ScaleOut* scale_out_ = nullptr;
  CandidateRunner* runner_ = nullptr;  // the local one, or over every rank's devices
  std::string proposer_;
  std::unique_ptr<ProposerFactory> factory_;
};

}  // namespace tilesmith
