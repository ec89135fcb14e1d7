#pragma once
// bench-best's inputs: what the flags can be wrong about on their own, the best_config.json
// files they name and their entries, which entries this device and the filters keep, and
// what to say when none is left or there is no GPU. Each step that returns an int wants
// bench-best to end with that exit code now (said on stderr); std::nullopt means go on.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli/bench_best.h"
#include "cli/bench_best_output.h"

namespace tilesmith::cli {

// "bench-best: <message>" on stderr; kExitUsage.
int bench_usage(const std::string& message);

std::optional<int> check_flags(const BenchBestOptions& o, bool from_file, bool replay);
// The best_config.json files the flags name: each --best-config, each --results folder's,
// and for a problem-set folder (problem_set.json, docs/problem-sets.md) each problem's that
// exists (the others go to `missing`, named).
std::optional<int> collect_files(const BenchBestOptions& o, std::vector<std::filesystem::path>* files,
                                 std::vector<std::string>* missing);
// Every entry of the files, with the file each came from, and the problem filter.
std::optional<int> read_entries(const BenchBestOptions& o, const std::vector<std::filesystem::path>& files,
                                std::vector<BestEntry>* entries, std::vector<std::filesystem::path>* entry_files,
                                std::optional<GemmProblem>* problem_filter);
// Keeps, per problem and device, the best entry by its run's objective (--fastest-only);
// returns how many were left out.
std::size_t keep_fastest_per_problem(std::vector<const BestEntry*>& entries);
Selection select_entries(const std::vector<BestEntry>& entries, const BenchBestOptions& o,
                         const std::optional<GemmProblem>& problem_filter, const DeviceFacts& device);
// No entry for this device: says what the files hold instead; kExitMismatch.
int report_no_entry(const std::string& path, const DeviceFacts& device, const BenchBestOptions& o,
                    const std::optional<GemmProblem>& problem_filter, const std::vector<BestEntry>& entries,
                    const Selection& sel);
// What a user without a GPU can do instead: a run made on recorded measurements is
// re-checked on the same recordings.
std::string without_gpu_hint(const BenchBestOptions& o, const std::vector<BestEntry>& entries);

}  // namespace tilesmith::cli
