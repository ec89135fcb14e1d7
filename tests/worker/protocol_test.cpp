// The worker protocol's pieces on their own: framing over real pipes (partial reads,
// garbage, oversized frames, a peer that stops mid-message), the JSON codecs on the wire
// (exact round trips; every field: tests/runtime/codec_test.cpp), child
// processes (signals, exit codes, process-group kills, reaping), SIGPIPE containment,
// the stderr tail, deadlines and the health tracker.

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/worker/child_process.h"
#include "runtime/worker/deadlines.h"
#include "runtime/worker/fd_io.h"
#include "runtime/worker/frame.h"
#include "runtime/worker/health.h"
#include "runtime/worker/wire.h"
#include "runtime/worker/worker_connection.h"
#include "tests/worker/test_support.h"

namespace tilesmith::worker {
namespace {

TEST(WorkerFrame, ArrivesWholeFromByteSizedWrites) {
  auto p = make_pipe();
  ASSERT_TRUE(p.ok());
  std::vector<std::string> sent = {"{\"a\":1}", "", std::string(200000, 'x'), "{\"last\":true}"};
  std::thread writer([&] {
    std::string all;
    for (const auto& m : sent) all += encode_frame(m);
    // One byte at a time for the first frames, then the rest: every split point.
    for (std::size_t i = 0; i < all.size();) {
      std::size_t n = i < 64 ? 1 : std::min<std::size_t>(4093, all.size() - i);
      ASSERT_TRUE(write_all(p->write.get(), std::string_view(all).substr(i, n)).ok());
      i += n;
    }
    p->write.reset();
  });
  FrameReader reader(p->read.get());
  for (const auto& m : sent) {
    auto got = reader.read();
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_TRUE(got->has_value());
    EXPECT_EQ(**got, m);
  }
  auto end = reader.read();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value()) << "clean end of file between frames";
  writer.join();
}

TEST(WorkerFrame, GarbageIsReportedAtItsFirstByte) {
  FrameDecoder d;
  std::string payload;
  d.feed("T", 1);
  EXPECT_EQ(d.next(&payload), FrameDecoder::State::kNeedMore);
  d.feed("x", 1);
  EXPECT_EQ(d.next(&payload), FrameDecoder::State::kError);
  EXPECT_NE(d.error().find("garbage"), std::string::npos) << d.error();
  EXPECT_EQ(d.next(&payload), FrameDecoder::State::kError) << "errors are sticky";
}

TEST(WorkerFrame, OversizedLengthIsRefusedWithoutAllocating) {
  FrameDecoder d;
  const unsigned char header[8] = {'T', 'S', 'W', '1', 0xff, 0xff, 0xff, 0x7f};
  d.feed(reinterpret_cast<const char*>(header), 8);
  std::string payload;
  EXPECT_EQ(d.next(&payload), FrameDecoder::State::kError);
  EXPECT_NE(d.error().find("exceeds the limit"), std::string::npos) << d.error();
}

TEST(WorkerFrame, EndOfFileMidMessageIsAnError) {
  auto p = make_pipe();
  ASSERT_TRUE(p.ok());
  std::string frame = encode_frame("{\"half\": \"of a message\"}");
  ASSERT_TRUE(write_all(p->write.get(), std::string_view(frame).substr(0, 12)).ok());
  p->write.reset();
  FrameReader reader(p->read.get());
  auto got = reader.read();
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("middle of a message"), std::string::npos)
      << got.status().message();
}

TEST(WorkerFrame, SeveralFramesInOneReadAreAllDelivered) {
  FrameDecoder d;
  std::string all = encode_frame("1") + encode_frame("22") + encode_frame("333");
  d.feed(all.data(), all.size());
  std::string p;
  for (const char* want : {"1", "22", "333"}) {
    ASSERT_EQ(d.next(&p), FrameDecoder::State::kFrame);
    EXPECT_EQ(p, want);
  }
  EXPECT_EQ(d.next(&p), FrameDecoder::State::kNeedMore);
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(WorkerFdIo, WritingToAClosedPipeIsAnErrorNotASignal) {
  auto p = make_pipe();
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(set_nonblocking(p->write.get()).ok());
  p->read.reset();
  Status st = write_all_until(p->write.get(), "hello", Clock::now() + std::chrono::seconds(1));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.to_string();
  // Still alive (the default SIGPIPE action would have ended the test), nothing pending.
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);
}

TEST(WorkerFdIo, PipesAreCloseOnExec) {
  auto p = make_pipe();
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(::fcntl(p->read.get(), F_GETFD) & FD_CLOEXEC);
  EXPECT_TRUE(::fcntl(p->write.get(), F_GETFD) & FD_CLOEXEC);
}

