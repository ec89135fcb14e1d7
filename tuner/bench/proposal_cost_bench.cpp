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
// --parts times evolve's parts one by one instead (tuner/search/detail/: the surrogate's
// two fits, the candidate generator, the acquisition's scores, the pick policies), on the
// same histories (default sizes 500 and 20,000 rows), composed as propose() composes them
// (detail/evolve_parts.h): the median of --repeats runs of each, and whether the batch the
// parts made is the one propose() makes from the same history and seed.
//
// --history FILE times the proposer on a real run instead: the shipped templates' spaces
// (not a recording's), each template's trials from the first ROWS rows of that run's
// history.csv (--rows: prefixes), the problem its rows name and the device the run's
// journal.jsonl beside it recorded (the architecture's nominal facts without one). One line per
// prefix and template: what a generation of --batch proposals costs the loop there.
//
//   tilesmith_proposal_cost_bench [--rows 500,2000,5000,20000] [--generations 10]
//                                 [--batch 8] [--failures 0.25] [--seed 1]
//                                 [--proposer evolve] [--spaces-dir DIR]
//                                 [--parts [--repeats 5]] RECORDING
//   tilesmith_proposal_cost_bench --history results/history.csv [--rows 500,1500,2900]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <optional>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "registry/device_facts.h"
#include "registry/template_library.h"
#include "runtime/replay/recording.h"
#include "runtime/replay/replay_evaluator.h"
#include "tuner/bench/recorded_history.h"
#include "tuner/records/history.h"
#include "tuner/records/history_recording.h"
#include "tuner/records/journal.h"
#include "tuner/search/detail/evolve_parts.h"
#include "tuner/search/detail/view_cache.h"
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

// --parts: each part of evolve timed on its own at each history size.
// A history of `rows` rows on the recording, replayed by `evaluator` (bench/recorded_history.h;
// the caller goes on replaying with it); nullopt, said on stderr, where it cannot be made.
std::optional<std::vector<Trial>> history_of(const replay::Recording& recording, replay::ReplayEvaluator& evaluator,
                                             size_t rows, double failures, std::uint64_t seed) {
  bench::RecordedHistoryOptions ho;
  ho.rows = rows;
  ho.failure_share = failures;
  ho.seed = seed;
  auto made = bench::recorded_history(recording, evaluator, ho);
  if (!made.ok()) {
    std::fprintf(stderr, "%zu rows: %s\n", rows, made.status().to_string().c_str());
    return std::nullopt;
  }
  return std::move(made).value();
}

