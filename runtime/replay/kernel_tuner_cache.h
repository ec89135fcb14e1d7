#pragma once
// Kernel Tuner cache files (the JSON Kernel Tuner writes with cache=..., possibly
// gzip-compressed): the tuning space it explored and one record per configuration.
// Only integer-valued parameters are supported (tilesmith renders integers only).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "registry/device_facts.h"
#include "registry/outcome.h"
#include "registry/problem.h"
#include "registry/space.h"

namespace tilesmith::replay {

struct KernelTunerRecord {
  PointValues point;               // values in tune_params_keys order
  Outcome outcome = Outcome::kOk;  // failures: Kernel Tuner's markers mapped to outcomes
  std::string failure;             // the marker ("CompilationFailedConfig", ...) when failed;
                                   // a record tilesmith wrote also names its outcome
                                   // ("tilesmith_outcome"), which wins over the marker
  double time_ms = 0;              // Kernel Tuner's "time": the mean of the repetitions
  std::vector<double> times_ms;    // each repetition; may be empty
  double compile_ms = 0;           // "compile_time" (0 when absent)
};

struct KernelTunerCache {
  std::string device_name;
  std::string kernel_name;
  std::string objective;                                // "time" for these files
  std::vector<std::int64_t> problem_size;               // as recorded ([4096, 4096])
  std::vector<std::string> param_names;                 // tune_params_keys
  std::vector<std::vector<std::int64_t>> param_values;  // tune_params, same order
  std::vector<KernelTunerRecord> records;               // ordered by key text (JSON object order)

  // What tilesmith adds when it writes a cache (the "tilesmith" object; Kernel Tuner
  // ignores unknown keys): the whole problem, so a replay knows the data types and
  // layouts and not only the sizes; the device as it described itself; where the
  // measurements came from. Absent in Kernel Tuner's own files.
  std::optional<GemmProblem> problem;
  std::optional<DeviceFacts> device;
  std::string template_hash;  // KernelTemplate::source_hash of the recorded template
  std::string math;           // KernelTemplate::math of the recorded template ("fma"), "" if matrix units or unsaid
  std::string provenance;     // e.g. "history.csv of run 20261125T101841Z-6d16b3"
  // The vendor library at the same problem, timed in the recording run's process
  // ("vendor": {"name", "median_ms"}); a replay answers vendor_baseline with it.
  std::optional<double> vendor_median_ms;
  std::string vendor_name;
};

// The cache as Kernel Tuner's JSON (tune_params_keys, tune_params, cache keyed by the
// comma-joined values) plus the "tilesmith" object above when any of its fields is set.
// A failed record's "time" is Kernel Tuner's marker for it (CompilationFailedConfig,
// RuntimeFailedConfig, InvalidConfig), with "tilesmith_outcome" naming the outcome
// exactly; an ok record's "time" is time_ms and "times" its repetitions when known.
// Parsing the text gives back an equal cache (records in key order).
std::string kernel_tuner_cache_to_json_text(const KernelTunerCache& cache);

// Parses the JSON text; `origin` names the file in messages. parse_error on malformed
// JSON or missing fields, invalid_argument on non-integer parameter values or a record
// whose values are not in tune_params.
Result<KernelTunerCache> parse_kernel_tuner_cache(std::string_view json_text,
                                                  const std::string& origin);

// read_maybe_gzip + parse_kernel_tuner_cache.
Result<KernelTunerCache> read_kernel_tuner_cache(const std::filesystem::path& path);

}  // namespace tilesmith::replay
