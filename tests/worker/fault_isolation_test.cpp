// WorkerEvaluator against a worker that really crashes, hangs, garbles, exits or loses
// its context on command (fault_worker.cpp, CPU only): every candidate gets its
// outcome with what is known, the next one runs on a fresh worker, nothing is evaluated
// twice, and no process or descriptor is left behind. Then the compiler: a real hipRTC
// abort, contained; and the health check with its backoff.

#include <signal.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "base/files.h"
#include "runtime/backend.h"
#include "runtime/worker/child_process.h"
#include "runtime/worker/fd_io.h"
#include "runtime/worker/frame.h"
#include "runtime/worker/wire.h"
#include "runtime/worker/worker_evaluator.h"
#include "runtime/worker/worker_spec.h"
#include "tests/worker/test_support.h"

namespace tilesmith::worker {
namespace {

using namespace testing;

class WorkerFaultIsolation : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_dir();
    journal_ = dir_ / "journal.txt";
    fds_before_ = open_fd_count();
  }
  void TearDown() override {
    ev_.reset();
    std::string what;
    EXPECT_TRUE(no_children(&what)) << what;
    EXPECT_EQ(open_fd_count(), fds_before_) << "descriptors leaked";
    std::filesystem::remove_all(dir_);
  }
  void start(WorkerEvaluatorOptions o) {
    auto ev = WorkerEvaluator::start(std::move(o));
    ASSERT_TRUE(ev.ok()) << ev.status().to_string();
    ev_ = std::move(ev).value();
  }
  Evaluation eval(int fault, int id, int ms = 0) {
    return ev_->evaluate(fault_template(), small_problem(), fault_config(fault, id, ms));
  }
  void expect_each_evaluated_once(std::initializer_list<int> ids) {
    auto n = evaluations_by_id(journal_);
    for (int id : ids) EXPECT_EQ(n[id], 1) << "candidate " << id;
    EXPECT_EQ(n.size(), ids.size());
  }

  std::filesystem::path dir_, journal_;
  int fds_before_ = 0;
  std::unique_ptr<WorkerEvaluator> ev_;
};

struct CrashCase {
  Fault fault;
  const char* expected;  // in the message
  const char* name;
};
// Test names (ctest lists parameterised tests by their printed parameter).
void PrintTo(const CrashCase& c, std::ostream* os) { *os << c.name; }

class WorkerEveryCrash : public WorkerFaultIsolation,
                         public ::testing::WithParamInterface<CrashCase> {};

TEST_P(WorkerEveryCrash, CostsOneCandidateAndTheNextRunsOnAFreshWorker) {
  start(fault_options(journal_));
  ASSERT_EQ(ev_->device().backend, "fault");
  Evaluation before = eval(kNone, 1);
  ASSERT_TRUE(before.ok()) << before.message;
  const long first_pid = ev_->status().worker_pid;

  Evaluation bad = eval(GetParam().fault, 2);
  EXPECT_EQ(bad.outcome, Outcome::kCrash) << bad.message;
  EXPECT_NE(bad.message.find(GetParam().expected), std::string::npos) << bad.message;
  EXPECT_NE(bad.message.find("during the run"), std::string::npos) << bad.message;
  EXPECT_EQ(bad.compile_ms, 1.5) << "the compile figures of the lost candidate are kept";
  std::printf("%s\n", bad.message.c_str());
  EXPECT_EQ(ev_->status().worker_pid, -1) << "no worker until the next candidate";

  Evaluation after = eval(kNone, 3);
  EXPECT_TRUE(after.ok()) << after.message;
  WorkerStatus s = ev_->status();
  EXPECT_NE(s.worker_pid, first_pid);
  EXPECT_EQ(s.crashes, 1u);
  EXPECT_EQ(s.workers_started, 2u);
  EXPECT_EQ(s.evaluations, 3u);
  EXPECT_EQ(s.consecutive_losses, 0);
  expect_each_evaluated_once({1, 2, 3});
}