int run_parts(const std::shared_ptr<const replay::Recording>& recording,
              const std::vector<size_t>& sizes, int batch, double failures, std::uint64_t seed,
              int repeats) {
  namespace parts = proposers::detail;
  const replay::Recording& r = *recording;
  std::printf("# Proposal cost by part: evolve, %s\n", r.describe().c_str());
  std::printf(
      "batch %d, %.0f%% of the history failures, seed %llu, median of %d runs of each part "
      "(ms)\n\n",
      batch, failures * 100, static_cast<unsigned long long>(seed), repeats);
  std::printf(
      "| rows | history index (every row, once) | surrogate: process fit | surrogate: forest "
      "fit | rows fitted: forest / process | candidate generator | candidates | acquisition "
      "(scores) | pick policies | parts in all | stalled | same batch as propose() |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  const EvolveOptions options;  // the defaults, as autotune-loop runs evolve
  const size_t want = static_cast<size_t>(batch);
  int exit_code = 0;
  for (size_t rows : sizes) {
    replay::ReplayEvaluator evaluator(recording, seed);
    auto made = history_of(r, evaluator, rows, failures, seed);
    if (!made) {
      exit_code = 1;
      continue;
    }
    const std::vector<Trial> history = std::move(*made);
    parts::ViewCache views;
    const auto view = views.get(r.space(), r.context());
    std::vector<double> index_ms, process_ms, forest_ms, candidates_ms, score_ms, picks_ms;
    size_t forest_rows = 0, process_rows = 0, candidates = 0;
    bool stalled = false, same = true;
    ProposalRequest req;
    req.space = &r.space();
    req.context = r.context();
    req.history = &history;
    req.count = batch;
    req.seed = seed * 1000003;
    for (int k = 0; k < repeats; ++k) {
      auto t0 = Clock::now();
      parts::HistoryIndex index(options.stall_gain);
      index.update(view, &history);
      index_ms.push_back(ms_since(t0));
      std::mt19937_64 rng(parts::mix_seed(req.seed, index.size()));

      parts::SurrogateModels models;
      models.fit(parts::training_data(index, *view), parts::surrogate_options(options), rng);
      process_ms.push_back(models.process_fit_ms());
      forest_ms.push_back(models.forest_fit_ms());
      forest_rows = models.forest_rows();
      process_rows = models.process_rows();

      t0 = Clock::now();
      const auto elite = parts::elite_points(index, parts::elite_count(options));
      const parts::Candidates cand =
          parts::CandidateGenerator(*view, index, parts::candidate_options(options)).generate(elite, rng);
      candidates_ms.push_back(ms_since(t0));
      candidates = cand.size();

      t0 = Clock::now();
      const parts::Acquisition acquisition(models, parts::acquisition_options(options));
      parts::CandidateScores scores = acquisition.score(cand.feature_rows(), cand.size());
      score_ms.push_back(ms_since(t0));

      t0 = Clock::now();
      stalled = parts::stalled(options, index, want);
      const parts::Distance dist = parts::distance(options, index, stalled);
      parts::BatchPicks picks(cand, &scores, acquisition, dist, index.observations(), want);
      parts::PickPolicies(*view, index, cand, acquisition, dist, elite, stalled,
                          parts::pick_options(options))
          .pick(&picks, &scores, rng);
      picks_ms.push_back(ms_since(t0));

      if (k == 0) {  // the parts composed here make propose()'s batch
        EvolveProposer proposer(options);
        const ProposalBatch out = proposer.propose(req);
        same = out.status.ok() && out.proposals.size() == picks.size();
        for (size_t i = 0; same && i < picks.size(); ++i)
          same = out.proposals[i].config == r.space().to_config(cand.point(picks.picks()[i].candidate));
      }
    }
    const double total = median(process_ms) + median(forest_ms) + median(candidates_ms) +
                         median(score_ms) + median(picks_ms);
    std::printf("| %zu | %.1f | %.1f | %.1f | %zu / %zu | %.1f | %zu | %.1f | %.1f | %.1f | %s | %s |\n",
                rows, median(index_ms), median(process_ms), median(forest_ms), forest_rows,
                process_rows, median(candidates_ms), candidates, median(score_ms), median(picks_ms),
                total, stalled ? "yes" : "no", same ? "yes" : "NO");
    std::fflush(stdout);
    if (!same) exit_code = 1;
  }
  return exit_code;
}


// One generation's request as the bench makes it: --batch configs, the seed of
// generation g.
ProposalRequest generation_request(const ParamSpace& space, const SpaceContext& context,
                                   const std::vector<Trial>& history, int batch, std::uint64_t seed, int g) {
  ProposalRequest req;
  req.space = &space;
  req.context = context;
  req.history = &history;
  req.count = batch;
  req.seed = seed * 1000003 + static_cast<std::uint64_t>(g);
  req.generation = g;
  return req;
}

// --history: each template's proposer at prefixes of a real run's history.
int run_history(const std::string& path, const std::vector<size_t>& sizes, int batch, int generations,
                std::uint64_t seed, const std::string& proposer_name) {
  auto load = read_history(path);
  if (!load.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), load.status().to_string().c_str());
    return 1;
  }
  const std::vector<HistoryRow>& rows = load->rows;
  if (rows.empty()) {
    std::fprintf(stderr, "%s: no rows\n", path.c_str());
    return 1;
  }
  auto library = TemplateLibrary::embedded();
  if (!library.ok()) {
    std::fprintf(stderr, "%s\n", library.status().to_string().c_str());
    return 1;
  }
  const HistoryRow& first = rows.front();
  auto parsed_problem = problem_of_row(first);
  if (!parsed_problem.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), parsed_problem.status().to_string().c_str());
    return 1;
  }
  const GemmProblem problem = *parsed_problem;
  // The device as the run's journal (beside the history) recorded it; the architecture's
  // nominal facts without one (they do not know the SM count, which some rules read).
  DeviceFacts device = nominal_facts_for_arch(first.device_arch);
  // Read-only, not through RunJournal::open, which repairs a torn last line: a benchmark
  // leaves the run's folder as it found it.
  const auto recorded = read_first_device(std::filesystem::path(path).parent_path() / kJournalFileName);
  const bool from_journal = recorded.has_value();
  if (recorded) device = *recorded;
  std::printf("# Proposal cost on a run's history: %s, %s, %s on %s (%d SMs, %s)\n", proposer_name.c_str(),
              path.c_str(), problem.describe().c_str(), first.device_arch.c_str(), device.multiprocessors,
              from_journal ? "the run's journal" : "nominal: no journal beside the history");
  std::printf("batch %d per template, %d generations timed per prefix after a first call\n\n", batch, generations);
  std::printf("| rows | template | its trials | first call (ms) | median per generation (ms) | max | last generation: "
      "history / process fit / forest fit / candidates / scores / picks (ms) |\n|---|---|---|---|---|---|---|\n");
  int exit_code = 0;
  for (size_t size : sizes) {
    const size_t n = std::min(size, rows.size());
    std::map<std::string, std::vector<Trial>> trials;
    for (size_t i = 0; i < n; ++i) {
      const HistoryRow& r = rows[i];
      if (r.config_hash.empty()) continue;
      auto config = config_from_json_text(r.config);
      if (!config.ok()) continue;
      Trial t;
      t.config = std::move(config).value();
      t.outcome = r.outcome;
      if (r.ok()) t.score = t.median_ms = r.median_ms;
      t.proposer = r.proposer;
      trials[r.template_name].push_back(std::move(t));
    }
    double total = 0;
    for (const auto& [name, history] : trials) {
      const KernelTemplate* tmpl = library->find(name);
      if (!tmpl) continue;
      auto proposer = make_offline_proposer(proposer_name);
      if (!proposer.ok()) {
        std::fprintf(stderr, "%s\n", proposer.status().to_string().c_str());
        return 2;
      }
      const SpaceContext context = tmpl->context(problem, &device);
      double first_ms = 0;
      std::vector<double> times;
      std::string phases = "-";
      for (int g = 0; g <= generations; ++g) {
        const ProposalRequest req = generation_request(tmpl->space(), context, history, batch, seed, g);
        const auto t0 = Clock::now();
        ProposalBatch out = (*proposer)->propose(req);
        const double ms = ms_since(t0);
        if (!out.status.ok() && out.proposals.empty()) {
          std::fprintf(stderr, "%s at %zu rows: %s\n", name.c_str(), n, out.status.to_string().c_str());
          exit_code = 1;
          break;
        }
        (g == 0 ? first_ms : times.emplace_back()) = ms;
        if (const auto* evolve = dynamic_cast<const EvolveProposer*>(proposer->get())) {
          const EvolveProfile& p = evolve->last_profile();
          char buf[160];
          std::snprintf(buf, sizeof buf, "%.1f / %.1f / %.1f / %.1f / %.1f / %.1f (%zu candidates)", p.history_ms,
                        p.process_fit_ms, p.forest_fit_ms, p.candidates_ms, p.score_ms, p.picks_ms, p.candidates);
          phases = buf;
        }
      }
      if (times.empty()) continue;
      total += median(times);
      std::printf("| %zu | %s | %zu | %.1f | %.1f | %.1f | %s |\n", n, name.c_str(), history.size(), first_ms,
                  median(times), *std::max_element(times.begin(), times.end()), phases.c_str());
    }
    std::printf("| %zu | all templates | | | %.1f | | |\n", n, total);
    std::fflush(stdout);
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Proposal time per generation against history size, on a recorded space"};
  std::string path, spaces_dir, proposer_name = "evolve";
  std::vector<size_t> sizes = {500, 2000, 5000, 20000};
  int generations = 10, batch = 8;
  double failures = 0.25;
  std::uint64_t seed = 1;
  app.add_option("recording", path, "Kernel Tuner cache file");
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
  bool by_part = false;
  int repeats = 5;
  app.add_flag("--parts", by_part,
               "time evolve's parts one by one (default rows: 500,20000) instead of generations");
  app.add_option("--repeats", repeats, "--parts: runs of each part per size (the median is shown)")
      ->check(CLI::PositiveNumber);
  std::string history_path;
  app.add_option("--history", history_path,
                 "a run's history.csv: time each template's proposer at prefixes of it (--rows), on the "
                 "shipped templates' spaces, instead of a recording");
  CLI11_PARSE(app, argc, argv);
  if (!history_path.empty()) return run_history(history_path, sizes, batch, generations, seed, proposer_name);
  if (by_part && app.count("--rows") == 0) sizes = {500, 20000};

  if (path.empty()) {
    std::fprintf(stderr, "give a Kernel Tuner cache file (RECORDING) or --history FILE\n");
    return 2;
  }
  replay::RecordingOptions rec_options;
  rec_options.spaces_dir = spaces_dir;
  auto rec = replay::Recording::load(path, rec_options);
  if (!rec.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), rec.status().to_string().c_str());
    return 1;
  }
  const replay::Recording& r = **rec;
  if (by_part) return run_parts(*rec, sizes, batch, failures, seed, repeats);
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
    auto made = history_of(r, evaluator, rows, failures, seed);
    if (!made) {
      exit_code = 1;
      continue;
    }
    std::vector<Trial> history = std::move(*made);
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
      const ProposalRequest req = generation_request(r.space(), r.context(), history, batch, seed, g);
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
