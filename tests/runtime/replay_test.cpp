#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/replay/compressed_file.h"
#include "runtime/replay/recorded_template.h"
#include "runtime/replay/recording.h"
#include "runtime/replay/replay_evaluator.h"
#include "runtime/replay/replay_set.h"

namespace tilesmith::replay {
namespace {

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("TILESMITH_KT_DATA"); env && *env) return env;
  return TILESMITH_KT_DATA_DIR;
}

std::filesystem::path spaces_dir() {
  return std::filesystem::path(TILESMITH_SOURCE_DIR) / "data" / "spaces";
}

std::filesystem::path temp_dir() {
  auto dir = std::filesystem::temp_directory_path() /
             ("tilesmith_replay_test_" +
              std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(dir);
  return dir;
}

void write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// Loaded once per process: parsing a 16 MB cache takes a fraction of a second.
std::shared_ptr<const Recording> rtx3090() {
  static std::shared_ptr<const Recording> rec = [] {
    RecordingOptions o;
    o.spaces_dir = spaces_dir();
    auto r = Recording::load(data_dir() / "gemm_RTX_3090.json.gz", o);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : nullptr;
  }();
  return rec;
}

#define REQUIRE_DATA()                                                \
  if (!std::filesystem::exists(data_dir() / "gemm_RTX_3090.json.gz")) \
  GTEST_SKIP() << "recorded caches not found in " << data_dir() << " (set TILESMITH_KT_DATA)"

// A small synthetic cache: 2 parameters, one failed configuration, one missing one.
const char* kSmallCache = R"js({
  "device_name": "Test GPU", "kernel_name": "tiny", "problem_size": [256, 128], "objective": "time",
  "tune_params_keys": ["A", "B"],
  "tune_params": {"A": [1, 2], "B": [10, 20]},
  "cache": {
    "1,10": {"A": 1, "B": 10, "time": 2.0, "times": [1.9, 2.0, 2.1], "compile_time": 12.5},
    "1,20": {"A": 1, "B": 20, "time": 1.0, "times": [1.0, 1.0, 1.0], "compile_time": 3.0},
    "2,10": {"A": 2, "B": 10, "time": "CompilationFailedConfig", "compile_time": 1.0}
  }
})js";

TEST(Replay, LoadsGzipAndPlainAlike) {
  REQUIRE_DATA();
  auto gz = rtx3090();
  ASSERT_TRUE(gz);
  auto text = read_maybe_gzip(data_dir() / "gemm_RTX_3090.json.gz");
  ASSERT_TRUE(text.ok());
  ASSERT_EQ(text->front(), '{');
  auto plain_path = temp_dir() / "gemm_RTX_3090.json";
  write(plain_path, *text);
  RecordingOptions o;
  o.spaces_dir = spaces_dir();
  auto plain = Recording::load(plain_path, o);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_EQ((*plain)->name(), "gemm_RTX_3090");
  EXPECT_EQ(gz->name(), "gemm_RTX_3090");
  EXPECT_EQ((*plain)->size(), gz->size());
  EXPECT_EQ((*plain)->optimum_ms(), gz->optimum_ms());
  EXPECT_EQ((*plain)->sorted_times_ms(), gz->sorted_times_ms());
  std::filesystem::remove_all(plain_path.parent_path());
}

TEST(Replay, RecordingFacts) {
  REQUIRE_DATA();
  auto rec = rtx3090();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->size(), 17956u);
  EXPECT_EQ(rec->kernel_name(), "Xgemm");
  EXPECT_EQ(rec->device_name(), "NVIDIA GeForce RTX 3090");
  EXPECT_NEAR(rec->optimum_ms(), 5.658, 0.001);
  EXPECT_EQ(rec->count_within(1.05), 6u);  // the data README's figure
  EXPECT_EQ(rec->sorted_times_ms().size(), 17956u);
  EXPECT_EQ(rec->sorted_times_ms().front(), rec->optimum_ms());
  double median = rec->sorted_times_ms()[rec->sorted_times_ms().size() / 2];
  EXPECT_NEAR(median / rec->optimum_ms(), 2.58, 0.01);
  EXPECT_EQ(rec->problem().m, 4096);
  EXPECT_EQ(rec->problem().k, 4096);
  DeviceFacts d = rec->device();
  EXPECT_EQ(d.backend, "replay");
  EXPECT_EQ(d.name, "NVIDIA GeForce RTX 3090");
  EXPECT_EQ(d.arch, "recorded");
  EXPECT_FALSE(rec->launch_device()) << "Kernel Tuner's own file does not describe its GPU";
}

