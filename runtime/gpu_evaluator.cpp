#include "runtime/gpu_evaluator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>

#include "analysis/race.h"
#include "analysis/roofline.h"
#include "analysis/stats.h"
#include "base/files.h"
#include "runtime/candidate_compiler.h"
#include "runtime/gpu_error.h"
#include "runtime/problem_inputs_cache.h"

namespace tilesmith {
namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// TILESMITH_EVAL_PHASES=1: one line per evaluation on stderr with where its wall time
// went (a worker's stderr lines reach the run's log), to see what a candidate costs
// besides its samples. Read once; off by default.
bool phases_wanted() {
  static const bool on = [] {
    const char* v = std::getenv("TILESMITH_EVAL_PHASES");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

// Marks the end of each phase; report() prints them in order with the total.
class PhaseClock {
 public:
  void mark(const char* name) {
    const auto now = Clock::now();
    phases_.emplace_back(name, std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }
  void report(const std::string& what) const {
    if (!phases_wanted()) return;
    std::string line = "eval phases (" + what + "):";
    double total = 0;
    char buf[64];
    for (const auto& [name, ms] : phases_) {
      std::snprintf(buf, sizeof buf, " %s %.1f", name, ms);
      line += buf;
      total += ms;
    }
    std::snprintf(buf, sizeof buf, " | total %.1f ms", total);
    std::fprintf(stderr, "%s%s\n", line.c_str(), buf);
  }

 private:
  Clock::time_point last_ = Clock::now();
  std::vector<std::pair<const char*, double>> phases_;
};
}  // namespace

struct GpuEvaluator::State {
  GpuEvaluatorOptions options;
  std::unique_ptr<GpuDevice> device;
  std::shared_ptr<Compiler> compiler;
  double bandwidth = 0;
  std::string broken;
  // The device's telemetry (NVML), or why there is none: said with every evaluation, so
  // whoever records them can say it once.
  std::unique_ptr<TelemetrySource> telemetry;
  std::string telemetry_note;
  DeviceBuffer flush;

  // The current problem: inputs, reference and device buffers, built on first use. The
  // inputs and reference of earlier problems are kept (problem_inputs_cache.h): a
  // problem set comes back to them slice after slice.
  std::string problem_key;
  GemmProblem problem;
  std::unique_ptr<ProblemInputsCache> inputs_cache;
  std::shared_ptr<const ProblemInputs> inputs;
  DeviceBuffer a, b, c, c0, bias, workspace;
  DeviceBuffer scale_a, scale_b;  // a block-scaled FP8 problem's scale grids, for our kernels

  // Where C is copied for the check: page-locked when the device gives it (a pageable
  // copy of a 64 MB output took most of a check's 140-180 ms on an H200 host), else an
  // ordinary buffer. Kept across candidates; grown when a problem needs more.
  struct HostStaging {
    GpuDevice* device = nullptr;
    void* pinned = nullptr;
    std::size_t bytes = 0;
    std::vector<unsigned char> pageable;
    ~HostStaging() { release(); }
    void release() {
      if (pinned) device->free_host(pinned);
      pinned = nullptr;
      bytes = 0;
    }
    void* get(GpuDevice& dev, std::size_t want) {
      if (pinned && bytes >= want) return pinned;
      release();
      device = &dev;
      pinned = dev.alloc_host(want);
      if (pinned) {
        bytes = want;
        pageable = {};
        return pinned;
      }
      if (pageable.size() < want) pageable.resize(want);
      return pageable.data();
    }
  } staging;
  int check_threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));

  void ensure_problem(const GemmProblem& p) {
    if (problem_key == p.key()) return;
    problem_key.clear();
    a.reset(); b.reset(); c.reset(); c0.reset(); bias.reset(); workspace.reset();
    scale_a.reset(); scale_b.reset();
    problem = p;
    if (!inputs_cache) inputs_cache = std::make_unique<ProblemInputsCache>(options.seed);
    inputs = inputs_cache->get(p);
    const ProblemData& data = inputs->data;
    // Each operand in its element type's storage (registry/dtype.h).
    auto upload = [&](const std::vector<float>& host, DType type, DeviceBuffer& buf) {
      if (host.empty()) return;
      std::vector<unsigned char> bytes(host.size() * dtype_bytes(type));
      encode_elements(type, host.data(), host.size(), bytes.data());
      buf = DeviceBuffer(*device, bytes.size());
      device->copy_to_device(buf.get(), bytes.data(), bytes.size());
    };
    upload(data.a, p.a_type, a);
    upload(data.b, p.b_type, b);
    upload(data.c0, p.c_type, c0);
    upload(data.bias, p.c_type, bias);
    if (p.scaling == Scaling::kBlock) {  // fp32, laid out as registry/problem.h defines them
      upload(data.scale_a, DType::kF32, scale_a);
      upload(data.scale_b, DType::kF32, scale_b);
    }
    // Whole 32-bit words, so the poison fill covers an odd count of 16-bit elements.
    c = DeviceBuffer(*device, (c_bytes() + 3) / 4 * 4);
    problem_key = p.key();
  }

  // The problem's FP8 block-scale grids for the vendor library (none unless Scaling::kBlock).
  GpuDevice::VendorBlockScales block_scales() const {
    if (problem.scaling != Scaling::kBlock || !inputs) return {};
    return {&inputs->data.scale_a, &inputs->data.scale_b};
  }

  std::size_t c_bytes() const { return std::size_t(problem.m) * problem.n * dtype_bytes(problem.c_type); }

  // Zeroed before each candidate: kernels keep counters there (split-K) that they
  // reset themselves after every complete run, and another config may lay the
  // workspace out differently.
  void prepare_workspace(std::uint64_t bytes) {
    if (bytes == 0) return;
    if (workspace.bytes() < bytes) workspace = DeviceBuffer(*device, bytes);
    device->fill_u32(workspace.get(), 0, (bytes + 3) / 4);
  }

  // Output poisoned with NaN (of C's type), then C0 copied in when the problem reads C.
  void reset_output() {
    if (c0) {
      device->copy_on_device(c.get(), c0.get(), c_bytes());
      return;
    }
    device->fill_u32(c.get(), nan_fill_word(problem.c_type), (c_bytes() + 3) / 4);
  }

  // C as fp32 values, decoded from its element type.
  std::vector<float> read_output() {
    const std::size_t count = std::size_t(problem.m) * problem.n;
    std::vector<unsigned char> bytes(c_bytes());
    device->copy_to_host(bytes.data(), c.get(), bytes.size());
    std::vector<float> host(count);
    decode_elements(problem.c_type, bytes.data(), count, host.data());
    return host;
  }

  AccuracyStats check_output() {
    const std::size_t bytes = c_bytes();
    void* host = staging.get(*device, bytes);
    device->copy_to_host(host, c.get(), bytes);
    return compare_encoded_with_reference(inputs->reference, problem.c_type, host, std::size_t(problem.m) * problem.n,
                                          check_threads);
  }

  // The vendor's plain GEMM checked against the reference of a problem with an epilogue
  // the library cannot fuse: the epilogue is applied here, in double, to each output
  // (the reference's tolerance covers the one extra rounding this adds).
  AccuracyStats check_output_with_host_epilogue() {
    std::vector<float> host = read_output();
    const bool c_row = problem.c_layout == Layout::kRowMajor;
    for (std::int64_t m = 0; m < problem.m; ++m)
      for (std::int64_t n = 0; n < problem.n; ++n) {
        const std::size_t i = c_row ? std::size_t(m) * problem.n + n : std::size_t(n) * problem.m + m;
        host[i] = float(apply_epilogue(problem, inputs->data.bias, host[i], m, n));
      }
    return compare_with_reference(inputs->reference, host.data(), host.size());
  }

  // Warm-up by time, then samples with the L2 flushed before each, until the spread
  // settles or the caps are reached. With `telemetry` the device is read after every
  // batch of samples (the batch has just finished: the reading is the state it ran in)
  // and the energy of one launch measured after them; `note` says what is missing.
  TimingStats time_launches(const std::function<void()>& launch) { return time_launches(launch, options.timing); }
  TimingStats time_launches(const std::function<void()>& launch, const TimingOptions& t,
                            std::optional<TelemetrySummary>* telemetry_out = nullptr,
                            std::string* note = nullptr, double race_ms = 0) {
    TimingStats st;
    auto w0 = Clock::now();
    int warm = 0;
    do {
      launch();
      ++warm;
      if (warm % 4 == 0 || warm == 1) device->synchronize();
    } while (ms_since(w0) < t.warmup_ms);
    device->synchronize();
    TelemetrySource* source = telemetry_out ? telemetry.get() : nullptr;
    // Where the clock can be read, the warm-up goes on in slices until it stops moving
    // (a GPU still ramping up would slow the first samples down), for at most four more
    // warm-ups.
    if (source) {
      ClockSettle settle;
      const double slice_ms = std::max(5.0, t.warmup_ms / 4);
      while (!settle.observe(source->read().sm_clock_mhz) && ms_since(w0) < 5 * t.warmup_ms) {
        const auto s0 = Clock::now();
        int n = 0;
        do {
          launch();
          if (++n % 4 == 0) device->synchronize();
        } while (ms_since(s0) < slice_ms);
        device->synchronize();
      }
    }
    st.warmup_ms = ms_since(w0);

    std::vector<TelemetryReading> readings;
    std::vector<double> samples;
    constexpr int kBatch = 10;
    std::vector<std::unique_ptr<GpuEvent>> starts, ends;
    for (int i = 0; i < kBatch; ++i) {
      starts.push_back(device->create_event());
      ends.push_back(device->create_event());
    }
    const bool flush_l2 = t.flush_l2 && flush;
    bool raced = false;
    auto s0 = Clock::now();
    while (true) {
      for (int i = 0; i < kBatch; ++i) {
        if (flush_l2) device->fill_u32(flush.get(), std::uint32_t(samples.size() + i), flush.bytes() / 4);
        device->record(*starts[i]);
        launch();
        device->record(*ends[i]);
      }
      for (int i = 0; i < kBatch; ++i) samples.push_back(device->elapsed_ms(*starts[i], *ends[i]));
      if (source) readings.push_back(source->read());
      if (analysis::race_lost(samples, race_ms)) {
        raced = true;
        break;
      }
      const int n = int(samples.size());
      if (n < t.min_samples) continue;
      auto s = analysis::summarize(samples);
      if (s.cv <= t.target_cv || n >= t.max_samples || ms_since(s0) >= t.max_sampling_ms) break;
    }
    const double warmup_ms = st.warmup_ms;
    st = summarize_timing(std::move(samples));
    st.warmup_ms = warmup_ms;
    st.l2_flushed = flush_l2;
    if (raced) {
      // A clear loser: no back-to-back spans or energy window either.
      st.raced_above_ms = race_ms;
      if (telemetry_out && source) *telemetry_out = summarize_telemetry(readings);
      return st;
    }
    st.steady_ms = steady_time(launch, t, st.median_ms, *starts[0], *ends[0]);
    if (telemetry_out) {
      if (!source) {
        if (note) *note = telemetry_note;
      } else {
        TelemetrySummary summary = summarize_telemetry(readings);
        std::string why;
        summary.joules_per_launch = energy_per_launch(launch, t, st.median_ms, &why);
        if (note) *note = why;
        *telemetry_out = summary;
      }
    }
    return st;
  }

  // Three spans of launches back to back, each at least t.steady_ms long (from the
  // flushed median), timed by events around the span: the median per launch.
  std::optional<double> steady_time(const std::function<void()>& launch, const TimingOptions& t, double median_ms,
                                    GpuEvent& start, GpuEvent& end) {
    if (t.steady_ms <= 0 || !(median_ms > 0)) return std::nullopt;
    const int n = std::max(5, int(std::ceil(t.steady_ms / median_ms)));
    std::vector<double> per_launch;
    for (int span = 0; span < 3; ++span) {
      device->record(start);
      for (int i = 0; i < n; ++i) launch();
      device->record(end);
      per_launch.push_back(device->elapsed_ms(start, end) / n);
    }
    std::sort(per_launch.begin(), per_launch.end());
    return per_launch[1];
  }

  // Launches back to back (no flush: the steady state a GEMM in a loop runs in), in
  // synchronised chunks of about a millisecond, until the energy counter has stepped
  // over at least energy_ms (runtime/telemetry.h, EnergyWindow).
  std::optional<double> energy_per_launch(const std::function<void()>& launch,
                                          const TimingOptions& t, double median_ms,
                                          std::string* why) {
    if (t.energy_ms <= 0) return std::nullopt;
    std::optional<double> e0 = telemetry->energy_j(why);
    if (!e0) return std::nullopt;
    const int chunk = median_ms > 0 ? std::max(1, int(std::ceil(1.0 / median_ms))) : 1;
    EnergyWindow window(t.energy_ms, 4 * t.energy_ms + 100);
    const auto t0 = Clock::now();
    window.observe(0, *e0, 0);
    std::int64_t launches = 0;
    while (true) {
      for (int i = 0; i < chunk; ++i) launch();
      launches += chunk;
      device->synchronize();
      std::optional<double> e = telemetry->energy_j(why);
      if (!e) return std::nullopt;
      if (window.observe(launches, *e, ms_since(t0))) break;
    }
    if (!window.joules_per_launch()) *why = window.why_none();
    return window.joules_per_launch();
  }

  void fill_metrics(Evaluation& e) {
    const double sec = e.timing.median_ms * 1e-3;
    if (sec <= 0) return;
    analysis::Roofline roof{device->facts().peak_flops(problem.a_type), bandwidth};
    e.tflops = problem.flops() / sec / 1e12;
    e.gbps = problem.min_bytes() / sec / 1e9;
    e.roofline_bound_tflops = roof.attainable(problem.flops(), problem.min_bytes()) / 1e12;
    e.roofline_pct = analysis::percent_of_attainable(roof, problem.flops(), problem.min_bytes(), sec);
  }

  void mark_broken(const GpuError& err) {
    if (err.sticky()) broken = err.what();
  }
};

GpuEvaluator::GpuEvaluator(std::unique_ptr<State> state) : s_(std::move(state)) {}
GpuEvaluator::~GpuEvaluator() = default;

Result<std::unique_ptr<GpuEvaluator>> GpuEvaluator::open(Backend& backend, int ordinal, GpuEvaluatorOptions options) {
  auto s = std::make_unique<State>();
  s->options = std::move(options);
  TS_ASSIGN_OR_RETURN(s->device, backend.open_device(ordinal));
  TS_ASSIGN_OR_RETURN(std::shared_ptr<Compiler> rtc, backend.compiler());
  std::filesystem::path dir = s->options.cache_dir.empty() ? default_cache_dir() / "kernels" : s->options.cache_dir;
  s->compiler = std::make_shared<CompileCache>(rtc, dir, s->options.cache_max_bytes);
  // A device without telemetry is measured as before; the reason travels with each
  // evaluation (Evaluation::telemetry_note).
  auto telemetry = s->device->open_telemetry();
  if (telemetry.ok())
    s->telemetry = std::move(telemetry).value();
  else
    s->telemetry_note = "no telemetry: " + telemetry.status().message();
  try {
    const DeviceFacts& f = s->device->facts();
    // Twice the L2, so every sample starts with the cache holding none of the inputs.
    std::size_t flush_bytes = std::max<std::size_t>(std::size_t(2 * std::max<std::int64_t>(f.l2_bytes, 0)), 8u << 20);
    s->flush = DeviceBuffer(*s->device, flush_bytes);
    // Device-to-device bandwidth, bytes read plus written, median of a few copies.
    std::size_t bytes = std::min<std::size_t>(std::size_t(1) << 30, std::size_t(f.global_memory_bytes / 8));
    bytes = std::max<std::size_t>(bytes, 64u << 20);
    DeviceBuffer src(*s->device, bytes), dst(*s->device, bytes);
    s->device->fill_u32(src.get(), 0x3f800000u, bytes / 4);
    auto e0 = s->device->create_event(), e1 = s->device->create_event();
    std::vector<double> times;
    for (int i = 0; i < 7; ++i) {
      s->device->record(*e0);
      s->device->copy_on_device(dst.get(), src.get(), bytes);
      s->device->record(*e1);
      times.push_back(s->device->elapsed_ms(*e0, *e1));
    }
    times.erase(times.begin());  // the first copy pays for first-touch costs
    s->bandwidth = 2.0 * double(bytes) / (analysis::summarize(times).median * 1e-3);
  } catch (const GpuError& e) {
    return Status::unavailable(std::string("setting up the device: ") + e.what());
  }
  return std::unique_ptr<GpuEvaluator>(new GpuEvaluator(std::move(s)));
}

const DeviceFacts& GpuEvaluator::device() const { return s_->device->facts(); }
double GpuEvaluator::measured_bandwidth() const { return s_->bandwidth; }
double GpuEvaluator::peak_flops() const { return s_->device->facts().fp32_peak_flops(); }  // fp32; see DeviceFacts::peak_flops
const std::string& GpuEvaluator::broken_reason() const { return s_->broken; }
Compiler& GpuEvaluator::compiler() { return *s_->compiler; }
std::string GpuEvaluator::vendor_name() const { return s_->device->vendor_name(); }

Evaluation GpuEvaluator::prepare(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) {
  return compile_candidate(*s_->compiler, tmpl, problem, config, device()).evaluation;
}

Evaluation GpuEvaluator::evaluate(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config) {
  return evaluate_racing(tmpl, problem, config, 0);
}

Evaluation GpuEvaluator::evaluate_racing(const KernelTemplate& tmpl, const GemmProblem& problem, const Config& config,
                                         double race_ms) {
  State& s = *s_;
  PhaseClock phases;
  CompiledCandidate cc = compile_candidate(*s.compiler, tmpl, problem, config, device());
  phases.mark("compile");
  Evaluation e = std::move(cc.evaluation);
  if (e.outcome != Outcome::kOk) return e;
  if (!s.broken.empty()) {
    e.outcome = Outcome::kLaunchError;
    e.message = "not run: the GPU context was lost earlier (" + s.broken + "); restart the process";
    return e;
  }
  const RenderedKernel& rk = cc.rendered;
  try {
    s.ensure_problem(problem);
    s.prepare_workspace(rk.workspace_bytes);
    phases.mark("problem");
    std::unique_ptr<GpuModule> module = s.device->load_module(cc.compiled.binary);
    GpuFunction& fn = module->function(rk.entry);
    FunctionAttributes attrs = fn.attributes();
    e.resources.registers = attrs.registers >= 0 ? attrs.registers : e.resources.registers;
    if (attrs.static_shared_bytes >= 0) e.resources.static_shared_bytes = attrs.static_shared_bytes;
    if (attrs.local_bytes >= 0) e.resources.local_bytes = attrs.local_bytes;
    e.resources.max_threads_per_block = attrs.max_threads_per_block;
    if (attrs.max_threads_per_block >= 0 && rk.threads() > attrs.max_threads_per_block) {
      e.outcome = Outcome::kResourceError;
      e.message = "the kernel uses " + std::to_string(attrs.registers) + " registers per thread, so at most " +
                  std::to_string(attrs.max_threads_per_block) + " threads fit in a block; the config launches " +
                  std::to_string(rk.threads());
      return e;
    }
    if (auto why = allow_dynamic_shared(fn, std::int64_t(rk.dynamic_shared_bytes), device().shared_per_block_optin)) {
      e.outcome = Outcome::kResourceError;
      e.message = *why;
      return e;
    }

    // The kernel ABI (registry/kernel_template.h).
    DevicePtr pa = s.a.get(), pb = s.b.get(), pc = s.c.get();
    DevicePtr pbias = s.bias ? s.bias.get() : 0, pws = s.workspace ? s.workspace.get() : 0;
    int M = int(problem.m), N = int(problem.n), K = int(problem.k);
    int lda = int(problem.lda()), ldb = int(problem.ldb()), ldc = int(problem.ldc());
    float alpha = float(problem.alpha * per_tensor_alpha_scale(problem)), beta = float(problem.beta),
          slope = float(problem.epilogue_slope);
    std::vector<void*> args = {&pa, &pb, &pc, &pbias, &pws, &M, &N, &K, &lda, &ldb, &ldc, &alpha, &beta, &slope};
    // Tensor maps follow, by value (registry/tensor_map.h).
    struct alignas(64) MapBytes {
      unsigned char bytes[GpuDevice::kTensorMapBytes];
    };
    std::vector<MapBytes> maps(rk.tensor_maps.size());
    for (std::size_t i = 0; i < maps.size(); ++i) {
      const TensorMapSpec& spec = rk.tensor_maps[i];
      s.device->encode_tensor_map(spec, spec.operand == 'A' ? pa : spec.operand == 'B' ? pb : pc, maps[i].bytes);
      args.push_back(maps[i].bytes);
    }
    // Then a block-scaled problem's scale grids (registry/kernel_template.h).
    DevicePtr psa = s.scale_a ? s.scale_a.get() : 0, psb = s.scale_b ? s.scale_b.get() : 0;
    if (problem.scaling == Scaling::kBlock) {
      args.push_back(&psa);
      args.push_back(&psb);
    }
    auto launch = [&] { s.device->launch(fn, rk.grid, rk.block, rk.dynamic_shared_bytes, args.data()); };

    phases.mark("load");
    s.reset_output();
    launch();
    s.device->synchronize();
    phases.mark("first-run");
    e.accuracy = s.check_output();
    phases.mark("check");
    if (!accuracy_passes(e.accuracy)) {
      e.outcome = Outcome::kWrongResult;
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "%lld of %lld elements over tolerance, %lld not finite (unwritten outputs stay NaN); max abs "
                    "error %.3g, relative error norm %.3g (limit %.3g), worst error/tolerance %.3g",
                    (long long)e.accuracy.over_tolerance, (long long)(problem.m * problem.n),
                    (long long)e.accuracy.non_finite, e.accuracy.max_abs_error, e.accuracy.rel_error_norm,
                    e.accuracy.norm_tolerance, e.accuracy.worst_tolerance_ratio);
      e.message = buf;
      return e;
    }
    // With beta != 0 each run reads the C the previous one wrote; the work per run is
    // the same, so the timing stands.
    e.timing = s.time_launches(launch, s.options.timing, &e.telemetry, &e.telemetry_note, race_ms);
    phases.mark("timing");
    s.fill_metrics(e);
    e.outcome = Outcome::kOk;
    if (e.timing.raced_above_ms) {
      char buf[240];
      std::snprintf(buf, sizeof buf,
                    "raced: sampling stopped after %d samples, their 20th percentile %.4g ms above the bound %.4g ms "
                    "(clearly slower than the best so far)",
                    e.timing.samples, e.timing.p20_ms, *e.timing.raced_above_ms);
      e.message = buf;
    }
    char what[160];
    std::snprintf(what, sizeof what, "%s, %d samples of %.4g ms, warm-up %.1f ms", tmpl.name().c_str(),
                  e.timing.samples, e.timing.median_ms, e.timing.warmup_ms);
    phases.report(what);
  } catch (const GpuError& err) {
    s.mark_broken(err);
    e.outcome = err.resource() ? Outcome::kResourceError : Outcome::kLaunchError;
    e.message = err.what();
  }
  return e;
}

