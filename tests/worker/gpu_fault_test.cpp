// Faulting kernels on a real GPU through WorkerEvaluator and the real tilesmith-worker
// (label gpu; skipped with the reason where there is no GPU): an out-of-bounds write or
// a trap costs one candidate (crash or launch_error) and the next candidate evaluates
// on a fresh worker; an infinite loop is a timeout; NaN output is a wrong_result;
// excessive shared memory is a resource_error (or invalid). Then several workers: two
// on one GPU, and one per GPU when there are several, with candidates per minute.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "registry/template_library.h"
#include "runtime/worker/worker_pool.h"
#include "tests/worker/test_support.h"

namespace tilesmith::worker {
namespace {

class WorkerGpuFaults : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* backend : {"cuda", "hip"}) {
      WorkerEvaluatorOptions o = base(backend);
      auto ev = WorkerEvaluator::start(o);
      if (ev.ok()) {
        options_ = o;
        return;
      }
      why_ += std::string(backend) + ": " + ev.status().message() + "; ";
    }
  }
  void SetUp() override {
    if (!options_) GTEST_SKIP() << "no GPU: " << why_;
  }
  static WorkerEvaluatorOptions base(const char* backend) {
    WorkerEvaluatorOptions o;
    o.worker.executable = testing::worker_path();
    o.worker.backend = backend;
    o.worker.template_dirs = {tilesmith::testing::test_kernels_dir()};
    o.worker.gpu.timing.max_sampling_ms = 200;
    o.on_worker_log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    return o;
  }
  std::unique_ptr<WorkerEvaluator> start(WorkerEvaluatorOptions o) {
    auto ev = WorkerEvaluator::start(std::move(o));
    EXPECT_TRUE(ev.ok()) << ev.status().to_string();
    return ev.ok() ? std::move(ev).value() : nullptr;
  }
  static const KernelTemplate& faulty() {
    static TemplateLibrary lib =
        std::move(TemplateLibrary::from_directory(tilesmith::testing::test_kernels_dir())).value();
    return *lib.find("fault_gpu");
  }
  static const KernelTemplate& tiled() {
    static TemplateLibrary lib = std::move(TemplateLibrary::embedded()).value();
    return *lib.find("gemm_tiled");
  }
  static GemmProblem problem(std::int64_t n = 512) {
    GemmProblem p;
    p.m = p.n = p.k = n;
    return p;
  }
  static Config fault(int f) { return {{"TILE", 16}, {"FAULT", f}}; }

  // control, fault, control: the fault costs exactly one candidate.
  void expect_contained(WorkerEvaluator& ev, int f, std::initializer_list<Outcome> allowed) {
    Evaluation before = ev.evaluate(faulty(), problem(), fault(0));
    ASSERT_TRUE(before.ok()) << before.message;
    const long pid = ev.status().worker_pid;
    Evaluation bad = ev.evaluate(faulty(), problem(), fault(f));
    std::printf("FAULT=%d: %s: %s\n", f, outcome_name(bad.outcome), bad.message.c_str());
    EXPECT_NE(std::find(allowed.begin(), allowed.end(), bad.outcome), allowed.end())
        << outcome_name(bad.outcome);
    Evaluation after = ev.evaluate(faulty(), problem(), fault(0));
    EXPECT_TRUE(after.ok()) << after.message;
    EXPECT_NE(ev.status().worker_pid, pid) << "the next candidate ran on a fresh worker";
    std::printf("%s\n", ev.status().summary().c_str());
  }

  static inline std::optional<WorkerEvaluatorOptions> options_;
  static inline std::string why_;
};

TEST_F(WorkerGpuFaults, OutOfBoundsWriteCostsOneCandidate) {
  auto ev = start(*options_);
  ASSERT_TRUE(ev);
  expect_contained(*ev, 1, {Outcome::kCrash, Outcome::kLaunchError});
}

TEST_F(WorkerGpuFaults, TrapCostsOneCandidate) {
  auto ev = start(*options_);
  ASSERT_TRUE(ev);
  expect_contained(*ev, 3, {Outcome::kCrash, Outcome::kLaunchError});
}

TEST_F(WorkerGpuFaults, InfiniteLoopIsATimeout) {
  auto o = *options_;
  o.deadlines.run_s = 5;
  auto ev = start(o);
  ASSERT_TRUE(ev);
  expect_contained(*ev, 2, {Outcome::kTimeout});
  EXPECT_EQ(ev->status().timeouts, 1u);
}

