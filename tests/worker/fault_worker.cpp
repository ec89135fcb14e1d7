// Test-only worker: the real request loop (runtime/worker/worker_server.h) around an
// Evaluator that injects process-level faults on command (tests/worker/faults.h), so
// the CPU tests exercise WorkerEvaluator against real crashes, hangs, garbage and
// lost contexts. Accepts tilesmith-worker's flags (ignoring those it does not need),
// plus:
//   --unhealthy-while PATH   the health check aborts while PATH exists
//   --no-start-while PATH    hello fails (no device) while PATH exists

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "registry/template_library.h"
#include "runtime/worker/frame.h"
#include "runtime/worker/worker_server.h"
#include "tests/worker/faults.h"

#if TILESMITH_TEST_HAVE_HIP
#include "runtime/hip/hip_api.h"
#endif

namespace {

using namespace tilesmith;
using namespace tilesmith::worker;
using namespace tilesmith::worker::testing;

int g_out_fd = -1;  // the protocol's reply fd (claimed from stdout)

[[noreturn]] void spin_forever() {
  volatile unsigned long n = 0;
  for (;;) n = n + 1;
}

std::int64_t param(const Config& c, const char* name) {
  auto it = c.find(name);
  return it == c.end() ? 0 : it->second;
}

void journal(const char* what, const Config& c) {
  const char* path = std::getenv(kJournalEnv);
  if (!path || !*path) return;
  std::string line = std::to_string(::getpid()) + " " + what + " " + config_to_json_text(c) + "\n";
  int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!::write(fd, line.data(), line.size());  // one O_APPEND write: whole lines
  ::close(fd);
}

// What the real hipRTC does when asked for gfx942 on ROCm 5.2: the normal compiler
// wrapper refuses the target, so this calls hipRTC directly.
Evaluation crash_the_compiler() {
  Evaluation e;
  e.outcome = Outcome::kCompileError;
#if TILESMITH_TEST_HAVE_HIP
  auto api = hip::hiprtc_api();
  if (!api.ok()) {
    e.message = "hipRTC unavailable: " + api.status().message();
    return e;
  }
  const hip::HiprtcApi& h = **api;
  hiprtcProgram prog = nullptr;
  h.hiprtcCreateProgram(&prog, "extern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }\n",
                        "k.hip", 0, nullptr, nullptr);
  const char* opts[] = {"--offload-arch=gfx942", "-O3", "-std=c++17"};
  hiprtcResult rc = h.hiprtcCompileProgram(prog, 3, opts);
  h.hiprtcDestroyProgram(&prog);
  e.message = "hipRTC survived gfx942 (returned " + std::to_string(int(rc)) + ")";
#else
  e.message = "hipRTC unavailable: built without HIP headers";
#endif
  return e;
}

class FaultEvaluator final : public Evaluator {
 public:
  explicit FaultEvaluator(DeviceFacts facts) : facts_(std::move(facts)) {}
  const DeviceFacts& device() const override { return facts_; }

  Evaluation prepare(const KernelTemplate& tmpl, const GemmProblem& problem,
                     const Config& config) override {
    Evaluation e;
    auto rendered = tmpl.render(problem, config, facts_);
    if (!rendered.ok()) {
      e.outcome = Outcome::kInvalid;
      e.message = rendered.status().message();
      return e;
    }
    journal("prepare", config);
    switch (param(config, "FAULT")) {
      case kHangCompile:
        spin_forever();
      case kCompilerAbort:
        std::fprintf(stderr, "fault worker: compiler abort injected\n");
        std::abort();
      case kCompilerCrash:
        return crash_the_compiler();
      default:
        break;
    }
    e.outcome = Outcome::kOk;
    e.compile_ms = 1.5;
    e.compile_log = "fault worker: compiled " + config_to_json_text(config);
    return e;
  }

  Evaluation evaluate(const KernelTemplate& tmpl, const GemmProblem& problem,
                      const Config& config) override {
    Evaluation e = prepare(tmpl, problem, config);
    if (!e.ok()) return e;
    journal("evaluate", config);
    const auto t0 = std::chrono::system_clock::now();
    if (auto ms = param(config, "MS")) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    switch (param(config, "FAULT")) {
      case kSegfault: {
        std::fprintf(stderr, "fault worker: about to dereference null\n");
        volatile int* p = nullptr;
        *p = 1;
        break;
      }
      case kAbort:
        std::fprintf(stderr, "fault worker: abort injected\n");
        std::abort();
      case kHangRun:
        spin_forever();
      case kExitMidMessage: {
        std::string frame = encode_frame(std::string(1000, 'x'));
        (void)!::write(g_out_fd, frame.data(), 100);
        std::_Exit(0);
      }
      case kGarbage: {
        const char junk[] = "Segmentation fault? no: a library printing to the wrong fd\n";
        (void)!::write(g_out_fd, junk, sizeof junk - 1);
        spin_forever();
      }
      case kStickyError:
        broken_ = "CUDA_ERROR_ILLEGAL_ADDRESS (simulated)";
        e.outcome = Outcome::kLaunchError;
        e.message = "cuStreamSynchronize: an illegal memory access was encountered (simulated)";
        return e;
      case kExitCode:
        std::exit(3);
      case kStderrFlood: {
        std::string line(1023, 'e');
        line += '\n';
        for (int i = 0; i < 4096; ++i) (void)!::write(2, line.data(), line.size());
        break;
      }
      case kHugeFrame: {
        const unsigned char header[8] = {'T', 'S', 'W', '1', 0, 0, 0, 0x40};  // 1 GiB
        (void)!::write(g_out_fd, header, sizeof header);
        spin_forever();
      }
      case kWrongResult:
        e.outcome = Outcome::kWrongResult;
        e.message = "12 of 4096 elements over tolerance (injected)";
        return e;
      case kStdoutNoise:
        std::printf("fault worker: noise on stdout that must not reach the protocol\n");
        std::fflush(stdout);
        break;
      default:
        break;
    }
    const auto t1 = std::chrono::system_clock::now();
    auto ns = [](auto t) {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    };
    e.outcome = Outcome::kOk;
    e.timing.samples = 10;
    e.timing.median_ms = e.timing.min_ms = e.timing.p20_ms = e.timing.p80_ms = e.timing.mean_ms =
        1.0 + double(param(config, "ID")) / 100.0;
    e.tflops = problem.flops() / (e.timing.median_ms * 1e-3) / 1e12;
    e.message = "pid " + std::to_string(::getpid()) + " from " + std::to_string(ns(t0)) + " to " +
                std::to_string(ns(t1));
    return e;
  }