Evaluation full_evaluation() {
  Evaluation e;
  e.outcome = Outcome::kWrongResult;
  e.message = "42 of 4096 over tolerance; \"quoted\" and \xce\xbb";
  e.compile_log = "ptxas info: Used 40 registers\nline two";
  e.compile_ms = 123.25;
  e.compile_cache_hit = true;
  e.resources = {40, 8192, 1024, 16, 4, 8, 512};
  e.accuracy = {true,
                std::numeric_limits<double>::quiet_NaN(),
                std::numeric_limits<double>::infinity(),
                -std::numeric_limits<double>::infinity(),
                17,
                42,
                1e-5};
  e.timing = {37, 1.5, 1.25, 1.375, 1.625, 1.5125, 0.0125, 25.5, true};
  e.tflops = 12.5;
  e.gbps = 800.25;
  e.roofline_bound_tflops = 60;
  e.roofline_pct = 20.8;
  return e;
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

TEST(WorkerWire, EvaluationRoundTripsExactlyWithNonFiniteFigures) {
  Evaluation e = full_evaluation();
  std::string text = nlohmann::json(e).dump();
  auto back = evaluation_from_json(nlohmann::json::parse(text));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->outcome, e.outcome);
  EXPECT_EQ(back->message, e.message);
  EXPECT_EQ(back->compile_log, e.compile_log);
  EXPECT_EQ(back->compile_ms, e.compile_ms);
  EXPECT_EQ(back->compile_cache_hit, e.compile_cache_hit);
  EXPECT_EQ(back->resources.registers, 40);
  EXPECT_EQ(back->resources.static_shared_bytes, 8192);
  EXPECT_EQ(back->resources.dynamic_shared_bytes, 1024);
  EXPECT_EQ(back->resources.local_bytes, 16);
  EXPECT_EQ(back->resources.spill_store_bytes, 4);
  EXPECT_EQ(back->resources.spill_load_bytes, 8);
  EXPECT_EQ(back->resources.max_threads_per_block, 512);
  EXPECT_TRUE(back->accuracy.checked);
  EXPECT_TRUE(std::isnan(back->accuracy.max_abs_error));
  EXPECT_EQ(back->accuracy.rel_error_norm, std::numeric_limits<double>::infinity());
  EXPECT_EQ(back->accuracy.worst_tolerance_ratio, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(back->accuracy.non_finite, 17);
  EXPECT_EQ(back->accuracy.over_tolerance, 42);
  EXPECT_EQ(back->accuracy.norm_tolerance, 1e-5);
  EXPECT_EQ(back->timing.samples, 37);
  for (auto [a, b] : {std::pair{back->timing.median_ms, e.timing.median_ms},
                      {back->timing.min_ms, e.timing.min_ms},
                      {back->timing.p20_ms, e.timing.p20_ms},
                      {back->timing.p80_ms, e.timing.p80_ms},
                      {back->timing.mean_ms, e.timing.mean_ms},
                      {back->timing.cv, e.timing.cv},
                      {back->timing.warmup_ms, e.timing.warmup_ms},
                      {back->tflops, e.tflops},
                      {back->gbps, e.gbps},
                      {back->roofline_bound_tflops, e.roofline_bound_tflops},
                      {back->roofline_pct, e.roofline_pct}})
    EXPECT_TRUE(same(a, b)) << a << " vs " << b;
  EXPECT_TRUE(back->timing.l2_flushed);
}

TEST(WorkerWire, DeviceFactsRoundTrip) {
  DeviceFacts d = nominal_facts_for_arch("gfx90a");
  d.ordinal = 3;
  d.name = "AMD Instinct MI250X";
  d.multiprocessors = 110;
  d.l2_bytes = 8 << 20;
  d.global_memory_bytes = 64ll << 30;
  d.clock_khz = 1700000;
  d.memory_clock_khz = 1600000;
  d.memory_bus_bits = 4096;
  d.registers_per_multiprocessor = 131072;
  d.driver_version = "50221153";
  d.runtime_version = "hiprtc (ROCm 5.2.3)";
  auto back = device_facts_from_json(nlohmann::json::parse(nlohmann::json(d).dump()));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->fingerprint(), d.fingerprint());
  EXPECT_EQ(back->memory_bus_bits, 4096);
  EXPECT_EQ(back->memory_clock_khz, 1600000);
  EXPECT_EQ(back->registers_per_multiprocessor, 131072);
  EXPECT_EQ(back->warp_size, 64);
  EXPECT_EQ(back->shared_per_block_optin, d.shared_per_block_optin);
  EXPECT_EQ(back->fp32_peak_flops(), d.fp32_peak_flops());
}

