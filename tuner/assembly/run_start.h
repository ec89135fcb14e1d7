#pragma once
// What every tuning run (one problem, a set) has before it measures anything, and the
// pieces both kinds build from their settings: the loop's options, the proposers'
// settings, the warm-start seeds. Errors are invalid_argument for settings that cannot
// run (the command line reports them as bad usage) unless said otherwise.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "registry/kernel_template.h"
#include "registry/problem.h"
#include "registry/template_library.h"
#include "tuner/assembly/open_evaluator.h"
#include "tuner/assembly/proposer_factory.h"
#include "tuner/assembly/run_settings.h"
#include "tuner/assembly/scale_out.h"
#include "tuner/loop/convergence_stop.h"
#include "tuner/loop/loop.h"
#include "tuner/search/prior.h"
#include "tuner/search/warm_start.h"

namespace tilesmith {

struct RunStart {
  std::optional<TemplateLibrary> library;  // not for replay: the recordings are the templates
  ProposerSettings proposers;
  std::vector<WarmStartFile> warm_start;
  std::vector<PriorSource> prior;  // --prior
  std::optional<ConvergenceStop> stop;  // --stop-when-converged
  std::optional<OpenedEvaluator> opened;
};

// --stop-when-converged's value, checked before anything starts.
Status read_convergence_stop(const RunSettings& s, std::optional<ConvergenceStop>* stop);

// The templates, the proposers' settings, --warm-start files and whether --results can be
// written, checked first (nothing slow has started), then the evaluator is opened. Nothing
// is written: a refused run leaves no folder behind. The evaluator's errors keep their
// code (unavailable: no GPU).
Status start_run(const RunSettings& s, bool replay, RunStart* start);

// The templates to tune: the recording's (replay, which also gives the problem when the
// settings do not), or those of the library that can serve the problem on this device.
// Templates left out are said in `left_out`, to be logged once the output is open.
Status choose_templates(const RunSettings& s, bool replay, OpenedEvaluator& opened,
                        const std::optional<TemplateLibrary>& library,
                        std::optional<GemmProblem>* problem,
                        std::vector<const KernelTemplate*>* templates,
                        std::vector<std::string>* left_out);

// Rank 0 of a run over several ranks: the runner over every rank's devices beside `local`'s
// (scale_out->connect); `local` itself without `scale_out`. Errors keep their code and say
// "the run over N MPI ranks cannot start: ...".
Result<CandidateRunner*> connect_ranks(ScaleOut* scale_out, CandidateRunner& local, int compile_threads);

// Each template's warm-start seeds into `ps` (the --warm-start winners, then the --prior picks,
// each config once), saying in the log what the files gave.
// A prior measured on another problem is carried to `problem` (tuner/search/prior_rescale.h);
// nullptr (a problem set's --prior, which serves every problem of the set): taken as it is.
void add_warm_start_seeds(const std::vector<WarmStartFile>& warm_start, const std::vector<PriorSource>& prior,
                          const std::vector<const KernelTemplate*>& templates, const DeviceFacts& device,
                          const GemmProblem* problem, ProposerSettings* ps);

// The loop's options for `problem`; `proposer` is the factory's description (recorded in
// the settings of history and journal).
LoopOptions loop_options(const RunSettings& s, const GemmProblem& problem,
                         const CandidateRunner& runner, const std::string& proposer,
                         const std::optional<ConvergenceStop>& stop);

// The seed, template folders and worker logging the evaluator is opened with.
EvaluatorContext evaluator_context(const RunSettings& s);

}  // namespace tilesmith
