#pragma once
// `autotune-loop export`: a results folder (one problem, or a problem set with one
// subfolder per problem) becomes a tuned package a program can use without the tuner,
// a compiler or a network: tuned.json, the template sources and headers, and one
// compiled binary per distinct kernel (docs/package.md). Needs no GPU: the binaries are
// compiled for the architecture recorded with the winners.
//
// Nothing in the results folder is changed. The package is written beside its final
// place and renamed into it, so a failed export leaves no half-written package. Export
// writes only into a folder that is missing, empty, or holds a package it wrote and that
// is unchanged since (package_manifest.h), and never into, above or below the results
// folder (check_export_destination).

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/vendor_rule.h"
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
  // The winner against the vendor library measured with it (analysis/vendor_rule.h): what
  // libtilesmith_gemm will run for this problem. Filled by export_package.
  analysis::VendorComparison vs_vendor;
};

struct ExportOptions {
  std::filesystem::path results_dir;
  std::filesystem::path out_dir;
  // Only entries whose device fingerprint contains this text (needed when a
  // best_config.json holds several devices' results).
  std::string device_filter;
  // Replace the package at out_dir: only one export wrote, unchanged since (its manifest).
  bool replace = false;
  // A set's problems without a winner yet (a run stopped early) are left out and named in
  // the report's notes instead of refusing the export; the library runs the vendor for them.
  bool skip_unfinished = false;
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
// With options.skip_unfinished, `unfinished` (when given) gets "NAME: why" for each set
// problem left out.
Result<std::vector<ExportProblem>> collect_export_problems(const ExportOptions& options,
                                                           std::vector<std::string>* unfinished = nullptr);

// Whether the package may be written at options.out_dir, checked before anything else
// (paths resolved with weakly_canonical, so a link at --out counts as where it points).
// failed_precondition, naming the folder, what is wrong and what to do, when --out is,
// contains or lies inside the results folder; is not a folder; is a non-empty folder
// that is not a package export wrote (no manifest.json), a package without a manifest
// (an earlier tilesmith's), or a package whose files differ from its manifest (an extra,
// missing or changed file); or holds an intact package and `replace` is not set.
Status check_export_destination(const ExportOptions& options);

// Collects, renders, compiles and writes the package. `compiler` compiles for the winners'
// architecture (NVRTC for sm_*, hipRTC for gfx*). Templates come from `templates`; a
// winner whose template changed since it was tuned (source hash) is refused, naming both
// hashes, since its measured time would not belong to the kernel shipped, unless its
// config still compiles to the kernel it was tuned with (its code hash,
// runtime/code_identity.h): then it is exported with a note. The
// destination is checked first (check_export_destination) and again just before the
// package is put in place; a replaced package's listed files are deleted, nothing else.
Result<ExportReport> export_package(const ExportOptions& options, const TemplateLibrary& templates,
                                    Compiler& compiler);

}  // namespace tilesmith
