#pragma once
// The record of one evaluated candidate (or of the vendor baseline): what happened,
// and every figure measured along the way. Plain value type.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "registry/outcome.h"
#include "runtime/telemetry.h"

namespace tilesmith {

struct KernelResources {
  int registers = -1;             // per thread; -1 when unknown
  std::int64_t static_shared_bytes = -1;
  std::int64_t dynamic_shared_bytes = 0;
  std::int64_t local_bytes = -1;  // per thread (stack + spills)
  std::int64_t spill_store_bytes = -1;  // from the compiler log where it tells
  std::int64_t spill_load_bytes = -1;
  int max_threads_per_block = -1;  // what the loaded function allows
};

struct TimingStats {
  int samples = 0;
  double median_ms = 0, min_ms = 0, p20_ms = 0, p80_ms = 0, mean_ms = 0;
  double cv = 0;  // standard deviation / mean
  double warmup_ms = 0;
  bool l2_flushed = false;
  // Back to back (TimingOptions::steady_ms): the median time per launch of spans of
  // launches without a flush between them, the steady state of a GEMM run in a loop, at
  // the clocks a card at its power limit settles to. Absent where not measured.
  std::optional<double> steady_ms;
  // Racing: the bound the samples were found clearly above, so sampling stopped early
  // (analysis/race.h). Absent where the candidate was sampled in full.
  std::optional<double> raced_above_ms;
};

// The statistics of a non-empty sample of kernel times (milliseconds); warmup_ms and
// l2_flushed are left for the caller, who knows how the sample was taken.
TimingStats summarize_timing(std::vector<double> samples_ms);

struct AccuracyStats {
  bool checked = false;
  double max_abs_error = 0;
  double rel_error_norm = 0;        // ||C - ref||_F / ||ref||_F
  double worst_tolerance_ratio = 0;  // max over elements of |C - ref| / tolerance
  std::int64_t non_finite = 0;       // NaN/Inf elements (unwritten outputs stay NaN)
  std::int64_t over_tolerance = 0;
  double norm_tolerance = 0;
};

struct Evaluation {
  Outcome outcome = Outcome::kInvalid;
  std::string message;  // reason, compiler log excerpt, error text; empty when ok
  std::string compile_log;  // verbatim, may be long
  double compile_ms = 0;
  bool compile_cache_hit = false;
  // What was compiled, independent of its source text (runtime/code_identity.h): set where
  // the candidate compiled; empty on replay and where nothing compiled.
  std::string code_hash;
  KernelResources resources;
  AccuracyStats accuracy;
  TimingStats timing;
  double tflops = 0;        // 2MNK / median
  double gbps = 0;          // problem.min_bytes() / median
  double roofline_bound_tflops = 0;  // min(peak, bytes-bound) at the problem's intensity
  double roofline_pct = 0;  // tflops / bound * 100
  // The device's clocks, power, temperature and throttling while the samples ran, and
  // the energy of one launch (runtime/telemetry.h); absent where nothing was read (no
  // NVML, the replay backend, a candidate not timed). telemetry_note says why, where the
  // evaluator knows ("NVML: libnvidia-ml.so.1 not found"), and what was missing from an
  // incomplete one ("no energy counter").
  std::optional<TelemetrySummary> telemetry;
  std::string telemetry_note;
  bool ok() const { return outcome == Outcome::kOk; }
};

// The one JSON form of an Evaluation (journal, bench-best's output, worker wire): every
// field, non-finite doubles as "nan"/"inf"/"-inf" so a round trip is exact. The decoder
// is strict about types and tolerant of missing fields; parse_error otherwise.
void to_json(nlohmann::json& j, const Evaluation& e);
Result<Evaluation> evaluation_from_json(const nlohmann::json& j);

// The "timing" object of that form, shared with every other measurement that travels the
// same way (the read floor): written exactly, read strictly by type, missing fields left
// as they are. `what` names the object in errors ("evaluation.timing").
nlohmann::json timing_to_json(const TimingStats& t);
Status timing_from_json(const nlohmann::json& j, const std::string& what, TimingStats* t);

// The "telemetry" object of that form: absent figures left out; throttle reasons by name
// (runtime/telemetry.h). Read strictly by type; parse_error naming the field otherwise.
nlohmann::json telemetry_to_json(const TelemetrySummary& t);
Status telemetry_from_json(const nlohmann::json& j, const std::string& what, TelemetrySummary* t);

}  // namespace tilesmith
