// Soak: thousands of candidates through WorkerEvaluator on the replay backend (the real
// tilesmith-worker), with the orchestrator's resident memory and open descriptors
// sampled and printed. The bounds asserted are loose and not about time: memory growth
// under 50 MB, no descriptor leaked, no child left. TILESMITH_SOAK_CANDIDATES changes
// the count (default 10000); TILESMITH_SOAK_RECORDING replays that Kernel Tuner cache
// instead of the synthetic one (e.g. /work/shared/data/kernel_tuner_gemm/gemm_RTX_3090.json.gz).

#include <cstdlib>

#include <gtest/gtest.h>

#include "runtime/replay/recorded_template.h"
#include "runtime/replay/recording.h"
#include "runtime/worker/worker_evaluator.h"
#include "tests/worker/test_support.h"

namespace tilesmith::worker {
namespace {

using namespace testing;

TEST(WorkerSoak, ThousandsOfReplayCandidatesKeepTheOrchestratorFlat) {
  int count = 10000;
  if (const char* env = std::getenv("TILESMITH_SOAK_CANDIDATES"); env && *env)
    count = std::atoi(env);
  auto dir = test_dir();
  std::filesystem::path recording_path = write_recording(dir, 64);  // 4096 configurations
  const char* other = std::getenv("TILESMITH_SOAK_RECORDING");
  if (other && *other) recording_path = other;
  replay::RecordingOptions ro;
  ro.spaces_dir = dir / "no_space_files_here";  // as replay_options() tells the worker
  auto rec = replay::Recording::load(recording_path, ro);
  ASSERT_TRUE(rec.ok()) << rec.status().to_string();
  KernelTemplate tmpl = replay::recorded_template(**rec);
  GemmProblem problem = (*rec)->problem();
  const auto& records = (*rec)->records();

  const int fds0 = open_fd_count();
  {
    auto ev = WorkerEvaluator::start(replay_options(recording_path));
    ASSERT_TRUE(ev.ok()) << ev.status().to_string();
    std::vector<std::pair<int, long>> rss;
    std::vector<long> worker_rss;
    int ok = 0, failed = 0;
    // Warm-up: the compile helper starts with the first prepare (its pipes are not a leak).
    ASSERT_NE((*ev)->prepare(tmpl, problem, (*rec)->space().to_config(records[0].point)).outcome,
              Outcome::kCrash);
    const int fds_running = open_fd_count();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i) {
      // Every configuration once, then round again (repeats re-measure: a new draw).
      Config c = (*rec)->space().to_config(records[std::size_t(i) % records.size()].point);
      Evaluation e = (*ev)->evaluate(tmpl, problem, c);
      ASSERT_NE(e.outcome, Outcome::kCrash) << e.message;
      (e.ok() ? ok : failed)++;
      if (i % 20 == 0) {
        // Compile-ahead traffic too, through the compile helper.
        ASSERT_NE((*ev)->prepare(tmpl, problem, c).outcome, Outcome::kCrash);
      }
      if (i == 99 || (i + 1) % 500 == 0) {
        rss.emplace_back(i + 1, resident_bytes());
        worker_rss.push_back(process_resident_bytes((*ev)->status().worker_pid));
      }
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(open_fd_count(), fds_running) << "descriptors leaked while running";
    WorkerStatus s = (*ev)->status();
    std::printf(
        "soak: %d candidates (%d ok, %d recorded failures) in %.2f s (%.0f per second), workers "
        "started %llu\n",
        count, ok, failed, seconds, count / seconds, (unsigned long long)s.workers_started);
    for (std::size_t k = 0; k < rss.size(); ++k)
      std::printf("soak: after %5d candidates: orchestrator RSS %.2f MB, worker RSS %.2f MB\n",
                  rss[k].first, rss[k].second / 1e6, worker_rss[k] / 1e6);
    ASSERT_GE(rss.size(), 2u);
    const long growth = rss.back().second - rss.front().second;
    std::printf("soak: RSS growth from candidate 100 to %d: %+.2f MB\n", count, growth / 1e6);
    EXPECT_LT(growth, 50l << 20);
    std::printf("soak: worker RSS growth: %+.2f MB\n",
                (worker_rss.back() - worker_rss.front()) / 1e6);
    EXPECT_LT(worker_rss.back() - worker_rss.front(), 50l << 20);
    EXPECT_EQ(s.evaluations, std::uint64_t(count));
    EXPECT_EQ(s.workers_started, 1u);
    EXPECT_EQ(s.crashes + s.timeouts, 0u);
    EXPECT_GT(ok, 0);
    if (!other || !*other) {
      EXPECT_GT(failed, 0) << "the synthetic recording's failures replay too";
    }
  }
  EXPECT_EQ(open_fd_count(), fds0);
  std::string what;
  EXPECT_TRUE(no_children(&what)) << what;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tilesmith::worker