Result<Evaluation> GpuEvaluator::vendor_baseline(const GemmProblem& problem) {
  State& s = *s_;
  if (!s.broken.empty()) return Status::unavailable("the GPU context was lost earlier: " + s.broken);
  Evaluation e;
  try {
    s.ensure_problem(problem);
    s.reset_output();
    // Fused where the library can (fused is compared with fused); otherwise the plain
    // GEMM is timed, and the message says so.
    GemmProblem run = problem;
    DevicePtr bias = s.bias ? s.bias.get() : 0;
    Status fused = s.device->vendor_gemm(run, s.a.get(), s.b.get(), s.c.get(), bias, s.block_scales());
    if (fused.code() == StatusCode::kInvalidArgument && problem.epilogue != Epilogue::kNone) {
      run.epilogue = Epilogue::kNone;
      bias = 0;
      s.reset_output();
      TS_RETURN_IF_ERROR(s.device->vendor_gemm(run, s.a.get(), s.b.get(), s.c.get(), 0, s.block_scales()));
      e.message = "plain GEMM timed, " + fused.message() + " (the epilogue was applied on the host for the check)";
    } else {
      TS_RETURN_IF_ERROR(fused);
    }
    s.device->synchronize();
    e.accuracy = run.epilogue == problem.epilogue ? s.check_output() : s.check_output_with_host_epilogue();
    if (!accuracy_passes(e.accuracy)) {
      e.outcome = Outcome::kWrongResult;
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "the vendor library's result does not match the CPU reference: %lld of %lld elements over "
                    "tolerance, %lld not finite, max abs error %.3g, relative error norm %.3g (limit %.3g), worst "
                    "error/tolerance %.3g%s",
                    (long long)e.accuracy.over_tolerance, (long long)(problem.m * problem.n),
                    (long long)e.accuracy.non_finite, e.accuracy.max_abs_error, e.accuracy.rel_error_norm,
                    e.accuracy.norm_tolerance, e.accuracy.worst_tolerance_ratio,
                    e.message.empty() ? "" : ("; " + e.message).c_str());
      e.message = buf;
      return e;
    }
    Status st;
    e.timing = s.time_launches(
        [&] {
          Status r = s.device->vendor_gemm(run, s.a.get(), s.b.get(), s.c.get(), bias, s.block_scales());
          if (!r.ok()) st = r;
        },
        s.options.timing, &e.telemetry, &e.telemetry_note);
    TS_RETURN_IF_ERROR(st);
    s.fill_metrics(e);
    e.outcome = Outcome::kOk;
  } catch (const GpuError& err) {
    s.mark_broken(err);
    return Status::internal(std::string("vendor baseline: ") + err.what());
  }
  return e;
}

