#pragma once
// `autotune-loop export`: a results folder (one problem, or a problem set with one
// subfolder per problem) becomes a tuned package a program can use without the tuner,
// a compiler or a network: tuned.json, the template sources and headers, and one
// compiled binary per distinct kernel (docs/package.md). Needs no GPU: the binaries are
// compiled for the architecture recorded with the winners.
//
// Nothing in the results folder is changed. The package is written beside its final
// place and renamed into it, so a failed export leaves no half-written package.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "registry/template_library.h"
#include "runtime/compiler.h"
#include "tuner/records/best_config.h"

namespace tilesmith {

// A problem of the results folder and the entry chosen for it.
struct ExportProblem {
  std::string name;
  std::int64_t count = 1;
  std::filesystem::path best_config;  // where its winner was read from
  BestEntry winner;
};

struct ExportOptions {
  std::filesystem::path results_dir;
  std::filesystem::path out_dir;
  // Only entries whose device fingerprint contains this text (needed when a
  // best_config.json holds several devices' results).
  std::string device_filter;
  bool replace = false;  // replace an existing package at out_dir
};

struct ExportedKernel {
  std::string id, template_name, binary_path;
  std::size_t binary_bytes = 0;
  double compile_ms = 0;
};

struct ExportReport {
  std::vector<ExportProblem> problems;
  std::vector<ExportedKernel> kernels;
  std::vector<std::string> notes;  // things a person should hear about (a filled-in parameter, ...)
  nlohmann::json tuned;            // what tuned.json holds
};

// The problems of a results folder and each one's fastest entry on one device. A set
// (DIR/problem_set.json) gives names, counts and subfolders; a single-problem folder
// gives every problem its best_config.json holds, named as a set names an entry without a
// name (default_problem_name: "m16_n6144_k4096_bf16_NN"), count 1.
// Errors name the file and what to do: no results there, a problem with no winner, several
// devices without a filter, a replay-backend entry (nothing to compile).
Result<std::vector<ExportProblem>> collect_export_problems(const ExportOptions& options);

// Collects, renders, compiles and writes the package. `compiler` compiles for the winners'
// architecture (NVRTC for sm_*, hipRTC for gfx*). Templates come from `templates`; a
// winner whose template changed since it was tuned (source hash) is refused, naming both
// hashes, since its measured time would not belong to the kernel shipped.
Result<ExportReport> export_package(const ExportOptions& options, const TemplateLibrary& templates,
                                    Compiler& compiler);

}  // namespace tilesmith
