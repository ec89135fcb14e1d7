// WorkerPool: several workers evaluate candidates of one problem in parallel and return
// them in completion order, tagged with their device; with the replay backend several
// workers over one recording give exactly the results one worker gives; a crash on one
// device costs one candidate and the others go on.

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>

#include <gtest/gtest.h>

#include "runtime/replay/recorded_template.h"
#include "runtime/replay/recording.h"
#include "runtime/worker/worker_pool.h"
#include "tests/worker/test_support.h"

namespace tilesmith::worker {
namespace {

using namespace testing;

class WorkerPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_dir();
    fds_before_ = open_fd_count();
  }
  void TearDown() override {
    std::string what;
    EXPECT_TRUE(no_children(&what)) << what;
    EXPECT_EQ(open_fd_count(), fds_before_);
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
  int fds_before_ = 0;
};

// "pid P from T0 to T1" (nanoseconds, system clock) from the fault worker.
std::pair<long long, long long> interval(const Evaluation& e) {
  long long a = 0, b = 0;
  long pid = 0;
  std::sscanf(e.message.c_str(), "pid %ld from %lld to %lld", &pid, &a, &b);
  return {a, b};
}

TEST_F(WorkerPoolTest, CandidatesRunInParallelAndComeBackTaggedInCompletionOrder) {
  auto journal = dir_ / "journal.txt";
  std::vector<WorkerEvaluatorOptions> devices;
  for (int d = 0; d < 4; ++d) {
    auto o = fault_options(journal);
    o.worker.device = d;
    devices.push_back(o);
  }
  std::mutex mu;
  std::map<std::uint64_t, std::size_t> started_on;
  PoolOptions po;
  po.on_started = [&](std::uint64_t ticket, std::size_t device) {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(started_on.count(ticket), 0u) << "started twice";
    started_on[ticket] = device;
  };
  auto pool = WorkerPool::start(devices, po);
  ASSERT_TRUE(pool.ok()) << pool.status().to_string();
  ASSERT_EQ((*pool)->size(), 4u);
  for (std::size_t d = 0; d < 4; ++d) EXPECT_EQ((*pool)->evaluator(d).device().ordinal, int(d));

  std::vector<PoolCandidate> batch;
  for (int i = 0; i < 8; ++i)
    batch.push_back(
        {&fault_template(), small_problem(), fault_config(kNone, i, 500), std::uint64_t(i)});
  auto results = (*pool)->evaluate_batch(batch);
  ASSERT_EQ(results.size(), 8u);
  std::set<std::uint64_t> tags;
  std::set<std::size_t> used;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    EXPECT_TRUE(r.evaluation.ok()) << r.evaluation.message;
    tags.insert(r.tag);
    used.insert(r.device);
    EXPECT_EQ(r.device_fingerprint, (*pool)->evaluator(r.device).device().fingerprint());
    EXPECT_EQ(started_on.at(r.ticket), r.device);
    if (i > 0) {
      EXPECT_LE(results[i - 1].finished, r.finished) << "completion order";
    }
  }
  EXPECT_EQ(tags.size(), 8u);
  EXPECT_GE(used.size(), 2u);
  // The workers' own clocks: some evaluations overlapped in time.
  int overlapping = 0;
  for (std::size_t i = 0; i < results.size(); ++i)
    for (std::size_t j = i + 1; j < results.size(); ++j) {
      auto a = interval(results[i].evaluation), b = interval(results[j].evaluation);
      overlapping += a.first < b.second && b.first < a.second;
    }
  EXPECT_GT(overlapping, 0);
  std::printf("8 x 500 ms on 4 workers: %d overlapping pairs, %zu devices used\n", overlapping,
              used.size());
  for (const auto& [id, n] : evaluations_by_id(journal)) EXPECT_EQ(n, 1) << id;
}

TEST_F(WorkerPoolTest, ACrashOnOneDeviceCostsOneCandidateOnly) {
  auto journal = dir_ / "journal.txt";
  std::vector<WorkerEvaluatorOptions> devices(2, fault_options(journal));
  devices[1].worker.device = 1;
  auto pool = WorkerPool::start(devices);
  ASSERT_TRUE(pool.ok()) << pool.status().to_string();
  std::vector<PoolCandidate> batch;
  for (int i = 0; i < 12; ++i) {
    int fault = i % 4 == 1 ? kSegfault : (i % 4 == 3 ? kAbort : kNone);
    batch.push_back(
        {&fault_template(), small_problem(), fault_config(fault, i, 20), std::uint64_t(i)});
  }
  auto results = (*pool)->evaluate_batch(batch);
  ASSERT_EQ(results.size(), 12u);
  for (const auto& r : results) {
    bool bad = r.tag % 2 == 1;
    EXPECT_EQ(r.evaluation.outcome, bad ? Outcome::kCrash : Outcome::kOk)
        << r.tag << ": " << r.evaluation.message;
  }
  auto n = evaluations_by_id(journal);
  EXPECT_EQ(n.size(), 12u);
  for (const auto& [id, count] : n) EXPECT_EQ(count, 1) << id;
  std::uint64_t crashes = 0;
  for (const auto& s : (*pool)->status()) crashes += s.crashes;
  EXPECT_EQ(crashes, 6u);
}

