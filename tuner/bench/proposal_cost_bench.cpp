// tilesmith_proposal_cost_bench: what one generation's proposal costs as the history
// grows. For each history size, a history of that many rows on a recorded space
// (bench/recorded_history.h), then generations as the loop runs them: propose a batch,
// replay it, append the results, propose again. Prints a table of the time per
// generation (median, min, max over the generations after the first) and of the first
// call, which starts from nothing cached (a resumed run's first generation); for evolve,
// where the median generation's time went (EvolveProfile); and a digest of every
// configuration proposed, which stays the same when a change to a proposer leaves its
// choices alone. See docs/search.md, "Proposal cost".
//
//   tilesmith_proposal_cost_bench [--rows 500,2000,5000,20000] [--generations 10]
//                                 [--batch 8] [--failures 0.25] [--seed 1]
//                                 [--proposer evolve] [--spaces-dir DIR] RECORDING

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/hash.h"
#include "runtime/replay/recording.h"
#include "runtime/replay/replay_evaluator.h"
#include "tuner/bench/recorded_history.h"
#include "tuner/search/evolve_proposer.h"
#include "tuner/search/offline_proposers.h"

namespace {

using namespace tilesmith;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Proposal time per generation against history size, on a recorded space"};
  std::string path, spaces_dir, proposer_name = "evolve";
  std::vector<size_t> sizes = {500, 2000, 5000, 20000};
  int generations = 10, batch = 8;
  double failures = 0.25;
  std::uint64_t seed = 1;
  app.add_option("recording", path, "Kernel Tuner cache file")->required();
  app.add_option("--rows", sizes, "history sizes")->delimiter(',');
  app.add_option("--generations", generations, "generations timed per size (after the first call)")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch", batch, "configurations per generation")->check(CLI::PositiveNumber);
  app.add_option("--failures", failures, "share of the history's rows that are failures")
      ->check(CLI::Range(0.0, 0.95));
  app.add_option("--seed", seed, "seed of the history and the proposals");
  app.add_option("--proposer", proposer_name, "offline proposer (evolve, random, exhaustive)");
  app.add_option("--spaces-dir", spaces_dir,
                 "folder of space files (default: the shipped data/spaces)");
  CLI11_PARSE(app, argc, argv);

  replay::RecordingOptions rec_options;
  rec_options.spaces_dir = spaces_dir;
  auto rec = replay::Recording::load(path, rec_options);
  if (!rec.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), rec.status().to_string().c_str());
    return 1;
  }
  const replay::Recording& r = **rec;
  std::printf("# Proposal cost: %s, %s\n", proposer_name.c_str(), r.describe().c_str());
  std::printf(
      "batch %d, %d generations timed per size after a first call, %.0f%% of the history failures, "
      "seed %llu\n\n",
      batch, generations, failures * 100, static_cast<unsigned long long>(seed));
  std::printf(
      "| rows | ok / failed | first call (ms) | median per generation (ms) | min | max | median / "
      "first size's "
      "| median generation: history / process fit / forest fit / candidates / scores / picks (ms) "
      "| rows fitted: forest / process | candidates | digest |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  double first_median = 0;
  int exit_code = 0;
  for (size_t size_index = 0; size_index < sizes.size(); ++size_index) {
    const size_t rows = sizes[size_index];
    replay::ReplayEvaluator evaluator(*rec, seed);
    bench::RecordedHistoryOptions ho;
    ho.rows = rows;
    ho.failure_share = failures;
    ho.seed = seed;
    auto made = bench::recorded_history(r, evaluator, ho);
    if (!made.ok()) {
      std::fprintf(stderr, "%zu rows: %s\n", rows, made.status().to_string().c_str());
      exit_code = 1;
      continue;
    }
    std::vector<Trial> history = std::move(made).value();
    size_t ok = 0;
    for (const auto& t : history) ok += t.outcome == Outcome::kOk;
    auto proposer = make_offline_proposer(proposer_name);
    if (!proposer.ok()) {
      std::fprintf(stderr, "%s\n", proposer.status().to_string().c_str());
      return 2;
    }
    double first = 0;
    std::vector<double> times;
    std::vector<EvolveProfile> profiles;
    Hasher digest;
    for (int g = 0; g <= generations; ++g) {
      ProposalRequest req;
      req.space = &r.space();
      req.context = r.context();
      req.history = &history;
      req.count = batch;
      req.seed = seed * 1000003 + static_cast<std::uint64_t>(g);
      req.generation = g;
      const auto t0 = Clock::now();
      ProposalBatch out = (*proposer)->propose(req);
      const double ms = ms_since(t0);
      if (!out.status.ok()) {
        std::fprintf(stderr, "%zu rows, generation %d: %s\n", rows, g,
                     out.status.to_string().c_str());
        exit_code = 1;
        break;
      }
      if (g == 0) {
        first = ms;
      } else {
        times.push_back(ms);
        if (const auto* evolve = dynamic_cast<const EvolveProposer*>(proposer->get()))
          profiles.push_back(evolve->last_profile());
      }
      for (const auto& p : out.proposals) {
        digest.add_field(config_hash(p.config));
        history.push_back(bench::replay_trial(r, evaluator, p.config, out.proposer));
      }
    }
    if (times.empty()) continue;
    const double med = median(times);
    if (size_index == 0) first_median = med;
    std::string phases = "-", fitted = "-", candidates = "-";
    if (!profiles.empty()) {
      // The generation whose time is nearest the median.
      size_t at = 0;
      for (size_t i = 1; i < times.size(); ++i)
        if (std::abs(times[i] - med) < std::abs(times[at] - med)) at = i;
      const EvolveProfile& p = profiles[at];
      char buf[160];
      std::snprintf(buf, sizeof buf, "%.1f / %.1f / %.1f / %.1f / %.1f / %.1f", p.history_ms,
                    p.process_fit_ms, p.forest_fit_ms, p.candidates_ms, p.score_ms, p.picks_ms);
      phases = buf;
      fitted = std::to_string(p.forest_rows) + " / " + std::to_string(p.process_rows);
      candidates = std::to_string(p.candidates);
    }
    std::printf("| %zu | %zu / %zu | %.1f | %.1f | %.1f | %.1f | %.2f | %s | %s | %s | %s |\n",
                rows, ok, rows - ok, first, med, *std::min_element(times.begin(), times.end()),
                *std::max_element(times.begin(), times.end()),
                first_median > 0 ? med / first_median : 0.0, phases.c_str(), fitted.c_str(),
                candidates.c_str(), digest.hex().substr(0, 12).c_str());
    std::fflush(stdout);
  }
  return exit_code;
}
