#include "cli/bench_best_inputs.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/exit_codes.h"
#include "tuner/records/journal.h"

namespace tilesmith::cli {
namespace fs = std::filesystem;
using nlohmann::json;

int bench_usage(const std::string& msg) {
  std::cerr << "bench-best: " << msg << "\n";
  return kExitUsage;
}

namespace {

// The recordings a run of the replay backend answered from, as its journal's session
// events name them (read only: bench-best writes nothing into a results folder).
std::vector<std::string> replay_files_of_run(const fs::path& results) {
  std::vector<std::string> files;
  std::ifstream in(results / kJournalFileName);
  std::string line;
  while (std::getline(in, line)) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("settings") || !j["settings"].is_object()) continue;
    const json& s = j["settings"];
    if (s.value("backend", std::string()) != "replay" || !s.contains("replay_files") || !s["replay_files"].is_array())
      continue;
    files.clear();
    for (const auto& f : s["replay_files"])
      if (f.is_string()) files.push_back(f.get<std::string>());
  }
  return files;
}

}  // namespace

std::optional<int> check_flags(const BenchBestOptions& o, bool from_file, bool replay) {
  if (o.vendor_only) {
    if (!o.config_json.empty() || from_file)
      return bench_usage("--vendor-only measures the vendor library alone: no --config, --best-config or --results");
    if (o.no_vendor) return bench_usage("--vendor-only and --no-vendor leave nothing to measure");
    if (o.epilogue_cost || o.fastest_only || !o.template_name.empty() || o.rounds_max > 0)
      return bench_usage("--vendor-only takes the problem flags, --rounds and --no-read-floor only");
    if (!problem_given(o.problem))
      return bench_usage("--vendor-only needs the problem: --m M --n N --k K (and --dtype, --layout, ... as needed)");
    return std::nullopt;
  }
  if (o.rounds_max > 0 && o.no_vendor)
    return bench_usage("--rounds-max adds rounds while the ratio to the vendor is uncertain: not with --no-vendor");
  if (o.record_code_hashes) {
    if (!from_file || replay)
      return bench_usage("--record-code-hashes compiles the entries of --best-config/--results files, on a real "
                         "backend's compiler (no GPU needed; not --backend replay)");
    if (o.json || o.vendor_only || o.no_vendor || o.epilogue_cost)
      return bench_usage("--record-code-hashes only compiles: it prints one line per entry and measures nothing "
                         "(no --json, --vendor-only, --no-vendor or --epilogue-cost)");
    return std::nullopt;
  }
  if (!o.config_json.empty() && from_file) return bench_usage("give --config or --best-config/--results, not both");
  if (o.config_json.empty() && !from_file)
    return bench_usage("give a config: --config '{...}' with the problem flags, or --best-config FILE, or --results DIR "
                       "(or --vendor-only for the vendor library alone)");
  if (!o.config_json.empty() && o.fastest_only) return bench_usage("--fastest-only goes with --best-config/--results");
  if (o.epilogue_cost && o.config_json.empty()) return bench_usage("--epilogue-cost goes with --config");
  if (!o.versus_kernels_dir.empty()) {
    if (o.config_json.empty())
      return bench_usage("--versus-kernels-dir compares two versions of one template on one config: it goes with --config");
    if (replay) return bench_usage("--versus-kernels-dir compiles both versions: not with --backend replay");
    if (o.epilogue_cost) return bench_usage("--versus-kernels-dir does not go with --epilogue-cost");
  }
  if (o.epilogue_cost && o.problem.epilogue == "none")
    return bench_usage("--epilogue-cost needs a fused --epilogue (bias_row, bias_col, relu, leaky_relu or gelu)");
  if (o.drift_tolerance_pct < 0) return bench_usage("--drift-tolerance must not be negative");
  if (replay && !o.kernels_dir.empty()) return bench_usage("--kernels-dir does not go with --backend replay");
  return std::nullopt;
}

std::optional<int> collect_files(const BenchBestOptions& o, std::vector<fs::path>* files,
                                 std::vector<std::string>* missing) {
  std::error_code ec;
  for (const auto& f : o.best_configs) {
    if (!fs::exists(f, ec)) return bench_usage(f + " does not exist");
    files->push_back(f);
  }
  for (const auto& dir : o.results) {
    const fs::path best = fs::path(dir) / "best_config.json";
    const fs::path set = fs::path(dir) / "problem_set.json";
    if (fs::exists(best, ec)) {
      files->push_back(best);
      continue;
    }
    if (!fs::exists(set, ec))
      return bench_usage(best.string() + " does not exist (is --results the folder an autotune-loop run wrote?)");
    std::ifstream in(set);
    json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.contains("problems") || !j["problems"].is_array())
      return bench_usage(set.string() + " is not a problem set's record (docs/problem-sets.md)");
    for (const auto& p : j["problems"]) {
      const std::string folder = p.is_object() ? p.value("folder", std::string()) : std::string();
      if (folder.empty()) return bench_usage(set.string() + ": a problem without a folder");
      const fs::path pb = fs::path(dir) / folder / "best_config.json";
      if (fs::exists(pb, ec)) files->push_back(pb);
      else missing->push_back((fs::path(dir) / folder).string() + " (no best_config.json yet)");
    }
  }
  if (files->empty())
    return bench_usage("no best_config.json to reproduce" +
                 (missing->empty() ? std::string() : " (" + std::to_string(missing->size()) + " problems not tuned yet)"));
  return std::nullopt;
}