TEST(WorkerWire, WrongTypesAreParseErrors) {
  nlohmann::json j = nlohmann::json(full_evaluation());
  j["timing"]["samples"] = "many";
  EXPECT_EQ(evaluation_from_json(j).status().code(), StatusCode::kParseError);
  j = nlohmann::json(full_evaluation());
  j["outcome"] = "exploded";
  EXPECT_EQ(evaluation_from_json(j).status().code(), StatusCode::kParseError);
  EXPECT_FALSE(evaluation_from_json(nlohmann::json::array()).ok());
  EXPECT_FALSE(device_facts_from_json(nlohmann::json{{"name", 3}}).ok());
  EXPECT_FALSE(parse_message("[1,2]").ok());
  EXPECT_FALSE(parse_message("{not json").ok());
}

TEST(WorkerWire, StatusAndCandidateRequestRoundTrip) {
  Status st = status_from_wire(status_to_wire(Status::unavailable("no GPU")));
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_EQ(st.message(), "no GPU");
  EXPECT_TRUE(status_from_wire(status_to_wire(Status())).ok());
  EXPECT_EQ(status_from_wire(nlohmann::json{{"code", "weird"}}).code(), StatusCode::kInternal);

  const KernelTemplate& t = testing::fault_template();
  GemmProblem p = testing::small_problem();
  p.alpha = 0.5;
  Config c = testing::fault_config(testing::kAbort, 17, 20);
  auto req = parse_candidate_request(
      nlohmann::json::parse(make_candidate_request(kEvaluate, 9, t, p, c).dump()));
  ASSERT_TRUE(req.ok()) << req.status().to_string();
  EXPECT_EQ(req->id, 9u);
  EXPECT_EQ(req->tmpl.name, "fault_process");
  EXPECT_EQ(req->tmpl.source_hash, t.source_hash());
  EXPECT_EQ(req->problem.key(), p.key());
  EXPECT_EQ(req->config, c);
  EXPECT_EQ(req->race_ms, 0) << "no race bound: sampled in full";
  // A race bound travels with the candidate; a bad one is refused.
  auto raced = parse_candidate_request(nlohmann::json::parse(make_candidate_request(kEvaluate, 10, t, p, c, 1.25).dump()));
  ASSERT_TRUE(raced.ok()) << raced.status().to_string();
  EXPECT_EQ(raced->race_ms, 1.25);
  auto bad = make_candidate_request(kEvaluate, 11, t, p, c);
  bad["race_ms"] = "fast";
  EXPECT_EQ(parse_candidate_request(bad).status().code(), StatusCode::kParseError);
}

TEST(WorkerChildProcess, ReportsSignalsAndExitCodes) {
  auto run = [](const char* script) {
    SpawnSpec s{{"/bin/sh", "-c", script}, {}, 0, 1, 2};
    auto c = ChildProcess::spawn(s);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    c->wait_for_exit(std::chrono::seconds(10));
    EXPECT_TRUE(c->reaped());
    return describe_wait_status(c->wait_status());
  };
  EXPECT_EQ(run("exit 3"), "exited with code 3");
  EXPECT_NE(run("kill -SEGV $$").find("SIGSEGV"), std::string::npos);
  EXPECT_NE(run("kill -ABRT $$").find("SIGABRT"), std::string::npos);
  std::string dummy;
  EXPECT_TRUE(testing::no_children(&dummy)) << dummy;
}

TEST(WorkerChildProcess, KillTakesTheWholeGroupAndReaps) {
  auto p = make_pipe();
  ASSERT_TRUE(p.ok());
  // The child starts a grandchild in its group and prints its pid.
  SpawnSpec s{{"/bin/sh", "-c", "sleep 300 & echo $!; wait"}, {}, 0, p->write.get(), 2};
  auto c = ChildProcess::spawn(s);
  ASSERT_TRUE(c.ok());
  p->write.reset();
  char buf[64] = {};
  ASSERT_GT(read_some(p->read.get(), buf, sizeof buf - 1), 0);
  pid_t grandchild = std::atoi(buf);
  ASSERT_GT(grandchild, 0);
  EXPECT_EQ(::getpgid(c->pid()), c->pid()) << "the child leads its own group";
  EXPECT_EQ(::getpgid(grandchild), c->pid());
  EXPECT_TRUE(c->kill_and_reap()) << "it was running";
  EXPECT_TRUE(c->reaped());
  // The grandchild (reparented, reaped by init) disappears.
  // Dead means gone, or a zombie waiting for whoever adopted it (a container's init
  // may reap late).
  auto dead = [](pid_t pid) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_text, comm, state;
    stat >> pid_text >> comm >> state;
    return state == "Z";
  };
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = dead(grandchild);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "grandchild " << grandchild << " survived the group kill";
  std::string what;
  EXPECT_TRUE(testing::no_children(&what)) << what;
}

