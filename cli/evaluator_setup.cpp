#include "cli/evaluator_setup.h"

#include "cli/cli_common.h"
#include "runtime/replay/recorded_template.h"
#include "runtime/replay/replay_evaluator.h"

namespace tilesmith::cli {

OpenedEvaluator::~OpenedEvaluator() {
  // The evaluators hold device state of the backend: they go first.
  retimer.reset();
  evaluator.reset();
  backend.reset();
}

void add_evaluator_flags(CLI::App& app, EvaluatorFlags& f) {
  app.add_option("--backend", f.backend,
                 "where candidates are measured: cuda, hip, replay (recorded measurements, no GPU), or auto (the "
                 "first GPU backend that finds a GPU)")
      ->check(CLI::IsMember({"auto", "cuda", "hip", "replay"}))
      ->capture_default_str();
  app.add_option("--device", f.device, "GPU ordinal within the backend")->capture_default_str();
  app.add_option("--cache-dir", f.cache_dir,
                 "compiled-kernel cache (default: $XDG_CACHE_HOME/tilesmith/kernels or ~/.cache/tilesmith/kernels)");
  app.add_option("--replay-file", f.replay_file,
                 "with --backend replay: a Kernel Tuner cache file (.json or .json.gz) to answer from");
  app.add_option("--replay-space", f.replay_space,
                 "with --backend replay: the space file with the recording's constraints (default: found by kernel "
                 "name in data/spaces or $TILESMITH_SPACES_DIR)");
}

Result<OpenedEvaluator> open_evaluator(const EvaluatorFlags& f, std::uint64_t seed) {
  OpenedEvaluator out;
  if (f.backend == "replay") {
    if (f.replay_file.empty())
      return Status::invalid("--backend replay needs --replay-file FILE (a Kernel Tuner cache, e.g. gemm_RTX_3090.json.gz)");
    replay::RecordingOptions ro;
    ro.space_file = f.replay_space;
    auto rec = replay::Recording::load(f.replay_file, ro);
    if (!rec.ok()) return rec.status().with_context("--replay-file");
    out.recording = *rec;
    out.evaluator = std::make_unique<replay::ReplayEvaluator>(out.recording, seed);
    // A fixed, different stream: re-timing is an independent re-measurement.
    out.retimer = std::make_unique<replay::ReplayEvaluator>(out.recording, seed ^ 0x9E3779B97F4A7C15ull);
    out.recorded_template = replay::recorded_template(*out.recording);
    return out;
  }
  if (!f.replay_file.empty() || !f.replay_space.empty())
    return Status::invalid("--replay-file and --replay-space go with --backend replay");
  auto backend = choose_backend(f.backend);
  if (!backend.ok()) return backend.status();
  out.backend = std::move(backend).value();
  GpuEvaluatorOptions o;
  o.cache_dir = f.cache_dir;
  o.seed = seed;
  auto ev = GpuEvaluator::open(*out.backend, f.device, o);
  if (!ev.ok()) return Status::unavailable(ev.status().message());
  out.gpu = ev->get();
  out.evaluator = std::move(ev).value();
  return out;
}

}  // namespace tilesmith::cli
