#include "tuner/assembly/open_evaluator.h"

#include <algorithm>
#include <charconv>
#include <thread>

#include "runtime/replay/recorded_template.h"
#include "runtime/replay/replay_evaluator.h"
#include "runtime/replay/replay_set.h"
#include "runtime/worker/worker_evaluator.h"

namespace tilesmith {

OpenedEvaluator::~OpenedEvaluator() {
  // The runners use the evaluators; the evaluators hold device state of the backend.
  inline_runner.reset();
  workers.reset();
  retimer.reset();
  evaluator.reset();
  backend.reset();
}

CandidateRunner& OpenedEvaluator::runner() {
  if (workers) return *workers;
  return *inline_runner;
}

Evaluator& OpenedEvaluator::primary() { return runner().evaluator(); }

double OpenedEvaluator::measured_bandwidth() const {
  if (workers) return workers->measured_bandwidth();
  return gpu ? gpu->measured_bandwidth() : 0;
}

DeviceFacts OpenedEvaluator::launch_device() {
  // Every recording of a replay comes from one GPU (replay::load_recordings checks the names).
  if (!recordings.empty())
    if (auto recorded = recordings.front()->launch_device(); recorded) return *recorded;
  return primary().device();
}

int default_compile_threads() {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::clamp(hw / 2, 1u, 8u));
}

int compile_threads_for(int requested, std::size_t devices) {
  if (requested >= 0) return requested;
  return static_cast<int>(std::min<std::size_t>(32, static_cast<std::size_t>(default_compile_threads()) *
                                                        std::max<std::size_t>(1, devices)));
}

std::size_t host_compile_slots(int requested, CandidateRunner& runner) {
  return static_cast<std::size_t>(std::max(0, compile_threads_for(requested, runner.devices().size())));
}

Result<std::vector<int>> parse_device_list(const std::string& text) {
  std::vector<int> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int v = -1;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || v < 0)
      return Status::invalid("--devices '" + text + "': '" + item +
                             "' is not a GPU ordinal (give ordinals separated by commas, e.g. 0,1, or 'all')");
    out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

namespace {

worker::WorkerEvaluatorOptions worker_options(const EvaluatorSettings& f, const EvaluatorContext& ctx,
                                              const std::string& backend, int ordinal, std::size_t devices) {
  worker::WorkerEvaluatorOptions o;
  // prepare() spreads the run's compile threads over the devices: each device's worker
  // gets helpers for its share, so no compile thread waits for a helper.
  const int threads = compile_threads_for(ctx.compile_threads, devices);
  o.compile_processes = std::max(1, (threads + static_cast<int>(devices) - 1) / static_cast<int>(devices));
  o.worker.executable = f.worker_exe;
  o.worker.backend = backend;
  o.worker.device = ordinal;
  o.worker.template_dirs = ctx.template_dirs;
  o.worker.gpu.cache_dir = f.cache_dir;
  o.worker.gpu.seed = ctx.seed;
  o.worker.gpu.timing.energy_ms = ctx.energy_ms;
  o.worker.gpu.timing.steady_ms = ctx.steady_ms;
  o.deadlines.run_s = f.run_deadline_s;
  o.deadlines.compile_s = f.compile_deadline_s;
  o.on_worker_log = ctx.on_worker_log;
  return o;
}

// The in-process backend: the named one, or with "auto" the first (cuda, then hip) that
// finds a GPU. unavailable with every backend's reason when none does.
Result<std::unique_ptr<Backend>> choose_backend(const std::string& name) {
  if (name != "auto") {
    TS_ASSIGN_OR_RETURN(auto b, make_backend(name));
    auto devs = b->devices();
    if (!devs.ok()) return Status::unavailable(name + ": " + devs.status().message());
    return b;
  }
  std::string reasons;
  for (const char* n : {"cuda", "hip"}) {
    auto b = make_backend(n);
    auto devs = (*b)->devices();
    if (devs.ok()) return std::move(b).value();
    reasons += std::string(reasons.empty() ? "" : "; ") + n + ": " + devs.status().message();
  }
  return Status::unavailable("no GPU found (" + reasons + ")");
}

// The backend whose worker finds a GPU: the named one, or for auto the first of cuda and
// hip. Asked of short-lived workers, so this process loads no GPU runtime.
Result<std::string> resolve_backend(const EvaluatorSettings& f) {
  if (f.backend != "auto") return f.backend;
  std::string reasons;
  for (const char* name : {"cuda", "hip"}) {
    worker::WorkerSpec spec;
    spec.executable = f.worker_exe;
    spec.backend = name;
    auto devices = worker::list_devices(spec);
    if (devices.ok() && !devices->empty()) return std::string(name);
    reasons += std::string(reasons.empty() ? "" : "; ") + name + ": " +
               (devices.ok() ? std::string("no devices") : devices.status().message());
  }
  return Status::unavailable("no GPU found (" + reasons + ")");
}

Result<OpenedEvaluator> open_workers(std::vector<worker::WorkerEvaluatorOptions> specs, OpenedEvaluator out) {
  auto runner = WorkerRunner::start(std::move(specs));
  if (!runner.ok()) {
    // A missing worker executable is an installation problem, like a missing driver.
    if (runner.status().code() == StatusCode::kNotFound) return Status::unavailable(runner.status().message());
    return runner.status();
  }
  out.workers = std::move(runner).value();
  const auto labels = out.workers->devices();
  out.description = std::to_string(labels.size()) + " worker process" + (labels.size() == 1 ? "" : "es") + " (";
  for (std::size_t i = 0; i < labels.size(); ++i) out.description += (i ? ", " : "") + labels[i];
  out.description += ")";
  return out;
}

}  // namespace

