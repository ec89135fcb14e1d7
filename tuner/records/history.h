#pragma once
// history.csv: one row per candidate outcome of a tuning run, append-only, each row
// written whole with one write() and fsync'd (base/files.h), so a crash at any moment
// loses at most the row being written, and that one is cut off (torn) at the end of the
// file where HistoryFile::open repairs it. Columns and their meaning: docs/history.md
// (schema version kHistorySchemaVersion; a new column or a changed meaning bumps it).
// Files of versions 1-4 (no `device` column before 2, no `c_dtype` before 3, no `host`
// before 4, no telemetry columns before 5) are still read, and a run resumed on one goes
// on writing rows of its version: an append-only file cannot change its header.
//
// A row is one of two stages:
//   proposal    a candidate rejected before evaluation (by the proposer's parser, the
//               parameter space's validation, the problem check); outcome invalid
//   evaluation  a candidate given to the evaluator, with its outcome and measurements;
//               also a candidate found in flight when a run stopped (outcome crash)
// Within one results folder, (template, config_hash) is unique among evaluation rows.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "registry/outcome.h"

namespace tilesmith {

inline constexpr int kHistorySchemaVersion = 5;
// The oldest version still read (and appended to, in its own format).
inline constexpr int kHistoryOldestSchemaVersion = 1;
inline constexpr const char* kHistoryFileName = "history.csv";

inline constexpr const char* kStageProposal = "proposal";
inline constexpr const char* kStageEvaluation = "evaluation";

struct HistoryRow {
  int schema_version = kHistorySchemaVersion;
  std::string run_id;
  int session = 0;           // 1 for the first invocation of the run, 2 after a resume, ...
  std::int64_t row = 0;      // 1-based position among the data rows
  std::string timestamp;     // UTC, ISO 8601 with milliseconds: 2026-01-02T03:04:05.678Z
  int generation = 0;
  std::string stage = kStageEvaluation;
  std::string proposer;      // "evolve", "random", "llm", ...
  std::string model;         // the LLM model; empty for offline proposers
  std::string template_name;
  std::string template_hash;
  // The problem.
  std::int64_t m = 0, n = 0, k = 0;
  std::string dtype;    // A and B
  std::string c_dtype;  // C and the bias (schema 3; read as dtype from older files)
  std::string layout, c_layout, epilogue;
  double alpha = 1, beta = 0;
  std::string problem_key;   // GemmProblem::key(): every field that changes the answer
  std::string config;        // canonical JSON; for a proposal that did not parse, its text
  std::string config_hash;   // config_hash(); empty when `config` is not a valid config
  Outcome outcome = Outcome::kInvalid;
  std::string message;       // reason, compiler-log excerpt, error text
  std::string rationale;     // why the proposer chose it (LLM)
  std::optional<double> compile_ms;
  std::optional<bool> compile_cached;
  std::optional<std::int64_t> registers, shared_bytes, local_bytes, spill_store_bytes, spill_load_bytes;
  std::optional<std::int64_t> samples;
  std::optional<double> median_ms, min_ms, p20_ms, p80_ms, cv;
  std::optional<double> tflops, gbps, roofline_pct;
  std::optional<double> max_abs_error, rel_error_norm;
  std::optional<double> vendor_ratio;  // our throughput / the vendor library's (> 1: faster)
  std::optional<double> eval_ms;       // wall time of the evaluation call
  // The device while the samples ran (runtime/telemetry.h), empty where nothing was read
  // (no NVML, the replay backend, not timed). Since version 5.
  std::optional<double> sm_clock_mhz, mem_clock_mhz;  // medians of the readings
  std::optional<double> power_w;                      // mean
  std::optional<double> max_temp_c;                   // highest
  std::string throttle_reasons;  // "sw_power_cap+hw_thermal", "none" when read and none; "" unread
  std::optional<double> joules_per_launch;
  std::string backend;
  // Which device measured it: "cuda:1", "hip:0"; for the replay backend "replay:N", N the
  // worker (0 in-process). Empty for proposal rows, and where unknown (a crash found on
  // resume of an older journal). Since version 2.
  std::string device;
  // Which machine: the host name of the process that measured it (base/host_name.h); for
  // rows that no device measured (proposals, compile failures found ahead), the
  // orchestrator's. In a run over several MPI ranks, "name/rankR" when ranks share a host
  // (docs/scale-out.md). Since version 4.
  std::string host;
  std::string device_name, device_arch, driver_version, runtime_version;
  std::string tilesmith_version;

  bool evaluated() const { return stage == kStageEvaluation; }
  bool ok() const { return outcome == Outcome::kOk; }
  // template + "/" + config_hash: a candidate's identity within a run.
  std::string key() const;
};

// template + "/" + config hash.
std::string candidate_key(std::string_view template_name, std::string_view config_hash);

// The column names of a schema version, in file order (the header row). `version` must
// be between kHistoryOldestSchemaVersion and kHistorySchemaVersion.
const std::vector<std::string>& history_columns(int version = kHistorySchemaVersion);
// The header line, ending in "\n".
std::string history_header_line(int version = kHistorySchemaVersion);
// One row as a CSV record in the columns of row.schema_version, ending in "\n". Text
// fields are sanitised (csv::sanitize_text); numbers use the shortest text that reads
// back to the same double.
std::string history_row_line(const HistoryRow& row);
// A parsed record of a file of `version` back into a row; parse_error naming the column
// otherwise.
Result<HistoryRow> history_row_from_fields(const std::vector<std::string>& fields,
                                           int version = kHistorySchemaVersion);

struct HistoryLoad {
  int schema_version = kHistorySchemaVersion;  // the file's (this version for a missing file)
  std::vector<HistoryRow> rows;
  std::size_t torn_bytes = 0;  // bytes of a torn last row (dropped by a repair, ignored otherwise)
  std::string torn_excerpt;    // the start of those bytes, for the message
};

// Reads history.csv without changing it. A missing file reads as no rows. A torn last
// row (see HistoryLoad) is left out. parse_error for a file whose header is not one of
// the schemas read (naming them) or a malformed row before the last one.
Result<HistoryLoad> read_history(const std::filesystem::path& path);

// The history file of a run, opened for appending. Not thread-safe: one writer (the
// loop's thread) at a time; the file itself is only ever appended to.
class HistoryFile {
 public:
  // Creates the file with its header when absent (atomically, so a crash never leaves a
  // file without one); otherwise reads it, truncating a torn last row (fsync'd). Errors:
  // those of read_history, io_error.
  static Result<HistoryFile> open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  // The file's schema version: kHistorySchemaVersion for a file this run created, the
  // file's own for one it found. Rows are appended in it.
  int schema_version() const { return schema_version_; }
  const std::vector<HistoryRow>& rows() const { return rows_; }
  std::size_t repaired_bytes() const { return repaired_bytes_; }
  const std::string& repaired_excerpt() const { return repaired_excerpt_; }

  // Sets row.row to the next number and row.schema_version to the file's, writes the row
  // with one write() and fsyncs. On error nothing is kept in memory (the file may hold a
  // torn row, repaired next open).
  Status append(HistoryRow row);

 private:
  std::filesystem::path path_;
  int schema_version_ = kHistorySchemaVersion;
  std::vector<HistoryRow> rows_;
  std::size_t repaired_bytes_ = 0;
  std::string repaired_excerpt_;
};

}  // namespace tilesmith