TEST(Replay, OkOutcomeFromTheRecording) {
  REQUIRE_DATA();
  auto rec = rtx3090();
  ASSERT_TRUE(rec);
  ReplayEvaluator ev(rec, 42);
  KernelTemplate tmpl = recorded_template(*rec);
  EXPECT_TRUE(tmpl.is_recorded());
  EXPECT_EQ(tmpl.name(), rec->name());
  const KernelTunerRecord& best = rec->optimum();
  Config cfg = rec->space().to_config(best.point);
  Evaluation e = ev.evaluate(tmpl, rec->problem(), cfg);
  ASSERT_EQ(e.outcome, Outcome::kOk) << e.message;
  auto [lo, hi] = std::minmax_element(best.times_ms.begin(), best.times_ms.end());
  EXPECT_GE(e.timing.median_ms, *lo);
  EXPECT_LE(e.timing.median_ms, *hi);
  EXPECT_GE(e.timing.min_ms, *lo);
  EXPECT_EQ(e.timing.samples, static_cast<int>(best.times_ms.size()));
  EXPECT_LE(e.timing.p20_ms, e.timing.median_ms);
  EXPECT_GE(e.timing.p80_ms, e.timing.median_ms);
  EXPECT_NEAR(e.tflops, 2.0 * 4096.0 * 4096 * 4096 / (e.timing.median_ms * 1e-3) / 1e12, 1e-9);
  EXPECT_GT(e.tflops, 20);  // about 24 TFLOP/s on an RTX 3090
  EXPECT_EQ(e.compile_ms, best.compile_ms);
  EXPECT_EQ(ev.device().backend, "replay");
  EXPECT_TRUE(ev.prepare(tmpl, rec->problem(), cfg).ok());
  // K from the problem when it gives one.
  GemmProblem half_k = rec->problem();
  half_k.k = 2048;
  EXPECT_NEAR(ev.evaluate(tmpl, half_k, cfg).tflops * 2, e.tflops, e.tflops * 0.05);
}