  Result<Evaluation> vendor_baseline(const GemmProblem&) override {
    return Status::unavailable("the fault worker has no vendor library");
  }
  std::string vendor_name() const override { return "none (fault worker)"; }
  // A made-up floor (the bytes at 1 TB/s through two variants, one failing its check), so
  // the protocol's read_floor exchange is tested without a GPU; M = 13 makes it fail.
  Result<ReadFloor> read_floor(const GemmProblem& problem) override {
    if (problem.m == 13) return Status::internal("fault worker: no way of reading passed its check");
    ReadFloor f;
    f.bytes = read_floor_bytes(problem);
    f.variant = "fault_read";
    f.timing.samples = 20;
    f.timing.median_ms = f.timing.min_ms = f.timing.p20_ms = f.timing.p80_ms = f.timing.mean_ms =
        double(f.bytes.total()) / 1e9;
    f.timing.l2_flushed = true;
    f.gbps = 1000;
    f.variants.push_back({"fault_read", Outcome::kOk, "", f.timing.median_ms, f.timing.median_ms});
    f.variants.push_back({"fault_skip", Outcome::kWrongResult, "skips data", 0, 0});
    return f;
  }

  std::string broken_;

 private:
  DeviceFacts facts_;
};

class FaultHost final : public WorkerHost {
 public:
  FaultHost(int ordinal, bool compile_only, std::string unhealthy_while, std::string no_start_while,
            std::vector<std::filesystem::path> dirs)
      : compile_only_(compile_only),
        unhealthy_while_(std::move(unhealthy_while)),
        no_start_while_(std::move(no_start_while)),
        dirs_(std::move(dirs)) {
    facts_.backend = "fault";
    facts_.name = "fault injector";
    facts_.arch = "sm_90";
    facts_.ordinal = ordinal;
  }
  Status open(const std::optional<DeviceFacts>& device) override {
    if (!no_start_while_.empty() && std::filesystem::exists(no_start_while_))
      return Status::unavailable("no device while " + no_start_while_ + " exists");
    evaluator_ = std::make_unique<FaultEvaluator>(device ? *device : facts_);
    return {};
  }
  Evaluator& evaluator() override { return *evaluator_; }
  bool compile_only() const override { return compile_only_; }
  std::string broken_reason() const override {
    return evaluator_ ? evaluator_->broken_ : std::string();
  }
  Result<HealthCheckCandidate> health_check() override {
    for (const auto& d : dirs_) {
      auto lib = TemplateLibrary::from_directory(d);
      if (!lib.ok()) continue;
      if (const KernelTemplate* t = lib->find("fault_process")) {
        bool sick = !unhealthy_while_.empty() && std::filesystem::exists(unhealthy_while_);
        GemmProblem p;
        p.m = p.n = p.k = 64;
        Config c = t->defaults();
        c["HEALTH"] = 1;
        c["FAULT"] = sick ? kAbort : kNone;
        return HealthCheckCandidate{*t, p, c, sick ? "an aborting check" : "a passing check"};
      }
    }
    return Status::not_found("fault_process template not found in --templates");
  }

 private:
  bool compile_only_;
  std::string unhealthy_while_, no_start_while_;
  std::vector<std::filesystem::path> dirs_;
  DeviceFacts facts_;
  std::unique_ptr<FaultEvaluator> evaluator_;
};

}  // namespace

int main(int argc, char** argv) {
  // The injected crashes are expected: no core files.
  rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  CLI::App app{"fault-injecting test worker"};
  app.allow_extras();
  int device = 0;
  bool compile_only = false;
  std::string unhealthy_while, no_start_while;
  std::vector<std::string> dirs;
  app.add_option("--device", device);
  app.add_flag("--compile-only", compile_only);
  app.add_option("--templates", dirs);
  app.add_option("--unhealthy-while", unhealthy_while);
  app.add_option("--no-start-while", no_start_while);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  auto fds = claim_stdio_for_protocol();
  if (!fds.ok()) return kWorkerExitProtocol;
  g_out_fd = fds->out;
  std::vector<std::filesystem::path> paths(dirs.begin(), dirs.end());
  FaultHost host(device, compile_only, unhealthy_while, no_start_while, paths);
  ServeOptions options;
  options.template_dirs = paths;
  options.embedded_templates = false;
  return serve(fds->in, fds->out, host, options);
}
