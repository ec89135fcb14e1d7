#pragma once
// Warm start: the winners of earlier runs (best_config.json, docs/best_config.md) as the
// first candidates of a new run, so that a related shape starts where the last one ended
// instead of from a random design (docs/autotune-loop.md, "Warm start"). This file turns
// `--warm-start PATH` arguments into each template's list of seeds; WarmStartProposer
// (tuner/search/warm_start_proposer.h) proposes them. Pure apart from reading the files.

#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "registry/config.h"
#include "registry/kernel_template.h"
#include "tuner/records/best_config.h"

namespace tilesmith {

// One `--warm-start` argument, read.
struct WarmStartFile {
  std::filesystem::path path;  // the best_config.json read (for a folder: the one inside it)
  std::vector<BestEntry> entries;
};

// Reads `path`: a best_config.json, or a results folder holding one. Errors name the path,
// the problem and what to give instead: not_found when there is no such file (or the
// folder has no best_config.json), parse_error when it is not a valid best_config file.
Result<WarmStartFile> load_warm_start(const std::filesystem::path& path);

struct WarmStartSeed {
  Config config;
  // Where it comes from, for rationales and log lines: "winner for 4096x4096x4096 fp32 NN
  // in results/a/best_config.json" (" on <device>" added when it was measured elsewhere).
  std::string origin;
  // How the recorded config was brought up to date with the template (a parameter it
  // gained since filled in with its default, one it no longer has left out); empty when
  // it was used as recorded.
  std::vector<std::string> updates;
  // A seed from another problem of the same set: that it does not fit this problem is
  // expected, so it is dropped without a word (a --warm-start seed that does not fit is reported).
  bool quiet_if_invalid = false;
};

// The configs of the entries for `template_name` (any problem, any device), each config
// once: entries recorded on a device named `device_name` first, then the rest; within each
// group, files in the order given and entries in file order. Empty when no entry names
// the template. With `current` (the template as it is now), each config is first brought
// up to date with it (KernelTemplate::update_config; the seed's updates say how).
std::vector<WarmStartSeed> warm_start_seeds(const std::vector<WarmStartFile>& files, const std::string& template_name,
                                            const std::string& device_name,
                                            const KernelTemplate* current = nullptr);

}  // namespace tilesmith