Result<ReadFloor> GpuEvaluator::read_floor(const GemmProblem& problem) {
  State& s = *s_;
  if (!s.broken.empty()) return Status::unavailable("the GPU context was lost earlier: " + s.broken);
  try {
    s.ensure_problem(problem);
    // The buffers the kernels read, and the sum of their words as uploaded.
    ReadTarget target;
    target.bytes = read_floor_bytes(problem);
    target.ptr[0] = s.a.get();
    target.ptr[1] = s.b.get();
    target.ptr[2] = target.bytes.c ? s.c0.get() : 0;
    const ProblemData& data = s.inputs->data;
    std::uint32_t sum = 0;
    auto add = [&](const std::vector<float>& host, DType type, std::uint64_t bytes) {
      if (bytes == 0) return;
      std::vector<unsigned char> enc(host.size() * dtype_bytes(type));
      encode_elements(type, host.data(), host.size(), enc.data());
      sum += read_floor_checksum(enc.data(), enc.size());
    };
    add(data.a, problem.a_type, target.bytes.a);
    add(data.b, problem.b_type, target.bytes.b);
    add(data.c0, problem.c_type, target.bytes.c);
    target.checksum = sum;
    return measure_read_floor(*s.device, *s.compiler, target, s.options.timing,
                              [&](const std::function<void()>& launch, const TimingOptions& t) {
                                return s.time_launches(launch, t);
                              });
  } catch (const GpuError& err) {
    s.mark_broken(err);
    return Status::internal(std::string("read floor: ") + err.what());
  }
}

}  // namespace tilesmith