TEST(Replay, InvalidOutcomes) {
  REQUIRE_DATA();
  auto rec = rtx3090();
  ASSERT_TRUE(rec);
  ReplayEvaluator ev(rec, 1);
  KernelTemplate tmpl = recorded_template(*rec);
  Config cfg = rec->space().to_config(rec->optimum().point);

  Config breaking = cfg;
  breaking["MWG"] = 16;
  breaking["MDIMC"] = 32;  // MWG % (MDIMC * VWM) != 0
  Evaluation e = ev.evaluate(tmpl, rec->problem(), breaking);
  EXPECT_EQ(e.outcome, Outcome::kInvalid);
  EXPECT_NE(e.message.find("breaks constraint"), std::string::npos) << e.message;
  EXPECT_EQ(ev.prepare(tmpl, rec->problem(), breaking).outcome, Outcome::kInvalid);

  Config off_domain = cfg;
  off_domain["MWG"] = 96;
  e = ev.evaluate(tmpl, rec->problem(), off_domain);
  EXPECT_EQ(e.outcome, Outcome::kInvalid);
  EXPECT_NE(e.message.find("MWG=96 is not one of"), std::string::npos) << e.message;

  Config unknown = cfg;
  unknown["BOGUS"] = 1;
  EXPECT_NE(ev.evaluate(tmpl, rec->problem(), unknown).message.find("unknown parameter 'BOGUS'"),
            std::string::npos);

  GemmProblem other = rec->problem();
  other.m = 1024;
  e = ev.evaluate(tmpl, other, cfg);
  EXPECT_EQ(e.outcome, Outcome::kInvalid);
  EXPECT_NE(e.message.find("4096x4096"), std::string::npos) << e.message;

  KernelTemplate stranger = KernelTemplate::recorded("someone_else", rec->space(), "");
  EXPECT_EQ(ev.evaluate(stranger, rec->problem(), cfg).outcome, Outcome::kInvalid);

  auto vendor = ev.vendor_baseline(rec->problem());
  ASSERT_FALSE(vendor.ok());
  EXPECT_EQ(vendor.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(vendor.status().message().find("holds no vendor time"), std::string::npos) << vendor.status().message();
}

TEST(Replay, DeterministicBySeedWhateverTheOrder) {
  REQUIRE_DATA();
  auto rec = rtx3090();
  ASSERT_TRUE(rec);
  KernelTemplate tmpl = recorded_template(*rec);
  std::vector<Config> configs;
  for (size_t i = 0; i < rec->records().size(); i += 997)
    configs.push_back(rec->space().to_config(rec->records()[i].point));
  ASSERT_GE(configs.size(), 10u);
  auto run = [&](std::uint64_t seed, bool reversed) {
    ReplayEvaluator ev(rec, seed);
    std::map<std::string, std::vector<double>> out;
    std::vector<Config> order = configs;
    if (reversed) std::reverse(order.begin(), order.end());
    for (int rep = 0; rep < 3; ++rep)
      for (const Config& c : order)
        out[config_to_json_text(c)].push_back(
            ev.evaluate(tmpl, rec->problem(), c).timing.median_ms);
    return out;
  };
  auto a = run(7, false);
  EXPECT_EQ(a, run(7, true));
  auto b = run(8, false);
  EXPECT_NE(a, b);
  // Repeated evaluations of one config vary (a re-measurement), within the recorded spread.
  int varied = 0;
  for (const auto& [k, v] : a) varied += (v[0] != v[1] || v[1] != v[2]);
  EXPECT_GT(varied, 0);
}

// Recordings of several shapes for a problem set: each answers for its own problem;
// recordings of one kernel at several problems are named after the kernel (so a set's
// templates carry over between problems), and a template is answered by its kernel's
// recording of the problem asked; names and devices are checked when they are loaded.
TEST(ReplaySet, EachRecordingAnswersForItsOwnProblem) {
  auto dir = temp_dir();
  std::string wide = kSmallCache;
  wide.replace(wide.find("[256, 128]"), 10, "[512, 512]");
  std::string other_gpu = kSmallCache;
  other_gpu.replace(other_gpu.find("Test GPU"), 8, "Other GPU");
  write(dir / "tiny.json", kSmallCache);
  write(dir / "tiny_512.json", wide);
  write(dir / "other.json", other_gpu);
  RecordingOptions o;
  o.spaces_dir = dir / "no_such_folder";

  auto same_name = load_recordings({dir / "tiny.json", dir / "tiny.json"}, o);
  ASSERT_FALSE(same_name.ok());
  EXPECT_NE(same_name.status().message().find("two recordings of 256x128x256 fp32 NN are named 'tiny'"),
            std::string::npos)
      << same_name.status().message();
  auto two_gpus = load_recordings({dir / "tiny.json", dir / "other.json"}, o);
  ASSERT_FALSE(two_gpus.ok());
  EXPECT_NE(two_gpus.status().message().find("different devices"), std::string::npos) << two_gpus.status().message();

  auto recs = load_recordings({dir / "tiny.json", dir / "tiny_512.json"}, o);
  ASSERT_TRUE(recs.ok()) << recs.status().to_string();
  GemmProblem p512;
  p512.m = p512.n = p512.k = 512;
  auto matching = recordings_for(*recs, p512);
  ASSERT_EQ(matching.size(), 1u);
  EXPECT_EQ(matching.front()->name(), "tiny") << "the kernel's name, recorded at two problems";
  EXPECT_EQ(matching.front()->origin(), (dir / "tiny_512.json").string());
  GemmProblem p256;
  p256.m = 256;
  p256.n = 128;
  p256.k = 256;
  ASSERT_EQ(recordings_for(*recs, p256).size(), 1u);
  EXPECT_EQ(recordings_for(*recs, p256).front()->name(), "tiny");
  GemmProblem p1024 = p512;
  p1024.m = p1024.n = p1024.k = 1024;
  EXPECT_TRUE(recordings_for(*recs, p1024).empty());
  GemmProblem bf16 = p512;
  bf16.a_type = bf16.b_type = DType::kBF16;
  EXPECT_TRUE(recordings_for(*recs, bf16).empty()) << "the recordings stand for fp32";

  ReplaySetEvaluator ev(*recs, 3);
  const KernelTemplate small = recorded_template(*(*recs)[0]);
  const KernelTemplate big = recorded_template(*(*recs)[1]);
  const Config cfg{{"A", 1}, {"B", 20}};
  EXPECT_EQ(ev.evaluate(big, p512, cfg).outcome, Outcome::kOk);
  // The kernel's template at 512: answered by the 512 recording, the same measurement.
  const Evaluation at512 = ev.evaluate(small, p512, cfg);
  EXPECT_EQ(at512.outcome, Outcome::kOk);
  EXPECT_EQ(ev.evaluate(small, p256, cfg).outcome, Outcome::kOk);
  Evaluation wrong = ev.evaluate(small, p1024, cfg);
  EXPECT_EQ(wrong.outcome, Outcome::kInvalid) << "a recording never answers for another shape";
  EXPECT_NE(wrong.message.find("no recording of tiny measured 1024x1024x1024"), std::string::npos) << wrong.message;
  // One kernel recorded at one problem keeps its file's name, and still answers for its shape only.
  auto single = load_recordings({dir / "tiny.json"}, o);
  ASSERT_TRUE(single.ok());
  EXPECT_EQ((*single)[0]->name(), "tiny");
  write(dir / "renamed.json", kSmallCache);
  auto one = load_recordings({dir / "renamed.json"}, o);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)[0]->name(), "renamed");
  ReplaySetEvaluator ev1(*one, 3);
  EXPECT_EQ(ev1.evaluate(recorded_template(*(*one)[0]), p512, cfg).outcome, Outcome::kInvalid);
  KernelTemplate unknown = recorded_template(**Recording::load(dir / "other.json", o));
  Evaluation none = ev.evaluate(unknown, p512, cfg);
  EXPECT_EQ(none.outcome, Outcome::kInvalid);
  EXPECT_NE(none.message.find("no recording named 'other'"), std::string::npos) << none.message;
}