TEST_F(WorkerGpuFaults, NanOutputIsAWrongResultAndTheWorkerStays) {
  auto ev = start(*options_);
  ASSERT_TRUE(ev);
  Evaluation e = ev->evaluate(faulty(), problem(), fault(4));
  EXPECT_EQ(e.outcome, Outcome::kWrongResult) << e.message;
  EXPECT_EQ(e.accuracy.non_finite, 512 * 512);
  EXPECT_TRUE(ev->evaluate(faulty(), problem(), fault(0)).ok());
  EXPECT_EQ(ev->status().workers_started, 1u);
}

TEST_F(WorkerGpuFaults, ExcessiveSharedMemoryIsAResourceError) {
  auto ev = start(*options_);
  ASSERT_TRUE(ev);
  Evaluation e = ev->evaluate(faulty(), problem(), fault(5));
  std::printf("FAULT=5: %s: %s\n", outcome_name(e.outcome), e.message.c_str());
  EXPECT_TRUE(e.outcome == Outcome::kResourceError || e.outcome == Outcome::kInvalid)
      << outcome_name(e.outcome);
  EXPECT_TRUE(ev->evaluate(faulty(), problem(), fault(0)).ok());
  EXPECT_EQ(ev->status().workers_started, 1u);
}

TEST_F(WorkerGpuFaults, ThreeFaultsInARowThenAPassingHealthCheck) {
  auto ev = start(*options_);
  ASSERT_TRUE(ev);
  for (int i = 0; i < 3; ++i) {
    Evaluation bad = ev->evaluate(faulty(), problem(), fault(1));
    EXPECT_TRUE(bad.outcome == Outcome::kCrash || bad.outcome == Outcome::kLaunchError)
        << bad.message;
  }
  Evaluation e = ev->evaluate(faulty(), problem(), fault(0));
  EXPECT_TRUE(e.ok()) << e.message;
  WorkerStatus s = ev->status();
  EXPECT_EQ(s.health_checks, 1u);
  EXPECT_EQ(s.health_check_failures, 0u);
  std::printf("%s\n", s.summary().c_str());
}

TEST_F(WorkerGpuFaults, VendorBaselineAndPrepareGoThroughTheWorkers) {
  auto ev = start(*options_);
  ASSERT_TRUE(ev);
  Evaluation compiled = ev->prepare(tiled(), problem(1024), tiled().defaults());
  EXPECT_TRUE(compiled.ok()) << compiled.message;
  Evaluation run = ev->evaluate(tiled(), problem(1024), tiled().defaults());
  EXPECT_TRUE(run.ok()) << run.message;
  EXPECT_TRUE(run.compile_cache_hit) << "prepare's compile helper filled the shared cache";
  auto vendor = ev->vendor_baseline(problem(1024));
  if (vendor.ok()) {
    EXPECT_TRUE(vendor->ok()) << vendor->message;
    std::printf("%s: %.2f TFLOP/s vs gemm_tiled %.2f\n", ev->vendor_name().c_str(), vendor->tflops,
                run.tflops);
  } else {
    EXPECT_EQ(vendor.status().code(), StatusCode::kUnavailable) << vendor.status().to_string();
  }
}

std::vector<Config> tiled_configs(const KernelTemplate& t, const DeviceFacts& dev,
                                  const GemmProblem& p, int n) {
  auto valid = t.space().enumerate_valid(t.context(p, &dev));
  std::vector<Config> out;
  for (std::size_t i = 0; i < valid.size() && int(out.size()) < n;
       i += std::max<std::size_t>(1, valid.size() / n))
    out.push_back(t.space().to_config(valid[i]));
  return out;
}

double candidates_per_minute(std::vector<WorkerEvaluatorOptions> devices,
                             const std::vector<Config>& configs, const KernelTemplate& t,
                             const GemmProblem& p, std::size_t* devices_used) {
  auto pool = WorkerPool::start(std::move(devices));
  EXPECT_TRUE(pool.ok()) << pool.status().to_string();
  if (!pool.ok()) return 0;
  std::vector<PoolCandidate> batch;
  for (std::size_t i = 0; i < configs.size(); ++i) batch.push_back({&t, p, configs[i], i});
  // Compile ahead so the comparison is about measuring, not compiling.
  for (const auto& c : configs) (*pool)->evaluator(0).prepare(t, p, c);
  auto t0 = std::chrono::steady_clock::now();
  auto results = (*pool)->evaluate_batch(batch);
  double minutes =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 60;
  std::set<std::size_t> used;
  for (const auto& r : results) {
    EXPECT_NE(r.evaluation.outcome, Outcome::kCrash) << r.evaluation.message;
    used.insert(r.device);
  }
  *devices_used = used.size();
  return double(results.size()) / minutes;
}

