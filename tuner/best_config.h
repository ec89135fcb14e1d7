#pragma once
// best_config.json: the best configuration found per (device, template, problem).
// Schema "tilesmith.best_config/1", documented in docs/best_config.md. Replaced
// atomically on every update (base/files.h), so a crash leaves the old file or the new.

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

namespace tilesmith {

inline constexpr const char* kBestConfigSchema = "tilesmith.best_config/1";

struct BestEntry {
  std::string device_fingerprint;
  nlohmann::json device;         // DeviceFacts as JSON
  std::string template_name;
  std::string template_hash;     // KernelTemplate::source_hash()
  GemmProblem problem;
  Config config;
  nlohmann::json metrics;        // median_ms, min_ms, p20_ms, p80_ms, cv, tflops, gbps, roofline_pct, max_abs_error, rel_error_norm
  std::optional<double> vendor_ratio;  // our throughput / the vendor library's
  std::string vendor_name;
  nlohmann::json provenance;     // run_id, history_row, timestamp (UTC, ISO 8601)
  nlohmann::json environment;    // tilesmith_version, compiler, backend

  // device fingerprint | template@hash | problem key: one entry per key.
  std::string key() const;
};

// Metrics of an evaluation in the file's form.
nlohmann::json metrics_json(const Evaluation& e);

Result<std::vector<BestEntry>> read_best_config(const std::filesystem::path& path);
// Replaces the entry with the same key (or adds it) and rewrites the file atomically.
Status upsert_best_config(const std::filesystem::path& path, const BestEntry& entry);
Status write_best_config(const std::filesystem::path& path, const std::vector<BestEntry>& entries);

}  // namespace tilesmith