TEST(Replay, FailuresAndMembershipWithoutASpaceFile) {
  auto dir = temp_dir();
  write(dir / "tiny.json", kSmallCache);
  RecordingOptions o;
  o.spaces_dir = dir / "no_such_folder";
  auto rec = Recording::load(dir / "tiny.json", o);
  ASSERT_TRUE(rec.ok()) << rec.status().to_string();
  const Recording& r = **rec;
  EXPECT_EQ(r.space_origin(), "membership in the recording");
  EXPECT_TRUE(r.space().is_restricted());
  // 2,20 was never measured: not valid. 2,10 failed to compile: valid, replays its failure.
  auto valid = r.space().enumerate_valid(r.context());
  EXPECT_EQ(valid, (std::vector<PointValues>{{1, 10}, {1, 20}, {2, 10}}));
  EXPECT_EQ(r.optimum_ms(), 1.0);
  EXPECT_EQ(r.problem().n, 128);
  EXPECT_EQ(r.problem().k, 256);

  ReplayEvaluator ev(*rec, 3);
  KernelTemplate tmpl = recorded_template(r);
  Evaluation failed = ev.evaluate(tmpl, {}, {{"A", 2}, {"B", 10}});
  EXPECT_EQ(failed.outcome, Outcome::kCompileError);
  EXPECT_NE(failed.message.find("CompilationFailedConfig"), std::string::npos);
  EXPECT_EQ(ev.prepare(tmpl, {}, {{"A", 2}, {"B", 10}}).outcome, Outcome::kCompileError);
  Evaluation missing = ev.evaluate(tmpl, {}, {{"A", 2}, {"B", 20}});
  EXPECT_EQ(missing.outcome, Outcome::kInvalid);
  EXPECT_FALSE(missing.message.empty());
  Evaluation ok = ev.evaluate(tmpl, {}, {{"A", 1}, {"B", 20}});
  ASSERT_TRUE(ok.ok()) << ok.message;
  EXPECT_EQ(ok.timing.median_ms, 1.0);
  EXPECT_EQ(ok.compile_ms, 3.0);
  EXPECT_NEAR(ok.tflops, 2.0 * 256 * 128 * 256 / 1e-3 / 1e12, 1e-12);
  std::filesystem::remove_all(dir);
}

