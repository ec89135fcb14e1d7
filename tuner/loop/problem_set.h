#pragma once
// A problem set: the GEMMs of one workload (a transformer's forward step, say), each
// with how often it runs, tuned together by `autotune-loop --problems FILE` under one
// budget (docs/problem-sets.md). This file reads and checks the set file and writes the
// set as run (DIR/problem_set.json, which the exporter reads); the scheduling is in
// problem_set_scheduler.h, the run in problem_set_run.h. Pure apart from reading files.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "registry/problem.h"

namespace tilesmith {

inline constexpr const char* kProblemSetFileName = "problem_set.json";

struct ProblemSetEntry {
  std::string name;     // unique in the set, filesystem-safe: also the subfolder's name
  std::int64_t count = 1;  // how often the GEMM runs per step (weights the set's totals)
  GemmProblem problem;
};

struct ProblemSet {
  std::string name;
  std::string source;  // where the dimensions come from
  std::vector<ProblemSetEntry> entries;
};

// The name an entry gets when the file gives none: "m16_n6144_k4096_bf16_NN", with C's
// type, C's layout, alpha/beta and the epilogue added where they differ from the default.
std::string default_problem_name(const GemmProblem& p);

// Why `name` cannot name a subfolder ("" when it can): letters, digits, '.', '_' and '-',
// not starting with '.', at most 100 characters.
std::string problem_name_error(const std::string& name);

// parse_error / invalid_argument naming the entry (its index and name) and the field.
// `origin` (the file's path) starts every message.
Result<ProblemSet> problem_set_from_json(const nlohmann::json& j, const std::string& origin);
Result<ProblemSet> read_problem_set(const std::filesystem::path& path);

// The set as run: name, source, and per entry its name, count, folder and full problem.
nlohmann::json problem_set_to_json(const ProblemSet& set);

// ok when `recorded` (an earlier DIR/problem_set.json) describes the same set as
// `current`; failed_precondition otherwise, saying what differs and what to do.
Status check_same_problem_set(const nlohmann::json& recorded, const ProblemSet& current,
                              const std::filesystem::path& recorded_path);

}  // namespace tilesmith