INSTANTIATE_TEST_SUITE_P(
    Faults, WorkerEveryCrash,
    ::testing::Values(CrashCase{kSegfault, "SIGSEGV", "segfault"},
                      CrashCase{kAbort, "SIGABRT", "abort"},
                      CrashCase{kExitMidMessage, "middle of a message", "exit_mid_message"},
                      CrashCase{kGarbage, "garbage on the channel", "garbage"},
                      CrashCase{kExitCode, "exited with code 3", "exit_code"},
                      CrashCase{kHugeFrame, "exceeds the limit", "huge_frame"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(WorkerFaultIsolation, CrashReportCarriesTheWorkersLastStderr) {
  start(fault_options(journal_));
  Evaluation bad = eval(kSegfault, 1);
  ASSERT_EQ(bad.outcome, Outcome::kCrash);
  EXPECT_NE(bad.message.find("about to dereference null"), std::string::npos) << bad.message;
}

TEST_F(WorkerFaultIsolation, HangInTheRunIsATimeoutWithTheCompileFiguresKept) {
  auto o = fault_options(journal_);
  o.deadlines.run_s = 1.0;
  start(o);
  // A first candidate, so the worker has the problem's inputs and the deadline is the
  // plain 1 s (a worker's first use of a problem gets an allowance for building them).
  ASSERT_TRUE(eval(kNone, 0).ok());
  auto t0 = std::chrono::steady_clock::now();
  Evaluation hung = eval(kHangRun, 1);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(hung.outcome, Outcome::kTimeout) << hung.message;
  EXPECT_NE(hung.message.find("the run passed its deadline of 1.0 s"), std::string::npos)
      << hung.message;
  EXPECT_EQ(hung.compile_ms, 1.5);
  EXPECT_NE(hung.compile_log.find("fault worker: compiled"), std::string::npos);
  EXPECT_LT(waited, 8.0) << "the deadline, not the hang, ended it";
  EXPECT_TRUE(eval(kNone, 2).ok());
  EXPECT_EQ(ev_->status().timeouts, 1u);
  expect_each_evaluated_once({0, 1, 2});
}

TEST_F(WorkerFaultIsolation, HangInTheCompileIsATimeout) {
  auto o = fault_options(journal_);
  o.deadlines.compile_s = 1.0;
  start(o);
  Evaluation hung = eval(kHangCompile, 1);
  EXPECT_EQ(hung.outcome, Outcome::kTimeout) << hung.message;
  EXPECT_NE(hung.message.find("the compile passed its deadline"), std::string::npos)
      << hung.message;
  EXPECT_TRUE(eval(kNone, 2).ok());
}

TEST_F(WorkerFaultIsolation, LostContextIsTheWorkersLaunchErrorAndTheWorkerIsReplaced) {
  start(fault_options(journal_));
  ASSERT_TRUE(eval(kNone, 1).ok());
  const long pid = ev_->status().worker_pid;
  Evaluation sticky = eval(kStickyError, 2);
  EXPECT_EQ(sticky.outcome, Outcome::kLaunchError);
  EXPECT_NE(sticky.message.find("illegal memory access"), std::string::npos) << sticky.message;
  EXPECT_NE(sticky.message.find("the worker was replaced"), std::string::npos) << sticky.message;
  Evaluation next = eval(kNone, 3);
  EXPECT_TRUE(next.ok()) << next.message;
  EXPECT_NE(ev_->status().worker_pid, pid);
  EXPECT_EQ(ev_->status().lost_contexts, 1u);
  expect_each_evaluated_once({1, 2, 3});
}

TEST_F(WorkerFaultIsolation, OrdinaryFailuresKeepTheWorker) {
  start(fault_options(journal_));
  ASSERT_TRUE(eval(kNone, 1).ok());
  const long pid = ev_->status().worker_pid;
  EXPECT_EQ(eval(kWrongResult, 2).outcome, Outcome::kWrongResult);
  Config off_domain = fault_config(kNone, 3);
  off_domain["MS"] = 7;  // not in the domain: the worker says invalid
  Evaluation invalid = ev_->evaluate(fault_template(), small_problem(), off_domain);
  EXPECT_EQ(invalid.outcome, Outcome::kInvalid);
  EXPECT_NE(invalid.message.find("MS=7"), std::string::npos) << invalid.message;
  EXPECT_TRUE(eval(kNone, 4).ok());
  EXPECT_EQ(ev_->status().worker_pid, pid);
  EXPECT_EQ(ev_->status().workers_started, 1u);
}

// The read floor travels the protocol (request, result with the floor, or the worker's
// error) and keeps the worker, which then measures candidates as before.
TEST_F(WorkerFaultIsolation, ReadFloorComesBackThroughTheWorker) {
  start(fault_options(journal_));
  const long pid = ev_->status().worker_pid;
  GemmProblem p = small_problem();
  p.beta = 0.5;
  auto floor = ev_->read_floor(p);
  ASSERT_TRUE(floor.ok()) << floor.status().to_string();
  EXPECT_EQ(floor->bytes.total(), read_floor_bytes(p).total());
  EXPECT_EQ(floor->bytes.c, 64u * 64 * 4);
  EXPECT_EQ(floor->variant, "fault_read");
  EXPECT_DOUBLE_EQ(floor->timing.median_ms, double(read_floor_bytes(p).total()) / 1e9);
  ASSERT_EQ(floor->variants.size(), 2u);
  EXPECT_EQ(floor->variants[1].outcome, Outcome::kWrongResult);
  p.m = 13;
  auto failed = ev_->read_floor(p);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("no way of reading"), std::string::npos) << failed.status().to_string();
  EXPECT_TRUE(eval(kNone, 1).ok());
  EXPECT_EQ(ev_->status().worker_pid, pid);
  EXPECT_EQ(ev_->status().workers_started, 1u);
}

TEST_F(WorkerFaultIsolation, ChattyWorkersNeitherBlockNorCorruptTheChannel) {
  std::atomic<int> lines{0};
  auto o = fault_options(journal_);
  o.on_worker_log = [&](const std::string& l) {
    if (l.find("eeeeeeee") != std::string::npos) ++lines;
  };
  start(o);
  Evaluation flood = eval(kStderrFlood, 1);  // 4 MiB of stderr: more than any pipe holds
  EXPECT_TRUE(flood.ok()) << flood.message;
  EXPECT_EQ(lines.load(), 4096);
  Evaluation noise = eval(kStdoutNoise, 2);  // printf to stdout goes to stderr, not the protocol
  EXPECT_TRUE(noise.ok()) << noise.message;
  EXPECT_EQ(ev_->status().workers_started, 1u);
}

TEST_F(WorkerFaultIsolation, AWorkerKilledWhileIdleCostsNoCandidate) {
  start(fault_options(journal_));
  ASSERT_TRUE(eval(kNone, 1).ok());
  long pid = ev_->status().worker_pid;
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid_t(pid), SIGKILL), 0);  // the OOM killer, an operator, ...
  Evaluation next = eval(kNone, 2);
  EXPECT_TRUE(next.ok()) << next.message;
  WorkerStatus s = ev_->status();
  EXPECT_EQ(s.crashes, 0u);
  EXPECT_EQ(s.workers_started, 2u);
  EXPECT_NE(s.last_problem.find("died while idle"), std::string::npos) << s.last_problem;
  expect_each_evaluated_once({1, 2});
}