TEST(Replay, SpaceFilesAreFoundByKernelNameAndChecked) {
  auto dir = temp_dir();
  write(dir / "tiny.json", kSmallCache);
  std::filesystem::create_directories(dir / "spaces");
  // Claims the kernel, but a constraint rejects a recorded configuration.
  write(dir / "spaces" / "tiny_space.json", R"js({"kernel_tuner": {"kernel_names": ["tiny"]},
    "parameters": [{"name": "A", "values": [1, 2], "description": "first"}, {"name": "B", "values": [10, 20]}],
    "constraints": ["B < 20"]})js");
  RecordingOptions o;
  o.spaces_dir = dir / "spaces";
  auto bad = Recording::load(dir / "tiny.json", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("rejects 1 configuration"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("breaks constraint 'B < 20'"), std::string::npos)
      << bad.status().message();

  // A sound one: admits 2,20 too, which was not recorded, so the space is restricted.
  write(dir / "spaces" / "tiny_space.json", R"js({"kernel_tuner": {"kernel_names": ["tiny"]},
    "parameters": [{"name": "A", "values": [1, 2], "description": "first"}, {"name": "B", "values": [10, 20]}],
    "constraints": ["A * B <= 40"]})js");
  auto good = Recording::load(dir / "tiny.json", o);
  ASSERT_TRUE(good.ok()) << good.status().to_string();
  EXPECT_NE((*good)->space_origin().find("tiny_space.json"), std::string::npos);
  EXPECT_EQ((*good)->unrecorded_valid(), 1u);
  EXPECT_TRUE((*good)->space().is_restricted());
  EXPECT_EQ((*good)->space().find("A")->description, "first");
  EXPECT_EQ((*good)->space().enumerate_valid((*good)->context()).size(), 3u);

  // An explicit space file must declare the recording's parameters.
  write(dir / "other.json", R"js({"parameters": [{"name": "A", "values": [1, 2]}]})js");
  o.space_file = dir / "other.json";
  auto wrong = Recording::load(dir / "tiny.json", o);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("missing: B"), std::string::npos)
      << wrong.status().message();

  // Not a cache at all.
  write(dir / "junk.json", "{\"cache\": 3");
  EXPECT_FALSE(Recording::load(dir / "junk.json").ok());
  EXPECT_EQ(Recording::load(dir / "absent.json.gz").status().code(), StatusCode::kNotFound);
  // A damaged file is bad input (exit code 2), named as such.
  auto text = read_maybe_gzip(dir / "junk.json");
  ASSERT_TRUE(text.ok());
  write(dir / "cut.json.gz", gzip_compress(std::string(kSmallCache)).substr(0, 40));
  auto cut = Recording::load(dir / "cut.json.gz");
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kParseError);
  EXPECT_NE(cut.status().message().find("is damaged"), std::string::npos) << cut.status().message();
  std::filesystem::remove_all(dir);
}