Status check_evaluator_settings(const EvaluatorSettings& f) {
  if (f.device && !f.devices.empty()) return Status::invalid("give --device N or --devices LIST, not both");
  const bool deadlines = f.run_deadline_s > 0 || f.compile_deadline_s > 0;
  if (f.in_process && f.replay_workers > 0)
    return Status::invalid("--in-process and --replay-workers contradict each other");
  if (f.in_process && (!f.worker_exe.empty() || deadlines))
    return Status::invalid("--worker-exe, --run-deadline and --compile-deadline are for worker processes; "
                           "--in-process uses none");
  if (!f.worker_exe.empty()) {
    auto exe = worker::find_worker_executable(f.worker_exe);
    if (!exe.ok()) return Status::invalid("--worker-exe: " + exe.status().message());
  }
  if (f.backend == "replay") {
    if (f.device || !f.devices.empty())
      return Status::invalid("--device and --devices select GPUs; with --backend replay, --replay-workers N "
                             "answers in worker processes");
    if (f.replay_files.empty())
      return Status::invalid("--backend replay needs --replay-file FILE (a Kernel Tuner cache, e.g. gemm_RTX_3090.json.gz)");
    if (f.replay_workers == 0 && (!f.worker_exe.empty() || deadlines))
      return Status::invalid("--worker-exe, --run-deadline and --compile-deadline go with worker processes: "
                             "add --replay-workers N");
    return Status::ok_status();
  }
  if (!f.replay_files.empty() || !f.replay_space.empty())
    return Status::invalid("--replay-file and --replay-space go with --backend replay");
  if (f.replay_workers > 0) return Status::invalid("--replay-workers goes with --backend replay");
  const bool all = f.devices == "all";
  std::size_t devices = 1;
  if (!f.devices.empty() && !all) {
    TS_ASSIGN_OR_RETURN(auto ordinals, parse_device_list(f.devices));
    devices = ordinals.size();
  }
  if (f.in_process && (all || devices != 1)) return Status::invalid("--in-process measures on one GPU: give --device N");
  return Status::ok_status();
}

Result<OpenedEvaluator> open_evaluator(const EvaluatorSettings& f, const EvaluatorContext& ctx) {
  OpenedEvaluator out;
  TS_RETURN_IF_ERROR(check_evaluator_settings(f));

  if (f.backend == "replay") {
    replay::RecordingOptions ro;
    ro.space_file = f.replay_space;
    auto files = replay::expand_recording_paths({f.replay_files.begin(), f.replay_files.end()});
    if (!files.ok()) return files.status().with_context("--replay-file");
    auto recs = replay::load_recordings(*files, ro);
    if (!recs.ok()) return recs.status().with_context("--replay-file");
    out.recordings = *recs;
    for (const auto& r : out.recordings) out.recorded_templates.push_back(replay::recorded_template(*r));
    out.recording = out.recordings.front();
    out.recorded_template = out.recorded_templates.front();
    // A fixed, different stream: re-timing is an independent re-measurement. It stays in
    // this process with workers too, so a run re-times the same either way.
    out.retimer = std::make_unique<replay::ReplaySetEvaluator>(out.recordings, ctx.seed ^ 0x9E3779B97F4A7C15ull);
    if (f.replay_workers == 0) {
      out.evaluator = std::make_unique<replay::ReplaySetEvaluator>(out.recordings, ctx.seed);
      out.inline_runner = std::make_unique<InlineRunner>(*out.evaluator);
      out.description = "in this process";
      return out;
    }
    std::vector<worker::WorkerEvaluatorOptions> specs;
    for (int i = 0; i < f.replay_workers; ++i) {
      // The worker's "device" is its index: the history's device column tells them apart.
      auto o = worker_options(f, ctx, "replay", i, static_cast<std::size_t>(f.replay_workers));
      o.worker.recordings = *files;
      o.worker.space_file = f.replay_space;
      specs.push_back(std::move(o));
    }
    return open_workers(std::move(specs), std::move(out));
  }

  const bool all = f.devices == "all";
  std::vector<int> ordinals{f.device.value_or(0)};
  if (!f.devices.empty() && !all) {
    TS_ASSIGN_OR_RETURN(ordinals, parse_device_list(f.devices));
  }

  if (f.in_process) {
    auto backend = choose_backend(f.backend);
    if (!backend.ok()) return backend.status();
    out.backend = std::move(backend).value();
    GpuEvaluatorOptions o;
    o.cache_dir = f.cache_dir;
    o.seed = ctx.seed;
    o.timing.energy_ms = ctx.energy_ms;
    o.timing.steady_ms = ctx.steady_ms;
    auto ev = GpuEvaluator::open(*out.backend, ordinals.front(), o);
    if (!ev.ok()) return Status::unavailable(ev.status().message());
    out.gpu = ev->get();
    out.evaluator = std::move(ev).value();
    out.inline_runner = std::make_unique<InlineRunner>(*out.evaluator);
    out.description = "in this process (--in-process)";
    return out;
  }

  TS_ASSIGN_OR_RETURN(std::string backend, resolve_backend(f));
  if (all) {
    worker::WorkerSpec spec;
    spec.executable = f.worker_exe;
    spec.backend = backend;
    auto devices = worker::list_devices(spec);
    if (!devices.ok()) return Status::unavailable(devices.status().message());
    if (devices->empty()) return Status::unavailable("--devices all: " + backend + " found no GPU");
    ordinals.clear();
    for (const auto& d : *devices) ordinals.push_back(d.ordinal);
  }
  std::vector<worker::WorkerEvaluatorOptions> specs;
  for (int ordinal : ordinals) specs.push_back(worker_options(f, ctx, backend, ordinal, ordinals.size()));
  return open_workers(std::move(specs), std::move(out));
}

}  // namespace tilesmith
