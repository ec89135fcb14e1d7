#include "runtime/evaluation.h"

#include <nlohmann/json.hpp>

#include "analysis/stats.h"

namespace tilesmith {

TimingStats summarize_timing(std::vector<double> samples_ms) {
  const analysis::SampleSummary s = analysis::summarize(std::move(samples_ms));
  TimingStats t;
  t.samples = s.count;
  t.median_ms = s.median;
  t.min_ms = s.min;
  t.p20_ms = s.p20;
  t.p80_ms = s.p80;
  t.mean_ms = s.mean;
  t.cv = s.cv;
  return t;
}

void to_json(nlohmann::json& j, const Evaluation& e) {
  j = nlohmann::json{
      {"outcome", outcome_name(e.outcome)},
      {"message", e.message},
      {"compile_ms", e.compile_ms},
      {"compile_cache_hit", e.compile_cache_hit},
      {"resources",
       {{"registers", e.resources.registers},
        {"static_shared_bytes", e.resources.static_shared_bytes},
        {"dynamic_shared_bytes", e.resources.dynamic_shared_bytes},
        {"local_bytes", e.resources.local_bytes},
        {"spill_store_bytes", e.resources.spill_store_bytes},
        {"spill_load_bytes", e.resources.spill_load_bytes},
        {"max_threads_per_block", e.resources.max_threads_per_block}}},
      {"accuracy",
       {{"checked", e.accuracy.checked},
        {"max_abs_error", e.accuracy.max_abs_error},
        {"rel_error_norm", e.accuracy.rel_error_norm},
        {"worst_tolerance_ratio", e.accuracy.worst_tolerance_ratio},
        {"non_finite", e.accuracy.non_finite},
        {"over_tolerance", e.accuracy.over_tolerance},
        {"norm_tolerance", e.accuracy.norm_tolerance}}},
      {"timing",
       {{"samples", e.timing.samples},
        {"median_ms", e.timing.median_ms},
        {"min_ms", e.timing.min_ms},
        {"p20_ms", e.timing.p20_ms},
        {"p80_ms", e.timing.p80_ms},
        {"mean_ms", e.timing.mean_ms},
        {"cv", e.timing.cv},
        {"warmup_ms", e.timing.warmup_ms},
        {"l2_flushed", e.timing.l2_flushed}}},
      {"tflops", e.tflops},
      {"gbps", e.gbps},
      {"roofline_bound_tflops", e.roofline_bound_tflops},
      {"roofline_pct", e.roofline_pct}};
}

}  // namespace tilesmith
