// A run's history as a Kernel Tuner cache (tuner/records/history_recording.h): what it
// keeps, what it refuses, and that the replay backend answers from the file as the GPU
// answered; and the recordings of tilesmith's own templates in data/recordings.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "registry/config.h"
#include "runtime/replay/compressed_file.h"
#include "runtime/replay/recorded_template.h"
#include "runtime/replay/recording.h"
#include "runtime/replay/replay_evaluator.h"
#include "tuner/records/history_recording.h"

namespace tilesmith {
namespace {

namespace fs = std::filesystem;

GemmProblem bf16_problem() {
  GemmProblem p;
  p.m = 128, p.n = 4096, p.k = 4096;
  p.a_type = p.b_type = p.c_type = DType::kBF16;
  p.b_layout = Layout::kColMajor;  // NT
  return p;
}

HistoryRow row(std::int64_t n, const Config& cfg, Outcome outcome, double median_ms,
               const GemmProblem& p = bf16_problem(), const std::string& tmpl = "gemm_x") {
  HistoryRow r;
  r.row = n;
  r.run_id = "run1";
  r.template_name = tmpl;
  r.template_hash = "0123456789abcdef";
  r.m = p.m, r.n = p.n, r.k = p.k;
  r.dtype = dtype_name(p.a_type);
  r.c_dtype = dtype_name(p.c_type);
  r.layout = p.layout_code();
  r.c_layout = p.c_layout == Layout::kRowMajor ? "row" : "col";
  r.alpha = p.alpha, r.beta = p.beta;
  r.epilogue = epilogue_name(p.epilogue);
  r.problem_key = p.key();
  r.config = config_to_json_text(cfg);
  r.config_hash = config_hash(cfg);
  r.outcome = outcome;
  if (outcome == Outcome::kOk) r.median_ms = median_ms;
  r.compile_ms = 100 + n;
  r.backend = "cuda";
  r.device = "cuda:0";
  r.device_name = "NVIDIA H200";
  r.device_arch = "sm_90";
  return r;
}

std::vector<HistoryRow> sample_rows() {
  return {row(1, {{"A", 1}, {"B", 8}}, Outcome::kOk, 0.5),
          row(2, {{"A", 2}, {"B", 8}}, Outcome::kOk, 0.25),
          row(3, {{"A", 4}, {"B", 16}}, Outcome::kResourceError, 0),
          row(4, {{"A", 2}, {"B", 16}}, Outcome::kWrongResult, 0),
          // The end-of-run re-timing of row 2: not a second record.
          row(5, {{"A", 2}, {"B", 8}}, Outcome::kOk, 0.26)};
}

TEST(HistoryRecording, KeepsEveryConfigurationItsTimeOrOutcomeAndTheWholeProblem) {
  auto cache = kernel_tuner_cache_from_history(sample_rows(), "");
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  EXPECT_EQ(cache->kernel_name, "gemm_x");
  EXPECT_EQ(cache->device_name, "NVIDIA H200");
  EXPECT_EQ(cache->param_names, (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(cache->param_values, (std::vector<std::vector<std::int64_t>>{{1, 2, 4}, {8, 16}}));
  ASSERT_EQ(cache->records.size(), 4u);
  EXPECT_DOUBLE_EQ(cache->records[1].time_ms, 0.25);  // the first measurement, not the re-timing
  EXPECT_EQ(cache->records[2].outcome, Outcome::kResourceError);
  EXPECT_EQ(cache->records[3].outcome, Outcome::kWrongResult);
  ASSERT_TRUE(cache->problem.has_value());
  EXPECT_EQ(cache->problem->key(), bf16_problem().key());

  // Through the file format and back: the same records, outcomes named exactly.
  const std::string text = replay::kernel_tuner_cache_to_json_text(*cache);
  EXPECT_NE(text.find("\"RuntimeFailedConfig\""), std::string::npos);  // Kernel Tuner's own marker
  auto back = replay::parse_kernel_tuner_cache(text, "test");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->records.size(), 4u);
  std::map<std::string, Outcome> outcomes;
  for (const auto& r : back->records)
    outcomes[std::to_string(r.point[0]) + "," + std::to_string(r.point[1])] = r.outcome;
  EXPECT_EQ(outcomes["4,16"], Outcome::kResourceError);
  EXPECT_EQ(outcomes["2,16"], Outcome::kWrongResult);
  EXPECT_EQ(outcomes["2,8"], Outcome::kOk);
  ASSERT_TRUE(back->problem.has_value());
  EXPECT_EQ(back->problem->key(), bf16_problem().key());
  ASSERT_TRUE(back->device.has_value());
  EXPECT_EQ(back->device->arch, "sm_90");
  EXPECT_EQ(back->template_hash, "0123456789abcdef");
}

TEST(HistoryRecording, TheReplayAnswersAsTheGpuDidAndOnlyForTheRecordedProblem) {
  auto cache = kernel_tuner_cache_from_history(sample_rows(), "gemm_x");
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  const fs::path file = fs::temp_directory_path() / "tilesmith_history_recording_test.json.gz";
  ASSERT_TRUE(replay::write_maybe_gzip(file, replay::kernel_tuner_cache_to_json_text(*cache)).ok());
  auto rec = replay::Recording::load(file, {.space_file = {}, .spaces_dir = {}, .find_space_file = false});
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  EXPECT_TRUE((*rec)->knows_whole_problem());
  EXPECT_EQ((*rec)->problem().key(), bf16_problem().key());
  replay::ReplayEvaluator eval(*rec, 1);
  const KernelTemplate tmpl = replay::recorded_template(**rec);
  Evaluation ok = eval.evaluate(tmpl, bf16_problem(), {{"A", 2}, {"B", 8}});
  EXPECT_EQ(ok.outcome, Outcome::kOk) << ok.message;
  EXPECT_DOUBLE_EQ(ok.timing.median_ms, 0.25);
  EXPECT_EQ(eval.evaluate(tmpl, bf16_problem(), {{"A", 2}, {"B", 16}}).outcome, Outcome::kWrongResult);
  // Never measured: not an answer.
  EXPECT_EQ(eval.evaluate(tmpl, bf16_problem(), {{"A", 1}, {"B", 16}}).outcome, Outcome::kInvalid);
  // Same sizes, other data type: the recording does not answer for it.
  GemmProblem fp32 = bf16_problem();
  fp32.a_type = fp32.b_type = fp32.c_type = DType::kF32;
  Evaluation other = eval.evaluate(tmpl, fp32, {{"A", 2}, {"B", 8}});
  EXPECT_EQ(other.outcome, Outcome::kInvalid);
  EXPECT_NE(other.message.find("bf16"), std::string::npos) << other.message;
  fs::remove(file);
}

// The vendor's time comes back from the rows' ratios (ratio = vendor ms / our ms), and a
// replay of the file answers vendor_baseline with it.
TEST(HistoryRecording, CarriesTheVendorTimeTheRunMeasured) {
  std::vector<HistoryRow> rows = sample_rows();
  rows[0].vendor_ratio = 0.4 / 0.5;
  rows[1].vendor_ratio = 0.4 / 0.25;
  rows[4].vendor_ratio = 0.4 / 0.26;
  auto cache = kernel_tuner_cache_from_history(rows, "gemm_x");
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  ASSERT_TRUE(cache->vendor_median_ms);
  EXPECT_NEAR(*cache->vendor_median_ms, 0.4, 1e-12);
  const fs::path file = fs::temp_directory_path() / "tilesmith_history_recording_vendor_test.json.gz";
  ASSERT_TRUE(replay::write_maybe_gzip(file, replay::kernel_tuner_cache_to_json_text(*cache)).ok());
  auto rec = replay::Recording::load(file, {.space_file = {}, .spaces_dir = {}, .find_space_file = false});
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  replay::ReplayEvaluator eval(*rec, 1);
  auto v = eval.vendor_baseline(bf16_problem());
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_NEAR(v->timing.median_ms, 0.4, 1e-12);
  // Rows without a ratio (a run with --no-vendor): no vendor line, not a made-up one.
  auto none = kernel_tuner_cache_from_history(sample_rows(), "gemm_x");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->vendor_median_ms);
  fs::remove(file);
}

TEST(HistoryRecording, RefusesWhatIsNotOneMeasuredSpace) {
  auto none = kernel_tuner_cache_from_history({}, "");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no evaluated rows"), std::string::npos);

  auto rows = sample_rows();
  rows.push_back(row(6, {{"A", 1}}, Outcome::kOk, 1.0, bf16_problem(), "gemm_y"));
  auto two = kernel_tuner_cache_from_history(rows, "");
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("--template"), std::string::npos) << two.status().message();
  EXPECT_TRUE(kernel_tuner_cache_from_history(rows, "gemm_x").ok());
  auto missing = kernel_tuner_cache_from_history(rows, "gemm_z");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("gemm_z"), std::string::npos);