// renew_process(): the worker is shut down politely and the next candidate runs in a
// fresh one; nothing is counted as lost.
TEST_F(WorkerFaultIsolation, RenewingTheProcessMeasuresTheNextCandidateInAFreshWorker) {
  start(fault_options(journal_));
  ASSERT_TRUE(eval(kNone, 1).ok());
  const long pid = ev_->status().worker_pid;
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(ev_->renew_process());
  EXPECT_EQ(ev_->status().worker_pid, -1) << "no worker until the next call";
  Evaluation next = eval(kNone, 2);
  EXPECT_TRUE(next.ok()) << next.message;
  WorkerStatus s = ev_->status();
  EXPECT_NE(s.worker_pid, pid);
  EXPECT_EQ(s.workers_started, 2u);
  EXPECT_EQ(s.crashes + s.timeouts + s.lost_contexts, 0u);
  EXPECT_TRUE(s.last_problem.empty()) << s.last_problem;
  expect_each_evaluated_once({1, 2});
}

TEST_F(WorkerFaultIsolation, TemplateFromOtherFilesIsRefusedNotRun) {
  start(fault_options(journal_));
  // The same name with another description: another source hash than the worker's file.
  auto json = read_file(tilesmith::testing::test_kernels_dir() / "fault_process.json");
  auto src = read_file(tilesmith::testing::test_kernels_dir() / "fault_process.hip");
  ASSERT_TRUE(json.ok() && src.ok());
  std::string edited = *json;
  edited.replace(edited.find("Test-only"), 9, "Edited");
  auto other = KernelTemplate::from_text(edited, *src, "edited copy");
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  Evaluation e = ev_->evaluate(*other, small_problem(), fault_config(kNone, 1));
  EXPECT_EQ(e.outcome, Outcome::kInvalid);
  EXPECT_NE(e.message.find("different files"), std::string::npos) << e.message;
  EXPECT_TRUE(eval(kNone, 2).ok());
  EXPECT_EQ(ev_->status().workers_started, 1u);
}