TEST_F(WorkerPoolTest, ReplayOnSeveralWorkersGivesTheResultsOfOne) {
  auto recording_path = write_recording(dir_, 24);
  replay::RecordingOptions ro;
  ro.spaces_dir = dir_ / "no_space_files_here";
  auto rec = replay::Recording::load(recording_path, ro);
  ASSERT_TRUE(rec.ok()) << rec.status().to_string();
  KernelTemplate tmpl = replay::recorded_template(**rec);
  GemmProblem problem = (*rec)->problem();
  std::vector<PoolCandidate> batch;
  for (std::size_t i = 0; i < (*rec)->records().size(); i += 2)
    batch.push_back({&tmpl, problem, (*rec)->space().to_config((*rec)->records()[i].point), i});

  auto run = [&](int workers) {
    std::vector<WorkerEvaluatorOptions> devices;
    for (int d = 0; d < workers; ++d) devices.push_back(replay_options(recording_path));
    auto pool = WorkerPool::start(devices);
    EXPECT_TRUE(pool.ok()) << pool.status().to_string();
    std::map<std::uint64_t, std::pair<Outcome, double>> out;
    std::set<std::size_t> used;
    if (!pool.ok()) return out;
    for (const auto& r : (*pool)->evaluate_batch(batch)) {
      out[r.tag] = {r.evaluation.outcome, r.evaluation.timing.median_ms};
      used.insert(r.device);
      EXPECT_EQ(r.device_fingerprint, (*pool)->evaluator(0).device().fingerprint())
          << "one recording, one device";
    }
    std::printf("%d worker(s): %zu results from %zu device(s)\n", workers, out.size(), used.size());
    return out;
  };
  auto one = run(1);
  auto three = run(3);
  ASSERT_EQ(one.size(), batch.size());
  EXPECT_EQ(one, three);
  int failed = 0;
  for (const auto& [tag, r] : one) failed += r.first != Outcome::kOk;
  EXPECT_GT(failed, 0) << "the recording's failures replay too";
  EXPECT_LT(failed, int(one.size()));
}

// A replay worker has no floor to measure: it says so through the protocol, and the pool
// forwards the question to its first device.
TEST_F(WorkerPoolTest, ReplayWorkerSaysItMeasuresNoReadFloor) {
  auto recording_path = write_recording(dir_, 24);
  auto pool = WorkerPool::start({replay_options(recording_path)});
  ASSERT_TRUE(pool.ok()) << pool.status().to_string();
  GemmProblem p;
  p.m = p.n = p.k = 24;
  auto floor = (*pool)->evaluator(0).read_floor(p);
  ASSERT_FALSE(floor.ok());
  EXPECT_EQ(floor.status().code(), StatusCode::kUnavailable) << floor.status().to_string();
  EXPECT_NE(floor.status().message().find("replay"), std::string::npos) << floor.status().to_string();
  EXPECT_EQ((*pool)->evaluator(0).status().workers_started, 1u) << "the worker was kept";
}

TEST_F(WorkerPoolTest, QueuedCandidatesCanBeCancelledAndWaitAnyTimesOut) {
  auto journal = dir_ / "journal.txt";
  auto pool = WorkerPool::start({fault_options(journal)});
  ASSERT_TRUE(pool.ok()) << pool.status().to_string();
  std::vector<std::uint64_t> tickets;
  for (int i = 0; i < 5; ++i)
    tickets.push_back(
        (*pool)->submit({&fault_template(), small_problem(), fault_config(kNone, i, 500), 0}));
  EXPECT_FALSE((*pool)->wait_any(std::chrono::milliseconds(50)).has_value())
      << "nothing finished yet";
  while ((*pool)->in_flight() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto cancelled = (*pool)->cancel_queued();
  EXPECT_EQ(cancelled.size(), 4u);
  auto r = (*pool)->wait_any();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->ticket, tickets[0]);
  EXPECT_TRUE(r->evaluation.ok());
  EXPECT_FALSE((*pool)->wait_any().has_value()) << "nothing outstanding: returns at once";
  EXPECT_EQ(evaluations_by_id(journal).size(), 1u);
}

TEST_F(WorkerPoolTest, AStartFailureNamesTheDevice) {
  auto journal = dir_ / "journal.txt";
  auto marker = dir_ / "no_device";
  std::ofstream(marker) << "\n";
  std::vector<WorkerEvaluatorOptions> devices{
      fault_options(journal), fault_options(journal, {"--no-start-while", marker.string()})};
  devices[1].worker.device = 1;
  auto pool = WorkerPool::start(devices);
  ASSERT_FALSE(pool.ok());
  EXPECT_NE(pool.status().message().find("device 1 (fault:1)"), std::string::npos)
      << pool.status().message();
}

}  // namespace
}  // namespace tilesmith::worker
