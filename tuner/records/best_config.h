#pragma once
// best_config.json: the best configuration found per (device, template, problem).
// Schema "tilesmith.best_config/1", documented in docs/best_config.md. Replaced
// atomically on every update (base/files.h), so a crash leaves the old file or the new.
// Entries of other devices, templates and problems in the same file are kept as they are.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "registry/config.h"
#include "registry/device_facts.h"
#include "registry/problem.h"
#include "runtime/evaluation.h"
#include "tuner/records/objective.h"

namespace tilesmith {

inline constexpr const char* kBestConfigSchema = "tilesmith.best_config/1";

struct BestEntry {
  std::string device_fingerprint;
  nlohmann::json device;         // DeviceFacts as JSON
  std::string template_name;
  std::string template_hash;     // KernelTemplate::source_hash()
  // The kernel the config compiled to (runtime/code_identity.h); empty in files written
  // before it was recorded and where nothing compiled (replay).
  std::string code_hash;
  GemmProblem problem;
  Config config;
  nlohmann::json metrics;        // median_ms, min_ms, p20_ms, p80_ms, cv, tflops, gbps, roofline_pct, max_abs_error, rel_error_norm,
                                 // joules_per_launch (where measured)
                                 // ("source": "retime" when re-timed at the end of the run, "search" otherwise)
  // What the run minimised to pick this entry (autotune-loop --objective); files written
  // before it was recorded were tuned for time.
  Objective objective = Objective::kTime;
  std::optional<double> vendor_ratio;  // our throughput / the vendor library's
  std::string vendor_name;
  std::optional<double> vendor_median_ms;
  // The vendor measurement's spread, as for our metrics (p20/p80 of its samples, their cv);
  // absent in files written before they were recorded.
  std::optional<double> vendor_p20_ms, vendor_p80_ms, vendor_cv;
  std::optional<double> vendor_joules;  // the vendor's energy per launch, where measured
  nlohmann::json provenance;     // run_id, session, history_row, generation, proposer, timestamp (UTC, ISO 8601)
  nlohmann::json environment;    // tilesmith_version, compiler, backend
  nlohmann::json retime = nlohmann::json::array();  // the re-timed finalists: config_hash, history_row, search and re-timed medians
  // Whether the re-timing certified the winner: verdict, rounds, the winner's interval of
  // the median (docs/best_config.md). null for a search entry and in older files.
  nlohmann::json certification;

  // device fingerprint | template@hash | problem key: one entry per key.
  std::string key() const;
};

// Metrics of an evaluation in the file's form.
nlohmann::json metrics_json(const Evaluation& e);

// The entry's value under its own objective (tuner/records/objective.h), from its metrics'
// median_ms and joules_per_launch; nullopt when a figure it needs is missing. What picks
// one entry over another for the same problem (problem sets, export, bench-best).
std::optional<double> entry_objective_value(const BestEntry& e);
// The same under another objective: entries tuned for different objectives compare by one.
std::optional<double> entry_objective_value(const BestEntry& e, Objective o);

Result<std::vector<BestEntry>> read_best_config(const std::filesystem::path& path);
// Replaces the entry with the same key (or adds it) and rewrites the file atomically.
Status upsert_best_config(const std::filesystem::path& path, const BestEntry& entry);
Status write_best_config(const std::filesystem::path& path, const std::vector<BestEntry>& entries);
// Removes the entry with this key (if any) and rewrites the file atomically; ok when the
// file or the entry does not exist.
Status remove_best_config_entry(const std::filesystem::path& path, const std::string& key);

}  // namespace tilesmith
