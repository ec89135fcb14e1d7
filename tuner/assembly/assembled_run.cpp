#include "tuner/assembly/assembled_run.h"

namespace tilesmith {

Status AssembledRun::start(bool replay) {
  TS_RETURN_IF_ERROR(start_run(settings_, replay, &start_));
  device_ = &start_.opened->primary().device();
  return Status::ok_status();
}

Status AssembledRun::connect_and_make_factory(ScaleOut* scale_out,
                                              const std::vector<const KernelTemplate*>& templates,
                                              const GemmProblem* problem) {
  scale_out_ = scale_out;
  TS_ASSIGN_OR_RETURN(runner_, connect_ranks(scale_out_, start_.opened->runner(), settings_.compile_threads));
  // The priors are carried on the GPU the templates launch on (on replay, the recordings').
  add_warm_start_seeds(start_.warm_start, start_.prior, templates, start_.opened->launch_device(), problem,
                       &start_.proposers);
  auto factory = ProposerFactory::create(start_.proposers);
  if (!factory.ok()) return Status::invalid(factory.status().message());
  factory_ = std::move(factory).value();
  proposer_ = factory_->describe();
  return Status::ok_status();
}

AssembledRun::~AssembledRun() {
  if (scale_out_) scale_out_->end();
}

}  // namespace tilesmith
