#pragma once
// Priors: what an earlier search of the same template learned, on another device or another
// problem, as the first candidates of a new search (`--prior SOURCE`, docs/search.md,
// "Transfer"). Where a warm start re-measures an earlier run's winner, a prior contributes a
// handful of its fastest configurations, spread over its good regions: the winners of one GPU
// are often 1.3-1.6x off on another, but the region of the space that suits the template
// usually carries over, and a few picks from it cost a few evaluations where it does not.
//
// Besides the picks, all of a source's measurements go to the search with every request
// (ProposalRequest::prior, prior_measurements_for): evolve models their order and shortens its
// space-filling start while that model agrees with the run's own measurements
// (tuner/search/evolve_proposer.h).
//
// What was measured (the search benchmark's transfer mode, seeds 1-20, docs/search.md
// "Transfer"): an earlier version that also used the prior as the surrogate's mean held the
// search near the source's best region and made it slower than cold where that region did
// not carry over, and so did the prior's prediction as a feature of the run's models. How many
// picks matters: with 8, TITAN RTX <- RTX 3090 needed 116 evaluations to 1% against 64 cold
// (the picks' basin held the local search); with 4 it needed 29 (20 with the shorter start).
//
// Pure apart from reading the files.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "registry/config.h"
#include "registry/problem.h"
#include "tuner/search/proposer.h"
#include "tuner/search/warm_start.h"

namespace tilesmith {

// The measured configurations of one template on one problem and device.
struct PriorSource {
  std::string template_name;  // the template's name (a Kernel Tuner file: its kernel name)
  std::string describe;       // "gemm_tma_half, 128x4096x4096 bf16 NT on NVIDIA H200, from PATH"
  std::optional<GemmProblem> problem;  // what it was measured on, where the source says (not Kernel Tuner's own files)
  using Row = PriorMeasurement;  // time_ms: the fastest measurement of the config
  std::vector<Row> rows;          // successful measurements only, fastest first
};

// Reads `path`: a results folder (its history.csv), a history.csv, or a Kernel Tuner cache file
// (.json / .json.gz, as `autotune-loop history --kernel-tuner-cache` writes or Kernel Tuner
// itself). A history gives one source per template, problem and device it holds. Errors name
// the path and what to give instead: not_found, parse_error, invalid_argument when nothing in
// it was measured successfully.
Result<std::vector<PriorSource>> load_prior(const std::filesystem::path& path);

// Up to `count` configurations of `source`, fastest first, each at least `min_distance`
// parameters away from those already picked (so that the picks cover the prior's good regions,
// not one neighbourhood); where too few are that far apart, the fastest of the rest fill up.
// Each is a warm-start seed (quiet when it does not fit the new problem) whose origin says
// where it came from ("prior: 2nd fastest of ...").
std::vector<WarmStartSeed> prior_picks(const PriorSource& source, int count, int min_distance = 2);

// The picks of every source of `template_name`, taken in turn from each source (its fastest,
// then each one's next), each config once, at most `count` in all.
std::vector<WarmStartSeed> prior_picks_for(const std::vector<PriorSource>& sources,
                                           const std::string& template_name, int count);

// Every measurement of `template_name` in `sources`, for the search's model of the space
// (ProposalRequest::prior): each source's times divided by its fastest, so that sources of
// different devices or problems rank together by how far each configuration was from its own
// best; with `tmpl`, each config brought up to date with the template (as the picks are).
std::vector<PriorMeasurement> prior_measurements_for(const std::vector<PriorSource>& sources,
                                                     const std::string& template_name,
                                                     const KernelTemplate* tmpl = nullptr);

// How many of a prior's configurations a template's search starts with: a quarter of evolve's
// initial design of 16, the rest of it space-filling. On the search benchmark's transfer pairs
// (docs/search.md, "Transfer") 4 was the best of 2, 4 and 8.
inline constexpr int kPriorPicks = 4;

// Appends to `seeds` (a template's warm-start winners, say) the picks of `tmpl` from `sources`,
// each brought up to date with the template (a parameter it gained since takes its default; the
// seed's updates say so) and left out where a seed already holds its config. Returns how many
// were appended.
std::size_t append_prior_picks(std::vector<WarmStartSeed>& seeds,
                               const std::vector<PriorSource>& sources, const KernelTemplate& tmpl,
                               int count = kPriorPicks);

}  // namespace tilesmith