TEST_F(WorkerFaultIsolation, CompilerAbortInPrepareIsContained) {
  start(fault_options(journal_));
  Evaluation crashed =
      ev_->prepare(fault_template(), small_problem(), fault_config(kCompilerAbort, 1));
  EXPECT_EQ(crashed.outcome, Outcome::kCrash) << crashed.message;
  EXPECT_NE(crashed.message.find("SIGABRT"), std::string::npos) << crashed.message;
  EXPECT_NE(crashed.message.find("during the compile"), std::string::npos) << crashed.message;
  Evaluation fine = ev_->prepare(fault_template(), small_problem(), fault_config(kNone, 2));
  EXPECT_TRUE(fine.ok()) << fine.message;
  EXPECT_EQ(ev_->status().compile_crashes, 1u);
  EXPECT_TRUE(eval(kNone, 3).ok()) << "the device worker never noticed";
  EXPECT_EQ(ev_->status().crashes, 0u);
}

TEST_F(WorkerFaultIsolation, CompileHangInPrepareIsATimeout) {
  auto o = fault_options(journal_);
  o.deadlines.compile_s = 1.0;
  start(o);
  Evaluation hung = ev_->prepare(fault_template(), small_problem(), fault_config(kHangCompile, 1));
  EXPECT_EQ(hung.outcome, Outcome::kTimeout) << hung.message;
  EXPECT_TRUE(ev_->prepare(fault_template(), small_problem(), fault_config(kNone, 2)).ok());
  EXPECT_EQ(ev_->status().compile_timeouts, 1u);
}

TEST_F(WorkerFaultIsolation, ConcurrentPreparesAlongsideEvaluate) {
  auto o = fault_options(journal_);
  o.compile_processes = 2;
  start(o);
  std::atomic<int> ok{0};
  std::vector<std::thread> compilers;
  for (int t = 0; t < 3; ++t)
    compilers.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i)
        ok += ev_->prepare(fault_template(), small_problem(), fault_config(kNone, 100 + t * 10 + i))
                  .ok();
    });
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(eval(kNone, i, 20).ok());
  for (auto& t : compilers) t.join();
  EXPECT_EQ(ok.load(), 15);
  EXPECT_LE(ev_->status().compiles, 15u);
}

bool hiprtc_available() {
  auto b = make_backend("hip");
  return b.ok() && (*b)->compiler().ok();
}

TEST_F(WorkerFaultIsolation, RealHipRtcAbortOnGfx942IsContained) {
  if (!hiprtc_available()) GTEST_SKIP() << "hipRTC unavailable here";
  start(fault_options(journal_));
  // Through prepare (a compile helper) ...
  Evaluation crashed =
      ev_->prepare(fault_template(), small_problem(), fault_config(kCompilerCrash, 1));
  EXPECT_EQ(crashed.outcome, Outcome::kCrash) << crashed.message;
  EXPECT_NE(crashed.message.find("SIGABRT"), std::string::npos) << crashed.message;
  std::printf("prepare: %s\n", crashed.message.c_str());
  EXPECT_TRUE(ev_->prepare(fault_template(), small_problem(), fault_config(kNone, 2)).ok());
  // ... and through evaluate (the device worker compiles too).
  Evaluation in_worker = eval(kCompilerCrash, 3);
  EXPECT_EQ(in_worker.outcome, Outcome::kCrash) << in_worker.message;
  EXPECT_NE(in_worker.message.find("during the compile"), std::string::npos) << in_worker.message;
  EXPECT_TRUE(eval(kNone, 4).ok());
}