std::optional<int> read_entries(const BenchBestOptions& o, const std::vector<fs::path>& files,
                                std::vector<BestEntry>* entries, std::vector<fs::path>* entry_files,
                                std::optional<GemmProblem>* problem_filter) {
  for (const auto& path : files) {
    auto e = read_best_config(path);
    if (!e.ok()) return bench_usage(e.status().message());
    for (auto& entry : *e) {
      entries->push_back(std::move(entry));
      entry_files->push_back(path);
    }
  }
  if (problem_given(o.problem)) {
    auto p = to_problem(o.problem);
    if (!p.ok()) return bench_usage(p.status().message());
    *problem_filter = *p;
  }
  return std::nullopt;
}

Selection select_entries(const std::vector<BestEntry>& entries, const BenchBestOptions& o,
                         const std::optional<GemmProblem>& problem_filter, const DeviceFacts& device) {
  Selection sel;
  for (const auto& e : entries) {
    if (problem_filter && e.problem.key() != problem_filter->key()) continue;
    if (!o.template_name.empty() && e.template_name != o.template_name) continue;
    const std::string name = e.device.value("name", std::string());
    const std::string arch = e.device.value("arch", std::string());
    if (name == device.name && arch == device.arch) sel.selected.push_back(&e);
    else sel.other_device.push_back(&e);
  }
  if (o.fastest_only) sel.slower_left_out = keep_fastest_per_problem(sel.selected);
  return sel;
}

std::size_t keep_fastest_per_problem(std::vector<const BestEntry*>& entries) {
  // Per problem and device, the best recorded entry by its run's objective (the first of
  // equals): the fastest median for a run tuned for time. Entries tuned for different
  // objectives (several folders) have no common figure but the time.
  auto key = [](const BestEntry* e) {  // the device as select_entries matches it: name and architecture
    return e->device.value("name", std::string()) + "|" + e->device.value("arch", std::string()) + "|" +
           e->problem.key();
  };
  std::map<std::string, const BestEntry*> fastest;
  auto better = [](const BestEntry* a, const BestEntry* b) {
    const Objective o = a->objective == b->objective ? a->objective : Objective::kTime;
    return entry_objective_value(*a, o).value_or(1e300) < entry_objective_value(*b, o).value_or(1e300);
  };
  for (const BestEntry* e : entries) {
    auto [it, fresh] = fastest.emplace(key(e), e);
    if (!fresh && better(e, it->second)) it->second = e;
  }
  std::vector<const BestEntry*> kept;
  for (const BestEntry* e : entries)
    if (fastest[key(e)] == e) kept.push_back(e);
  const std::size_t left_out = entries.size() - kept.size();
  entries = std::move(kept);
  return left_out;
}

int report_no_entry(const std::string& path, const DeviceFacts& device, const BenchBestOptions& o,
                    const std::optional<GemmProblem>& problem_filter, const std::vector<BestEntry>& entries,
                    const Selection& sel) {
  std::string what = path + " has no entry for this device (" + device.name + ", " + device.arch + ")";
  if (problem_filter) what += " and problem " + problem_filter->describe();
  if (!o.template_name.empty()) what += " and template " + o.template_name;
  if (sel.other_device.empty() && entries.empty()) what += "; the file has no entries";
  for (const auto* e : sel.other_device)
    what += "\n  recorded on " + e->device.value("name", std::string("?")) + " (" +
            e->device.value("arch", std::string("?")) + "): " + e->template_name + " " + e->problem.describe();
  std::cerr << "bench-best: " << what << "\n";
  return kExitMismatch;
}

std::string without_gpu_hint(const BenchBestOptions& o, const std::vector<BestEntry>& entries) {
  bool replayed = false;
  for (const auto& e : entries) replayed = replayed || e.device.value("backend", std::string()) == "replay";
  std::string sources;
  std::vector<std::string> files;
  for (const auto& r : o.results) {
    sources += " --results " + r;
    for (auto& f : replay_files_of_run(r))
      if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(std::move(f));
  }
  for (const auto& b : o.best_configs) sources += " --best-config " + b;
  if (replayed || !files.empty()) {
    std::string flags;
    for (const auto& f : files) flags += " --replay-file " + f;
    if (flags.empty()) flags = " --replay-file FILE (the recording the run answered from)";
    return "\n  these results were measured on the replay backend: without a GPU, re-check them on their recordings "
           "with\n    bench-best --backend replay" + flags + sources;
  }
  return "\n  bench-best measures on a GPU; without one it can re-check a run made with --backend replay: bench-best "
         "--backend replay --replay-file FILE" + sources;
}

}  // namespace tilesmith::cli