TEST_F(WorkerGpuFaults, SeveralWorkersOnOneGpuAndOnePerGpu) {
  auto first = start(*options_);
  ASSERT_TRUE(first);
  const DeviceFacts dev = first->device();
  first.reset();
  GemmProblem p = problem(2048);
  auto configs = tiled_configs(tiled(), dev, p, 16);
  ASSERT_GE(configs.size(), 8u);
  std::size_t used = 0;
  double one = candidates_per_minute({*options_}, configs, tiled(), p, &used);
  double two_same = candidates_per_minute({*options_, *options_}, configs, tiled(), p, &used);
  std::printf("one GPU: 1 worker %.1f candidates/min, 2 workers %.1f candidates/min (%zu used)\n",
              one, two_same, used);
  EXPECT_EQ(used, 2u);

  WorkerSpec spec = options_->worker;
  auto devices = list_devices(spec);
  ASSERT_TRUE(devices.ok()) << devices.status().to_string();
  std::printf("%zu %s device(s)\n", devices->size(), spec.backend.c_str());
  if (devices->size() < 2) {
    std::printf("one worker per GPU: not run (one GPU)\n");
    return;
  }
  std::vector<WorkerEvaluatorOptions> per_gpu;
  for (const auto& d : *devices) {
    auto o = *options_;
    o.worker.device = d.ordinal;
    per_gpu.push_back(o);
  }
  double all = candidates_per_minute(per_gpu, configs, tiled(), p, &used);
  std::printf("%zu GPUs: %.1f candidates/min vs 1 worker %.1f (%zu devices used)\n", per_gpu.size(),
              all, one, used);
  EXPECT_GE(used, 2u);
}

// Device memory in use on `ordinal` (MiB) from nvidia-smi; -1 where there is none.
long device_memory_used_mib(int ordinal) {
  std::string cmd = "nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i " +
                    std::to_string(ordinal) + " 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return -1;
  long mib = -1;
  if (std::fscanf(p, "%ld", &mib) != 1) mib = -1;
  ::pclose(p);
  return mib;
}

// Hundreds of candidates on one worker: the orchestrator's and the worker's resident
// memory and the device's memory are sampled and printed (TILESMITH_GPU_SOAK sets the
// count, default 200); only loose bounds are asserted.
TEST_F(WorkerGpuFaults, SoakKeepsHostAndDeviceMemoryFlat) {
  int count = 200;
  if (const char* env = std::getenv("TILESMITH_GPU_SOAK"); env && *env) count = std::atoi(env);
  auto o = *options_;
  o.worker.gpu.timing.max_sampling_ms = 30;
  o.worker.gpu.timing.min_samples = 10;
  o.on_worker_log = nullptr;
  auto ev = start(o);
  ASSERT_TRUE(ev);
  GemmProblem p = problem(512);
  auto configs = tiled_configs(tiled(), ev->device(), p, 100);
  ASSERT_FALSE(configs.empty());
  struct Sample {
    int n;
    long host, worker, device_mib;
  };
  std::vector<Sample> samples;
  int ok = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    Evaluation e = ev->evaluate(tiled(), p, configs[std::size_t(i) % configs.size()]);
    ok += e.ok();
    EXPECT_NE(e.outcome, Outcome::kCrash) << e.message;
    if (i == 9 || (i + 1) % 50 == 0 || i + 1 == count)
      samples.push_back({i + 1, testing::resident_bytes(),
                         testing::process_resident_bytes(ev->status().worker_pid),
                         device_memory_used_mib(ev->device().ordinal)});
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("gpu soak: %d candidates (%d ok) in %.1f s, %llu worker(s) started\n", count, ok,
              seconds, (unsigned long long)ev->status().workers_started);
  for (const auto& s : samples)
    std::printf(
        "gpu soak: after %4d: orchestrator RSS %.1f MB, worker RSS %.1f MB, device memory used %ld "
        "MiB\n",
        s.n, s.host / 1e6, s.worker / 1e6, s.device_mib);
  ASSERT_GE(samples.size(), 2u);
  EXPECT_LT(samples.back().host - samples.front().host, 50l << 20);
  if (samples.front().worker > 0 && samples.back().worker > 0) {
    EXPECT_LT(samples.back().worker - samples.front().worker, 200l << 20) << "worker RSS grew";
  }
  if (samples.front().device_mib >= 0 && samples.back().device_mib >= 0) {
    EXPECT_LT(samples.back().device_mib - samples.front().device_mib, 512) << "device memory grew";
  }
}

}  // namespace
}  // namespace tilesmith::worker