  GemmProblem square = bf16_problem();
  square.m = 4096;
  auto mixed = sample_rows();
  mixed.push_back(row(6, {{"A", 1}, {"B", 16}}, Outcome::kOk, 1.0, square));
  auto refused = kernel_tuner_cache_from_history(mixed, "");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("differ in problem"), std::string::npos) << refused.status().message();
}

// The spaces recorded on an H200 and on an H100 (data/recordings/README.md): each loads as a
// replay of the whole problem it names, with what the README says it holds.
TEST(HistoryRecording, TheRecordedSpacesOfOurTemplatesLoad) {
  struct Expect {
    const char* file;
    const char* problem_start;
    std::size_t configs;
    const char* device;
  };
  const char* h200 = "NVIDIA H200";
  const char* h100 = "NVIDIA H100 80GB HBM3";
  const Expect expected[] = {
      {"gemm_wgmma_fp32_128x4096x4096_H200.json.gz", "128x4096x4096 fp32 NN", 1035, h200},
      {"gemm_wgmma_fp32_4096x4096x4096_H200.json.gz", "4096x4096x4096 fp32 NN", 502, h200},
      {"gemm_wgmma_half_bf16_128x4096x4096_H200.json.gz", "128x4096x4096 bf16 NN", 1518, h200},
      {"gemm_wgmma_half_bf16_4096x4096x4096_H200.json.gz", "4096x4096x4096 bf16 NN", 776, h200},
      {"gemm_wgmma_fp32_128x4096x4096_H100.json.gz", "128x4096x4096 fp32 NN", 1035, h100},
      {"gemm_wgmma_fp32_4096x4096x4096_H100.json.gz", "4096x4096x4096 fp32 NN", 1088, h100},
      {"gemm_wgmma_half_bf16_128x4096x4096_H100.json.gz", "128x4096x4096 bf16 NN", 1518, h100},
      {"gemm_wgmma_half_bf16_4096x4096x4096_H100.json.gz", "4096x4096x4096 bf16 NN", 3096, h100},
      {"bf16_4096_H100_run318/gemm_tma_half_bf16_4096x4096x4096_H100.json.gz", "4096x4096x4096 bf16 NN", 3872, h100},
      {"bf16_4096_H100_run318/gemm_hmma_bf16_4096x4096x4096_H100.json.gz", "4096x4096x4096 bf16 NN", 1087, h100},
  };
  for (const Expect& e : expected) {
    const fs::path file = fs::path(TILESMITH_SOURCE_DIR) / "data" / "recordings" / e.file;
    auto rec = replay::Recording::load(file);
    ASSERT_TRUE(rec.ok()) << e.file << ": " << rec.status().message();
    EXPECT_TRUE((*rec)->knows_whole_problem()) << e.file;
    EXPECT_EQ((*rec)->problem().describe().rfind(e.problem_start, 0), 0u) << (*rec)->problem().describe();
    EXPECT_EQ((*rec)->size(), e.configs) << e.file;
    EXPECT_EQ((*rec)->device_name(), e.device) << e.file;
  }
}

}  // namespace
}  // namespace tilesmith