TEST_F(WorkerFaultIsolation, ThreeCrashesInARowRunAHealthCheckThatPassesOnAHealthyDevice) {
  start(fault_options(journal_));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(eval(kSegfault, i).outcome, Outcome::kCrash);
  EXPECT_EQ(ev_->status().consecutive_losses, 3);
  EXPECT_EQ(ev_->status().health_checks, 0u);
  EXPECT_TRUE(eval(kNone, 10).ok());
  WorkerStatus s = ev_->status();
  EXPECT_EQ(s.health_checks, 1u);
  EXPECT_EQ(s.health_check_failures, 0u);
  EXPECT_TRUE(s.healthy);
  EXPECT_EQ(s.consecutive_losses, 0);
  // The check ran on a fresh worker and the candidate after it on the same one.
  EXPECT_EQ(s.workers_started, 4u);
}

TEST_F(WorkerFaultIsolation, CrashesSeparatedBySuccessesNeedNoHealthCheck) {
  start(fault_options(journal_));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(eval(kAbort, 2 * i).outcome, Outcome::kCrash);
    EXPECT_EQ(eval(kSegfault, 2 * i + 1).outcome, Outcome::kCrash);
    EXPECT_TRUE(eval(kNone, 100 + i).ok());
  }
  EXPECT_EQ(ev_->status().health_checks, 0u);
}

TEST_F(WorkerFaultIsolation, FailedHealthCheckBacksOffAndReportsUntilTheDeviceRecovers) {
  auto marker = dir_ / "unhealthy";
  std::ofstream(marker) << "sick\n";
  auto o = fault_options(journal_, {"--unhealthy-while", marker.string()});
  // Long enough that the "nothing starts while backing off" check below cannot race it.
  o.health.backoff_initial_s = 0.8;
  o.health.backoff_max_s = 1.0;
  start(o);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(eval(kSegfault, i).outcome, Outcome::kCrash);

  // The health check aborts: the candidate is not run, the device reports unhealthy.
  auto first = ev_->try_evaluate(fault_template(), small_problem(), fault_config(kNone, 10));
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(first.status().message().find("health check"), std::string::npos)
      << first.status().message();
  WorkerStatus s = ev_->status();
  EXPECT_FALSE(s.healthy);
  EXPECT_EQ(s.health_check_failures, 1u);
  EXPECT_GT(s.backoff_remaining_s, 0.0);
  EXPECT_NE(s.summary().find("UNHEALTHY"), std::string::npos) << s.summary();
  std::printf("%s\n", s.summary().c_str());

  // While backing off nothing is started: no spinning.
  const auto started = s.workers_started;
  auto again = ev_->try_evaluate(fault_template(), small_problem(), fault_config(kNone, 10));
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("next health check in"), std::string::npos);
  EXPECT_EQ(ev_->status().workers_started, started);

  // A later check fails too while the device is sick; then it recovers and evaluate(),
  // which waits through the backoff, runs the candidate.
  std::thread healer([&] {
    while (ev_->status().health_check_failures < 2)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::filesystem::remove(marker);
  });
  Evaluation e = eval(kNone, 10);
  healer.join();
  EXPECT_TRUE(e.ok()) << e.message;
  s = ev_->status();
  EXPECT_TRUE(s.healthy);
  EXPECT_GE(s.health_check_failures, 2u);
  EXPECT_EQ(s.health_checks, s.health_check_failures + 1);
  expect_each_evaluated_once({0, 1, 2, 10});
}

TEST_F(WorkerFaultIsolation, StopEndsABackoffWaitWithANotRunResult) {
  auto marker = dir_ / "unhealthy";
  std::ofstream(marker) << "sick\n";
  auto o = fault_options(journal_, {"--unhealthy-while", marker.string()});
  o.health.backoff_initial_s = 60;
  start(o);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(eval(kSegfault, i).outcome, Outcome::kCrash);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ev_->stop();
  });
  auto t0 = std::chrono::steady_clock::now();
  Evaluation e = eval(kNone, 10);
  stopper.join();
  EXPECT_EQ(e.outcome, Outcome::kLaunchError);
  EXPECT_EQ(e.message.rfind("not run:", 0), 0u) << e.message;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  EXPECT_EQ(evaluations_by_id(journal_).count(10), 0u);
}