TEST(WorkerChildProcess, MissingExecutableIsAStatus) {
  SpawnSpec s{{"/nonexistent/tilesmith-worker"}, {}, 0, 1, 2};
  auto c = ChildProcess::spawn(s);
  // glibc reports exec failure from posix_spawn; either way nothing may be left behind.
  if (c.ok()) {
    c->wait_for_exit(std::chrono::seconds(5));
    EXPECT_EQ(describe_wait_status(c->wait_status()), "exited with code 127");
  } else {
    EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  }
  std::string what;
  EXPECT_TRUE(testing::no_children(&what)) << what;
}

TEST(WorkerLineTail, KeepsTheLastLinesAndCutsLongOnes) {
  LineTail tail(3);
  std::vector<std::string> seen;
  auto sink = [&](const std::string& l) { seen.push_back(l); };
  std::string text = "one\ntwo\nthr";
  tail.feed(text.data(), text.size(), sink);
  text = "ee\nfour\n" + std::string(5000, 'z') + "\nfive";
  tail.feed(text.data(), text.size(), sink);
  tail.flush(sink);
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen[2], "three");
  ASSERT_EQ(tail.lines().size(), 3u);
  EXPECT_EQ(tail.lines()[0], "four");
  EXPECT_LT(tail.lines()[1].size(), 2100u);
  EXPECT_NE(tail.lines()[1].find("[cut]"), std::string::npos);
  EXPECT_EQ(tail.lines()[2], "five");
}

TEST(WorkerDeadlines, FloorsScalingAndFirstUseAllowance) {
  TimingOptions timing;  // 25 ms warm-up, 1500 ms sampling cap, 20 samples
  DeadlineOptions o;
  DeadlinePolicy p(o, timing);
  GemmProblem big;
  big.m = big.n = big.k = 4096;
  EXPECT_EQ(p.compile(), std::chrono::seconds(60));
  EXPECT_EQ(p.run(&big, false), std::chrono::seconds(30)) << "the floor while no time is known";
  // CPU reference for 4096^3 at 5 GFLOP/s: 27.5 s, plus 2 s.
  EXPECT_NEAR(p.run(&big, true).count() / 1000.0, 30 + 2 * 4096.0 * 4096 * 4096 / 5e9 + 2, 0.01);
  p.note_kernel_ms(big, 200);  // a slow problem: 10 x (25 + 1500 + 42 x 200) ms = 99.25 s
  EXPECT_NEAR(p.run(&big, false).count() / 1000.0, 99.25, 0.01);
  p.note_kernel_ms(big, 400);  // the best stays
  EXPECT_EQ(p.expected_kernel_ms(big), 200);
  GemmProblem other = big;
  other.k = 1024;
  EXPECT_EQ(p.run(&other, false), std::chrono::seconds(30)) << "times are per problem";
  p.note_compile_ms(9000);
  EXPECT_EQ(p.compile(), std::chrono::seconds(90));
  EXPECT_EQ(p.run(nullptr, true), std::chrono::seconds(30));

  o.compile_s = 1.5;
  o.run_s = 2;
  DeadlinePolicy fixed(o, timing);
  fixed.note_kernel_ms(big, 1000);
  EXPECT_EQ(fixed.compile(), std::chrono::milliseconds(1500));
  EXPECT_EQ(fixed.run(&big, false), std::chrono::seconds(2));
}

TEST(WorkerHealth, CheckAfterLossesInARowAndCappedExponentialBackoff) {
  HealthOptions o;
  o.backoff_initial_s = 5;
  o.backoff_max_s = 30;
  HealthTracker h(o);
  auto t0 = HealthTracker::Clock::now();
  h.on_worker_lost();
  h.on_worker_lost();
  h.on_candidate_completed();  // a success in between resets the count
  h.on_worker_lost();
  h.on_worker_lost();
  EXPECT_FALSE(h.check_due());
  h.on_worker_lost();
  EXPECT_TRUE(h.check_due());
  std::vector<double> waits;
  for (int i = 0; i < 5; ++i) {
    h.on_check_failed(t0);
    waits.push_back(h.last_backoff_s());
    EXPECT_TRUE(h.backing_off(t0));
    EXPECT_TRUE(h.check_due());
  }
  EXPECT_EQ(waits, (std::vector<double>{5, 10, 20, 30, 30}));
  EXPECT_FALSE(h.backing_off(t0 + std::chrono::seconds(31)));
  h.on_check_passed();
  EXPECT_FALSE(h.check_due());
  EXPECT_EQ(h.consecutive_losses(), 0);
}

}  // namespace
}  // namespace tilesmith::worker
