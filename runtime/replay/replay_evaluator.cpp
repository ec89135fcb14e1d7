#include "runtime/replay/replay_evaluator.h"

#include <random>

#include "base/hash.h"

namespace tilesmith::replay {

ReplayEvaluator::ReplayEvaluator(std::shared_ptr<const Recording> recording, std::uint64_t seed)
    : recording_(std::move(recording)), seed_(seed), device_(recording_->device()) {}

const KernelTunerRecord* ReplayEvaluator::lookup(const KernelTemplate& tmpl,
                                                 const GemmProblem& problem, const Config& config,
                                                 Evaluation* e) const {
  const Recording& rec = *recording_;
  e->outcome = Outcome::kInvalid;
  if (tmpl.name() != rec.name()) {
    e->message = "the replay backend holds the recording '" + rec.name() +
                         "', not template '" + tmpl.name() + "'";
    return nullptr;
  }
  const GemmProblem recorded = rec.problem();
  if (rec.knows_whole_problem() && problem.key() != recorded.key()) {
    e->message = "the recording measured " + recorded.describe() + ", not " + problem.describe();
    return nullptr;
  }
  if ((problem.m != 0 && problem.m != recorded.m) || (problem.n != 0 && problem.n != recorded.n)) {
    e->message = "the recording measured " + std::to_string(recorded.m) + "x" +
                         std::to_string(recorded.n) + " problems, not " +
                         std::to_string(problem.m) + "x" + std::to_string(problem.n);
    return nullptr;
  }
  auto point = rec.space().from_config(config);
  if (!point.ok()) {
    e->message = point.status().message();
    return nullptr;
  }
  const KernelTunerRecord* r = rec.find(*point);
  if (!r) {
    // Say why in the space's terms when it can (a broken constraint reads better than
    // "not recorded").
    Status why = rec.space().validate(config, rec.context());
    e->message = why.ok() ? "not measured in the recording " + rec.origin() : why.message();
    return nullptr;
  }
  e->compile_ms = r->compile_ms;
  e->outcome = r->outcome;
  if (r->outcome != Outcome::kOk) e->message = "recorded as " + r->failure;
  return r;
}

Evaluation ReplayEvaluator::prepare(const KernelTemplate& tmpl, const GemmProblem& problem,
                                    const Config& config) {
  Evaluation e;
  // Preparing only compiles: an outcome of running the kernel is not prepare's to report.
  if (lookup(tmpl, problem, config, &e) && e.outcome != Outcome::kCompileError && e.outcome != Outcome::kInvalid) {
    e.outcome = Outcome::kOk;
    e.message.clear();
  }
  return e;
}

Evaluation ReplayEvaluator::evaluate(const KernelTemplate& tmpl, const GemmProblem& problem,
                                     const Config& config) {
  Evaluation e;
  const KernelTunerRecord* r = lookup(tmpl, problem, config, &e);
  if (!r || !e.ok()) return e;
  // Seeded per (seed, config, repetition), so answers do not depend on call order.
  std::uint64_t nth = evaluations_[r]++;
  Hasher h;
  h.add_field(std::to_string(seed_))
      .add_field(config_to_json_text(config))
      .add_field(std::to_string(nth));
  std::mt19937_64 rng(h.low64());
  std::vector<double> sample;
  if (r->times_ms.empty()) {
    sample.push_back(r->time_ms);
  } else {
    std::uniform_int_distribution<size_t> pick(0, r->times_ms.size() - 1);
    sample.reserve(r->times_ms.size());
    for (size_t i = 0; i < r->times_ms.size(); ++i) sample.push_back(r->times_ms[pick(rng)]);
  }
  e.timing = summarize_timing(std::move(sample));
  const GemmProblem recorded = recording_->problem();
  GemmProblem sized = recorded;
  if (problem.k > 0) sized.k = problem.k;
  if (const double median = e.timing.median_ms; median > 0) {
    e.tflops = sized.flops() / (median * 1e-3) / 1e12;
    e.gbps = sized.min_bytes() / (median * 1e-3) / 1e9;
  }
  return e;
}

Result<Evaluation> ReplayEvaluator::vendor_baseline(const GemmProblem& problem) {
  const Recording& rec = *recording_;
  if (!rec.vendor_median_ms())
    return Status::unavailable("the recording " + rec.origin() + " holds no vendor time");
  if (rec.knows_whole_problem() && problem.key() != rec.problem().key())
    return Status::unavailable("the recording " + rec.origin() + " timed the vendor at " + rec.problem().describe() +
                               ", not " + problem.describe());
  // The recorded median, as recorded: a replay re-measures nothing.
  Evaluation e;
  e.outcome = Outcome::kOk;
  e.message = "recorded: " + rec.vendor_name();
  e.timing = summarize_timing({*rec.vendor_median_ms()});
  const GemmProblem p = rec.problem();
  e.tflops = p.flops() / (*rec.vendor_median_ms() * 1e-3) / 1e12;
  e.gbps = p.min_bytes() / (*rec.vendor_median_ms() * 1e-3) / 1e9;
  return e;
}

std::string ReplayEvaluator::vendor_name() const {
  if (recording_->vendor_median_ms()) return "recorded vendor time (" + recording_->vendor_name() + ")";
  return "none (replay of recorded measurements)";
}

}  // namespace tilesmith::replay