TEST_F(WorkerFaultIsolation, AbandonKillsTheCandidateInFlight) {
  start(fault_options(journal_));
  std::thread abandoner([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ev_->abandon();
  });
  auto t0 = std::chrono::steady_clock::now();
  auto r = ev_->try_evaluate(fault_template(), small_problem(), fault_config(kNone, 1, 3000));
  abandoner.join();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("abandoned"), std::string::npos);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.5);
  EXPECT_EQ(ev_->status().worker_pid, -1);
}

TEST_F(WorkerFaultIsolation, ADeviceThatCannotOpenIsAStartError) {
  auto marker = dir_ / "no_device";
  std::ofstream(marker) << "\n";
  auto ev = WorkerEvaluator::start(fault_options(journal_, {"--no-start-while", marker.string()}));
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(ev.status().message().find("no device while"), std::string::npos)
      << ev.status().message();
  auto missing = fault_options(journal_);
  missing.worker.executable = dir_ / "no-such-worker";
  EXPECT_EQ(WorkerEvaluator::start(missing).status().code(), StatusCode::kNotFound);
}

TEST_F(WorkerFaultIsolation, ManyCrashCyclesLeaveNoProcessesNoDescriptorsNoGrowth) {
  start(fault_options(journal_));
  ASSERT_TRUE(eval(kNone, 0).ok());
  const long rss0 = resident_bytes();
  const int fds0 = open_fd_count();
  const Fault faults[] = {kSegfault, kAbort, kExitMidMessage, kGarbage, kExitCode, kStickyError};
  for (int i = 1; i <= 120; ++i) {
    Evaluation e = eval(i % 2 ? faults[(i / 2) % 6] : kNone, i);
    EXPECT_EQ(e.ok(), i % 2 == 0) << i << ": " << e.message;
  }
  EXPECT_EQ(open_fd_count(), fds0);
  const long rss1 = resident_bytes();
  std::printf("60 lost workers: RSS %.1f MB -> %.1f MB, fds %d\n", rss0 / 1e6, rss1 / 1e6, fds0);
  EXPECT_LT(rss1 - rss0, 20l << 20);
  WorkerStatus s = ev_->status();
  EXPECT_EQ(s.crashes + s.lost_contexts, 60u);
  EXPECT_EQ(s.health_checks, 0u);
  auto n = evaluations_by_id(journal_);
  for (int i = 0; i <= 120; ++i) EXPECT_EQ(n[i], 1) << i;
}

// What happens to a worker when the orchestrator dies (kill -9, a reboot of the loop):
// its request pipe closes, and the worker leaves at once, even stuck in a hang.
TEST(WorkerOrphan, AWorkerWhoseOrchestratorIsGoneExitsEvenWhileHung) {
  auto in = make_pipe(), out = make_pipe();
  ASSERT_TRUE(in.ok() && out.ok());
  WorkerSpec spec;
  spec.backend = "fault";
  spec.template_dirs = {tilesmith::testing::test_kernels_dir()};
  SpawnSpec s{
      worker_argv(spec, fault_worker_path(), false), {}, in->read.get(), out->write.get(), 2};
  auto child = ChildProcess::spawn(s);
  ASSERT_TRUE(child.ok()) << child.status().to_string();
  in->read.reset();
  out->write.reset();
  auto send = [&](const nlohmann::json& m) {
    ASSERT_TRUE(write_frame(in->write.get(), m.dump()).ok());
  };
  FrameReader reader(out->read.get());
  auto next_type = [&] {
    auto f = reader.read();
    EXPECT_TRUE(f.ok() && f->has_value());
    return f.ok() && f->has_value() ? message_type(*parse_message(**f)) : std::string();
  };
  send({{"type", kHello}, {"id", 1}});
  ASSERT_EQ(next_type(), kHello);
  send(make_candidate_request(kEvaluate, 2, fault_template(), small_problem(),
                              fault_config(kHangRun, 1)));
  ASSERT_EQ(next_type(), kAccepted);
  ASSERT_EQ(next_type(), kProgress);  // now spinning in the run
  in->write.reset();                  // the orchestrator is gone
  EXPECT_TRUE(child->wait_for_exit(std::chrono::seconds(10))) << "the orphaned worker kept running";
  EXPECT_EQ(describe_wait_status(child->wait_status()), "exited with code 0");
}

}  // namespace
}  // namespace tilesmith::worker
