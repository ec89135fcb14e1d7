#include "runtime/worker/worker_hosts.h"

#include "base/files.h"
#include "registry/template_library.h"
#include "runtime/backend.h"
#include "runtime/candidate_compiler.h"
#include "runtime/compile_cache.h"
#include "runtime/replay/recorded_template.h"
#include "runtime/replay/replay_evaluator.h"
#include "runtime/replay/replay_set.h"

namespace tilesmith::worker {
namespace {

class GpuHost final : public WorkerHost {
 public:
  GpuHost(std::string backend, int ordinal, GpuEvaluatorOptions options)
      : backend_name_(std::move(backend)), ordinal_(ordinal), options_(std::move(options)) {}
  ~GpuHost() override {
    evaluator_.reset();  // before the backend whose libraries it uses
    backend_.reset();
  }

  Status open(const std::optional<DeviceFacts>&) override {
    TS_ASSIGN_OR_RETURN(backend_, make_backend(backend_name_));
    TS_ASSIGN_OR_RETURN(evaluator_, GpuEvaluator::open(*backend_, ordinal_, options_));
    return {};
  }
  Evaluator& evaluator() override { return *evaluator_; }
  bool compile_only() const override { return false; }
  std::string broken_reason() const override {
    return evaluator_ ? evaluator_->broken_reason() : std::string();
  }
  Result<HealthCheckCandidate> health_check() override { return gpu_health_check_candidate(); }
  double measured_bandwidth() const override { return evaluator_ ? evaluator_->measured_bandwidth() : 0; }

 private:
  std::string backend_name_;
  int ordinal_;
  GpuEvaluatorOptions options_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<GpuEvaluator> evaluator_;
};

// prepare() = render + compile (through the cache) for the orchestrator's device.
class CompileOnlyEvaluator final : public Evaluator {
 public:
  CompileOnlyEvaluator(std::shared_ptr<Compiler> compiler, DeviceFacts device)
      : compiler_(std::move(compiler)), device_(std::move(device)) {}
  const DeviceFacts& device() const override { return device_; }
  Evaluation prepare(const KernelTemplate& tmpl, const GemmProblem& problem,
                     const Config& config) override {
    return compile_candidate(*compiler_, tmpl, problem, config, device_).evaluation;
  }
  Evaluation evaluate(const KernelTemplate&, const GemmProblem&, const Config&) override {
    Evaluation e;
    e.outcome = Outcome::kInvalid;
    e.message = "a compile-only worker does not evaluate";
    return e;
  }
  Result<Evaluation> vendor_baseline(const GemmProblem&) override {
    return Status::unavailable("a compile-only worker has no device");
  }
  std::string vendor_name() const override { return "none (compile-only worker)"; }

 private:
  std::shared_ptr<Compiler> compiler_;
  DeviceFacts device_;
};

class CompileHost final : public WorkerHost {
 public:
  CompileHost(std::string backend, std::filesystem::path cache_dir, std::uint64_t cache_max_bytes)
      : backend_name_(std::move(backend)),
        cache_dir_(std::move(cache_dir)),
        cache_max_bytes_(cache_max_bytes) {}

  Status open(const std::optional<DeviceFacts>& device) override {
    if (!device)
      return Status::invalid("a compile-only worker needs the device to compile for at hello");
    TS_ASSIGN_OR_RETURN(backend_, make_backend(backend_name_));
    TS_ASSIGN_OR_RETURN(std::shared_ptr<Compiler> rtc, backend_->compiler());
    std::filesystem::path dir = cache_dir_.empty() ? default_cache_dir() / "kernels" : cache_dir_;
    auto cache = std::make_shared<CompileCache>(std::move(rtc), dir, cache_max_bytes_);
    evaluator_ = std::make_unique<CompileOnlyEvaluator>(std::move(cache), *device);
    return {};
  }
  Evaluator& evaluator() override { return *evaluator_; }
  bool compile_only() const override { return true; }
  Result<HealthCheckCandidate> health_check() override {
    return Status::failed_precondition("a compile-only worker has no device to check");
  }

 private:
  std::string backend_name_;
  std::filesystem::path cache_dir_;
  std::uint64_t cache_max_bytes_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<CompileOnlyEvaluator> evaluator_;
};

class ReplayHost final : public WorkerHost {
 public:
  ReplayHost(std::vector<std::filesystem::path> recordings, replay::RecordingOptions options, std::uint64_t seed,
             bool compile_only)
      : paths_(std::move(recordings)),
        options_(std::move(options)),
        seed_(seed),
        compile_only_(compile_only) {}

  Status open(const std::optional<DeviceFacts>&) override {
    if (paths_.empty()) return Status::invalid("the replay backend needs --recording");
    auto recs = replay::load_recordings(paths_, options_);
    if (!recs.ok()) return recs.status().with_context("loading the recordings");
    recordings_ = std::move(recs).value();
    evaluator_ = std::make_unique<replay::ReplaySetEvaluator>(recordings_, seed_);
    return {};
  }
  Evaluator& evaluator() override { return *evaluator_; }
  bool compile_only() const override { return compile_only_; }
  Result<HealthCheckCandidate> health_check() override {
    if (recordings_.empty()) return Status::failed_precondition("no recording loaded");
    const auto& r = *recordings_.front();
    return HealthCheckCandidate{replay::recorded_template(r), r.problem(), r.space().to_config(r.optimum().point),
                                "the recording's fastest configuration"};
  }
  std::vector<KernelTemplate> own_templates() const override {
    std::vector<KernelTemplate> out;
    for (const auto& r : recordings_) out.push_back(replay::recorded_template(*r));
    return out;
  }

 private:
  std::vector<std::filesystem::path> paths_;
  replay::RecordingOptions options_;
  std::uint64_t seed_;
  bool compile_only_;
  std::vector<std::shared_ptr<const replay::Recording>> recordings_;
  std::unique_ptr<replay::ReplaySetEvaluator> evaluator_;
};

}  // namespace

Result<HealthCheckCandidate> gpu_health_check_candidate() {
  TS_ASSIGN_OR_RETURN(TemplateLibrary lib, TemplateLibrary::embedded());
  const KernelTemplate* t = lib.find("gemm_tiled");
  if (!t) return Status::not_found("the embedded gemm_tiled template is missing");
  GemmProblem p;
  p.m = p.n = p.k = 256;
  return HealthCheckCandidate{*t, p, t->defaults(), "gemm_tiled defaults on " + p.describe()};
}

std::unique_ptr<WorkerHost> make_gpu_host(std::string backend, int ordinal,
                                          GpuEvaluatorOptions options) {
  return std::make_unique<GpuHost>(std::move(backend), ordinal, std::move(options));
}

std::unique_ptr<WorkerHost> make_compile_host(std::string backend, std::filesystem::path cache_dir,
                                              std::uint64_t cache_max_bytes) {
  return std::make_unique<CompileHost>(std::move(backend), std::move(cache_dir), cache_max_bytes);
}

std::unique_ptr<WorkerHost> make_replay_host(std::vector<std::filesystem::path> recordings,
                                             replay::RecordingOptions options, std::uint64_t seed,
                                             bool compile_only) {
  return std::make_unique<ReplayHost>(std::move(recordings), std::move(options), seed, compile_only);
}

}  // namespace tilesmith::worker