// A recording written with the vendor's time answers vendor_baseline for its own problem
// only, and a set evaluator asks the recording of the problem it is given.
TEST(Replay, RecordedVendorTimeAnswersForItsOwnProblem) {
  auto dir = temp_dir();
  auto cache = parse_kernel_tuner_cache(kSmallCache, "tiny");
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  GemmProblem p;
  p.m = 256;
  p.n = 128;
  p.k = 256;
  cache->problem = p;
  cache->vendor_median_ms = 1.25;
  cache->vendor_name = "cuBLASLt test";
  cache->math = "fma";
  DeviceFacts facts;
  facts.backend = "cuda";
  facts.name = cache->device_name;
  facts.arch = "sm_90";
  facts.multiprocessors = 132;
  facts.clock_khz = 1980000;
  cache->device = facts;
  const std::string text = kernel_tuner_cache_to_json_text(*cache);
  auto back = parse_kernel_tuner_cache(text, "tiny");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->math, "fma");
  {
    // The recorded template keeps the math and the replay's device the facts that bound it.
    RecordingOptions ro;
    ro.find_space_file = false;
    auto rec = Recording::from_cache(*back, "tiny", "tiny.json", ro);
    ASSERT_TRUE(rec.ok()) << rec.status().to_string();
    EXPECT_EQ(recorded_template(**rec).math(), "fma");
    EXPECT_EQ((*rec)->device().multiprocessors, 132);
    // For laying out a template's blocks: the recorded GPU, its shared memory at least the
    // architecture's (the facts above keep the 48 KiB default, as files of early versions did).
    ASSERT_TRUE((*rec)->launch_device());
    EXPECT_EQ((*rec)->launch_device()->arch, "sm_90");
    EXPECT_EQ((*rec)->launch_device()->multiprocessors, 132);
    EXPECT_EQ((*rec)->launch_device()->shared_per_block_optin, 227 * 1024);
    EXPECT_GT(recorded_template(**rec).fastest_possible_ms(p, (*rec)->device()), 0);
    auto wrong = text;
    wrong.replace(wrong.find("\"math\": \"fma\""), 13, "\"math\": \"mfm\"");
    EXPECT_FALSE(parse_kernel_tuner_cache(wrong, "tiny").ok());
  }
  ASSERT_TRUE(back->vendor_median_ms);
  EXPECT_DOUBLE_EQ(*back->vendor_median_ms, 1.25);
  EXPECT_EQ(back->vendor_name, "cuBLASLt test");
  write(dir / "with_vendor.json", text);
  write(dir / "without.json", kSmallCache);
  RecordingOptions o;
  o.spaces_dir = dir / "no_such_folder";
  auto recs = load_recordings({dir / "with_vendor.json"}, o);
  ASSERT_TRUE(recs.ok()) << recs.status().to_string();
  ReplaySetEvaluator set(*recs, 1);
  auto v = set.vendor_baseline(p);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_DOUBLE_EQ(v->timing.median_ms, 1.25);
  EXPECT_NEAR(v->tflops, p.flops() / 1.25e-3 / 1e12, 1e-9);
  GemmProblem other = p;
  other.m = 512;
  EXPECT_EQ(set.vendor_baseline(other).status().code(), StatusCode::kUnavailable);

  // A broken vendor object is refused, naming it.
  std::string broken = text;
  broken.replace(broken.find("1.25"), 4, "-1.0");
  auto bad = parse_kernel_tuner_cache(broken, "broken.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("tilesmith.vendor"), std::string::npos) << bad.status().message();
  std::filesystem::remove_all(dir);
}

// --replay-file may name a folder: every *.json and *.json.gz in it, in name order.
TEST(Replay, AFolderNamesEveryRecordingInIt) {
  auto dir = temp_dir();
  std::filesystem::create_directories(dir / "set" / "nested");
  write(dir / "set" / "b.json", kSmallCache);
  write(dir / "set" / "a.json.gz", gzip_compress(std::string(kSmallCache)));
  write(dir / "set" / "notes.txt", "not a recording");
  write(dir / "set" / "nested" / "c.json", kSmallCache);
  auto files = expand_recording_paths({dir / "set", dir / "set" / "nested" / "c.json"});
  ASSERT_TRUE(files.ok()) << files.status().to_string();
  ASSERT_EQ(files->size(), 3u);
  EXPECT_EQ((*files)[0].filename(), "a.json.gz");
  EXPECT_EQ((*files)[1].filename(), "b.json");
  EXPECT_EQ((*files)[2].filename(), "c.json");
  std::filesystem::create_directories(dir / "empty");
  auto empty = expand_recording_paths({dir / "empty"});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("holds no recording"), std::string::npos);
  EXPECT_EQ(expand_recording_paths({dir / "absent"}).status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tilesmith::replay
