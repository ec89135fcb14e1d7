// tilesmith_search_bench: how many evaluations each offline proposer needs to come
// within 5% (and 1%) of the optimum of recorded Kernel Tuner spaces, over many seeds,
// next to the exact figures for uniform random sampling. See docs/search.md.
//
//   tilesmith_search_bench [--seeds 20] [--batch 8] [--cap 2000] [--proposers evolve,random]
//                          [--spaces-dir DIR] [--loop] [--detail] [--calibration 5%] PATH...
// PATH: Kernel Tuner cache files, or folders holding *.json / *.json.gz caches.
// --loop runs each seed through the whole tuning loop (bench/loop_run.h) instead of
// calling the proposer directly; --detail adds a line per seed; --calibration checks the
// loop's convergence estimate against the truth the recording knows. --set runs the
// recordings of each problem together, one template each, once per --allocation (even,
// gain), with targets relative to the fastest over all of them. --prior SOURCE starts every run
// with picks from SOURCE (tuner/search/prior.h; those the target recorded), --prior-shuffled with
// its times shuffled first (an unrelated prior of the same space).

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "analysis/stats.h"
#include "registry/template_library.h"
#include "runtime/replay/recording.h"
#include "runtime/replay/replay_set.h"
#include "tuner/bench/loop_report.h"
#include "tuner/bench/loop_run.h"
#include "tuner/bench/search_run.h"
#include "tuner/bench/set_bench.h"
#include "tuner/loop/convergence_stop.h"
#include "tuner/search/evolve_proposer.h"
#include "tuner/search/offline_proposers.h"
#include "tuner/search/prior.h"
#include "tuner/search/prior_rescale.h"
#include "tuner/search/template_allocation.h"
#include "tuner/search/warm_start_proposer.h"

namespace {

using namespace tilesmith;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<std::filesystem::path> cache_files(const std::vector<std::string>& paths) {
  std::vector<std::filesystem::path> out;
  for (const auto& p : paths) {
    if (std::filesystem::is_directory(p)) {
      std::vector<std::filesystem::path> found;
      for (const auto& e : std::filesystem::directory_iterator(p)) {
        const std::string n = e.path().filename().string();
        if (n.ends_with(".json.gz") || n.ends_with(".json")) found.push_back(e.path());
      }
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else {
      out.emplace_back(p);
    }
  }
  return out;
}

// Applies "key=value,key=value" to EvolveOptions, for exploring the proposer's settings.
bool apply_evolve_options(const std::string& text, EvolveOptions* o) {
  using Setter = void (*)(EvolveOptions&, double);
  static const std::map<std::string, Setter> kSetters = {
      {"initial_design", [](EvolveOptions& o, double v) { o.initial_design = static_cast<int>(v); }},
      {"initial_design_prior", [](EvolveOptions& o, double v) { o.initial_design_prior = static_cast<int>(v); }},
      {"prior_feature", [](EvolveOptions& o, double v) { o.prior_feature = v != 0; }},
      {"prior_quick_evaluations", [](EvolveOptions& o, double v) { o.prior_quick_evaluations = static_cast<int>(v); }},
      {"prior_agree_rho", [](EvolveOptions& o, double v) { o.prior_agree_rho = v; }},
      {"trees", [](EvolveOptions& o, double v) { o.forest.trees = static_cast<int>(v); }},
      {"min_leaf", [](EvolveOptions& o, double v) { o.forest.min_leaf = static_cast<int>(v); }},
      {"feature_fraction", [](EvolveOptions& o, double v) { o.forest.feature_fraction = v; }},
      {"bootstrap", [](EvolveOptions& o, double v) { o.forest.bootstrap = v != 0; }},
      {"failure_penalty", [](EvolveOptions& o, double v) { o.failure_penalty = v; }},
      {"exploit", [](EvolveOptions& o, double v) { o.exploit_per_batch = static_cast<int>(v); }},
      {"local", [](EvolveOptions& o, double v) { o.local_per_batch = static_cast<int>(v); }},
      {"diversity", [](EvolveOptions& o, double v) { o.diversity_penalty = v; }},
      {"exploration", [](EvolveOptions& o, double v) { o.exploration = v; }},
      {"elite", [](EvolveOptions& o, double v) { o.elite = static_cast<int>(v); }},
      {"local_elites", [](EvolveOptions& o, double v) { o.local_elites = static_cast<int>(v); }},
      {"ei_quantile", [](EvolveOptions& o, double v) { o.ei_quantile = v; }},
      {"thompson", [](EvolveOptions& o, double v) { o.acquisition = v != 0 ? Acquisition::kThompson : Acquisition::kExpectedImprovement; }},
      {"thompson_trees", [](EvolveOptions& o, double v) { o.thompson_trees = v; }},
      {"clip_quantile", [](EvolveOptions& o, double v) { o.clip_quantile = v; }},
      {"region_radius", [](EvolveOptions& o, double v) { o.region_radius = static_cast<int>(v); }},
      {"convergence_stood", [](EvolveOptions& o, double v) { o.convergence_stood = v; }},
      {"convergence_spread", [](EvolveOptions& o, double v) { o.convergence_spread = v; }},
      {"stall_generations", [](EvolveOptions& o, double v) { o.stall_generations = static_cast<int>(v); }},
      {"stall_gain", [](EvolveOptions& o, double v) { o.stall_gain = v; }},
      {"basins", [](EvolveOptions& o, double v) { o.basins = static_cast<int>(v); }},
      {"basin_distance", [](EvolveOptions& o, double v) { o.basin_distance = static_cast<int>(v); }},
      {"restart", [](EvolveOptions& o, double v) { o.restart_per_batch = static_cast<int>(v); }},
      {"restart_distance", [](EvolveOptions& o, double v) { o.restart_distance = static_cast<int>(v); }},
      {"far", [](EvolveOptions& o, double v) { o.far_per_batch = static_cast<int>(v); }},
      {"far_quantile", [](EvolveOptions& o, double v) { o.far_quantile = v; }},
      {"stall_radius", [](EvolveOptions& o, double v) { o.stall_radius = static_cast<int>(v); }},
      {"explore", [](EvolveOptions& o, double v) { o.explore_per_batch = static_cast<int>(v); }},
      {"explore_quantile", [](EvolveOptions& o, double v) { o.explore_quantile = v; }},
      {"no_effect_pairs", [](EvolveOptions& o, double v) { o.no_effect_pairs = static_cast<int>(v); }},
      {"no_effect_tolerance", [](EvolveOptions& o, double v) { o.no_effect_tolerance = v; }},
      {"no_effect_until_stall", [](EvolveOptions& o, double v) { o.no_effect_until_stall = v != 0; }},
      {"no_effect_max", [](EvolveOptions& o, double v) { o.no_effect_max = v != 0; }},
      {"stall_neighbours_first", [](EvolveOptions& o, double v) { o.stall_neighbours_first = v != 0; }},
      {"local_by_ei", [](EvolveOptions& o, double v) { o.local_by_ei = v != 0; }},
      {"gp", [](EvolveOptions& o, double v) { o.surrogate = v != 0 ? Surrogate::kGaussianProcess : Surrogate::kForest; }},
      {"second", [](EvolveOptions& o, double v) { o.second_picks = static_cast<int>(v); }},
      {"second_exploit", [](EvolveOptions& o, double v) { o.second_exploit = static_cast<int>(v); }},
      {"gp_clip_quantile", [](EvolveOptions& o, double v) { o.gp_clip_quantile = v; }},
      {"gp_iterations", [](EvolveOptions& o, double v) { o.gaussian_process.max_iterations = static_cast<int>(v); }},
      {"gp_fit_rows", [](EvolveOptions& o, double v) { o.gaussian_process.max_fit_rows = static_cast<int>(v); }},
      {"gp_length", [](EvolveOptions& o, double v) { o.gaussian_process.initial_length = v; }},
      {"forest_rows", [](EvolveOptions& o, double v) { o.max_forest_rows = static_cast<size_t>(v); }},
      {"process_rows", [](EvolveOptions& o, double v) { o.max_process_rows = static_cast<size_t>(v); }},
      {"best_share", [](EvolveOptions& o, double v) { o.training_best_share = v; }},
      {"recent_share", [](EvolveOptions& o, double v) { o.training_recent_share = v; }},
  };
  for (const auto& item : split(text)) {
    auto eq = item.find('=');
    if (eq == std::string::npos) return false;
    auto setter = kSetters.find(item.substr(0, eq));
    if (setter == kSetters.end()) return false;
    setter->second(*o, std::stod(item.substr(eq + 1)));
  }
  return true;
}

// "37" or ">2000" when the statistic falls on runs that hit the cap.
std::string stat(const std::vector<double>& sorted, double q, int cap) {
  double v = analysis::percentile_sorted(sorted, q);
  if (v > cap) return ">" + std::to_string(cap);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Search efficiency of the offline proposers on recorded Kernel Tuner spaces"};
  std::vector<std::string> paths;
  int seeds = 20;
  std::string proposers_arg;
  std::string spaces_dir;
  std::string evolve_text;
  int first_seed = 1;
  int jobs = 1;
  bench::SearchRunOptions options;
  app.add_option("paths", paths, "Kernel Tuner cache files or folders of them")->required();
  app.add_option("--seeds", seeds, "runs per proposer and space (seeds 1..N)")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch", options.batch, "configurations per generation")
      ->check(CLI::PositiveNumber);
  app.add_option("--cap", options.cap, "evaluations per run")->check(CLI::PositiveNumber);
  app.add_option("--proposers", proposers_arg, "comma-separated proposer names (default: all)");
  app.add_option("--spaces-dir", spaces_dir,
                 "folder of space files (default: the shipped data/spaces)");
  app.add_option("--jobs", jobs, "runs in parallel (threads)")->check(CLI::PositiveNumber);
  app.add_option("--first-seed", first_seed,
                 "first seed (runs use first-seed .. first-seed+seeds-1)");
  app.add_option("--evolve", evolve_text,
                 "evolve settings to try, key=value,... (see evolve_proposer.h)");
  bool through_loop = false, detail = false;
  std::string calibration_text;
  std::string prior_path;
  int prior_count = kPriorPicks;  // as autotune-loop
  app.add_option("--prior", prior_path,
                 "transfer mode: start each run with picks from this recording of the same space measured on "
                 "another device or problem (a Kernel Tuner cache or a history.csv; tuner/search/prior.h)");
  app.add_option("--prior-picks", prior_count, "with --prior: how many of its configurations start each run")
      ->check(CLI::NonNegativeNumber);
  bool prior_shuffled = false;
  app.add_flag("--prior-shuffled", prior_shuffled,
               "with --prior: shuffle its times among its configurations first (an unrelated prior of the same "
               "space, for the guard against negative transfer)");
  bool prior_as_measured = false;
  app.add_flag("--prior-as-measured", prior_as_measured,
               "with --prior: take its times as measured, not carried to each target's problem by its blocks' "
               "waves (tuner/search/prior_rescale.h; the search before that model)");
  int sms = 0;
  app.add_option("--sms", sms,
                 "with --prior: the multiprocessors of the recordings' GPU, for carrying the prior to a target's "
                 "problem where the target recording does not say (recordings of early versions; data/recordings' "
                 "H200 files say 132)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--loop", through_loop,
               "run each seed through the whole tuning loop (GenerationLoop with the replay backend, as "
               "autotune-loop --backend replay --max-evals CAP --seed S) instead of calling the proposer");
  app.add_flag("--detail", detail, "with --loop: a line per seed (where the best came from, what the budget went to)");
  app.add_option("--calibration", calibration_text,
                 "with --loop: check the loop's convergence estimate for this margin (e.g. 5%) against the truth");
  std::string keep_dir;
  app.add_option("--keep", keep_dir, "with --loop: keep each run's results folder under this folder");
  bool sets = false;
  std::string allocation_text = "even,gain";
  app.add_flag(
      "--set", sets,
      "run the recordings of each problem together, one template each, through the loop (evolve), "
      "once per --allocation");
  app.add_option("--allocation", allocation_text,
                 "with --set: allocations over templates to compare (even,gain)");
  std::string allocation_settings;
  app.add_option(
      "--allocation-settings", allocation_settings,
      "with --set: AllocationOptions to try, key=value,... (known_after, top, confidence, per_template, tail_weight)");
  CLI11_PARSE(app, argc, argv);
  std::optional<ConvergenceStop> calibration;
  if (!calibration_text.empty()) {
    auto c = parse_convergence_stop(calibration_text);
    if (!c.ok()) {
      std::fprintf(stderr, "--calibration: %s\n", c.status().message().c_str());
      return 2;
    }
    calibration = *c;
  }
  if ((detail || calibration) && !through_loop) {
    std::fprintf(stderr, "--detail and --calibration go with --loop\n");
    return 2;
  }
  EvolveOptions evolve_options;
  if (!apply_evolve_options(evolve_text, &evolve_options)) {
    std::fprintf(stderr, "bad --evolve settings '%s'\n", evolve_text.c_str());
    return 2;
  }

  std::vector<std::string> proposer_names =
      proposers_arg.empty() ? offline_proposer_names() : split(proposers_arg);
  // Exhaustive search order says nothing about search efficiency on its own seeds (it
  // ignores them); one run is enough.
  replay::RecordingOptions rec_options;
  rec_options.spaces_dir = spaces_dir;

  std::printf(
      "# Search efficiency: evaluations until the best found is within 5%% / 1%% of the optimum\n");
  std::printf(
      "seeds %d..%d, batch %d, cap %d evaluations per run%s; distances use the recorded mean times\n",
      first_seed, first_seed + seeds - 1, options.batch, options.cap,
      through_loop ? ", through the tuning loop (history.csv evaluation rows)" : "");
  if (!evolve_text.empty()) std::printf("evolve settings: %s\n", evolve_text.c_str());
  std::printf("\n");
  if (sets) {
    auto recs = replay::load_recordings(cache_files(paths), rec_options);
    if (!recs.ok()) {
      std::fprintf(stderr, "%s\n", recs.status().to_string().c_str());
      return 1;
    }
    AllocationOptions ao;
    for (const auto& item : split(allocation_settings)) {
      const auto eq = item.find('=');
      const std::string key = item.substr(0, eq);
      const double v = eq == std::string::npos ? 0 : std::stod(item.substr(eq + 1));
      if (key == "known_after")
        ao.known_after = static_cast<int>(v);
      else if (key == "top")
        ao.top = static_cast<int>(v);
      else if (key == "confidence")
        ao.confidence = v;
      else if (key == "per_template")
        ao.per_template = static_cast<int>(v);
      else if (key == "tail_weight")
        ao.tail_weight = v;
      else {
        std::fprintf(stderr, "bad --allocation-settings '%s' (known_after, top, confidence, per_template, tail_weight)\n",
                     item.c_str());
        return 2;
      }
    }
    if (!allocation_settings.empty())
      std::printf("allocation settings: %s\n\n", allocation_settings.c_str());
    return bench::run_sets(*recs, split(allocation_text), ao, seeds, first_seed, jobs, options);
  }
  // --prior: every source it holds, pooled regardless of its template's name (the pair is the
  // user's choice: a recording is named after its file, not its template).
  std::vector<PriorSource> prior_sources;
  std::string prior_kernel;  // the sources' template, before they are renamed "prior" below
  if (!prior_path.empty()) {
    auto sources = load_prior(prior_path);
    if (!sources.ok()) {
      std::fprintf(stderr, "--prior: %s\n", sources.status().message().c_str());
      return 2;
    }
    for (auto& src : *sources) {
      prior_kernel = src.template_name;
      src.template_name = "prior";
      if (prior_shuffled) {
        std::vector<double> times;
        for (const auto& row : src.rows) times.push_back(row.time_ms);
        std::mt19937_64 rng(12345);
        std::shuffle(times.begin(), times.end(), rng);
        for (std::size_t i = 0; i < times.size(); ++i) src.rows[i].time_ms = times[i];
        std::sort(src.rows.begin(), src.rows.end(), [](const auto& a, const auto& b) { return a.time_ms < b.time_ms; });
        src.describe = "(times shuffled) " + src.describe;
      }
    }
    prior_sources = std::move(sources).value();
  }
  // Every measurement of the prior, for the proposer's model of the space (evolve's prior
  // feature; `--evolve prior_feature=0` leaves it out): the source's knowledge, not only what
  // the target recorded; carried to each target's problem below.
  std::vector<PriorMeasurement> prior_rows;
  // The template the prior was measured with, for its launch geometry (a Kernel Tuner kernel of
  // its own has none here: its prior is taken as measured).
  const KernelTemplate* prior_template =
      prior_sources.empty() || prior_as_measured ? nullptr : embedded_template(prior_kernel);
  int exit_code = 0;
  for (const auto& file : cache_files(paths)) {
    auto rec = replay::Recording::load(file, rec_options);
    if (!rec.ok()) {
      std::fprintf(stderr, "%s: %s\n", file.c_str(), rec.status().to_string().c_str());
      exit_code = 1;
      continue;
    }
    const replay::Recording& r = **rec;
    const std::uint64_t valid = r.space().enumerate_valid(r.context()).size();
    // A recording answers only what it recorded: the prior's configurations this one lacks
    // (recordings of large spaces are uniform samples) are left out before picking, where a
    // GPU would measure them. The picks are then the fastest of a random share of the prior.
    std::vector<WarmStartSeed> prior_seeds;
    if (!prior_sources.empty()) {
      std::vector<PriorSource> answerable = prior_sources;
      // Carried to this recording's problem on its GPU (--sms where the recording lacks the SM count).
      auto geometry = r.launch_device();
      if (prior_template && r.knows_whole_problem() && geometry) {
        if (geometry->multiprocessors <= 0) geometry->multiprocessors = sms;
        for (auto& src : answerable) src = rescaled_to_problem(src, *prior_template, r.problem(), *geometry);
      }
      prior_rows = prior_measurements_for(answerable, "prior");
      options.prior = prior_rows.empty() ? nullptr : &prior_rows;
      std::size_t kept = 0, all = 0;
      for (auto& src : answerable) {
        all += src.rows.size();
        std::erase_if(src.rows, [&](const PriorSource::Row& row) { return r.find(row.config) == nullptr; });
        kept += src.rows.size();
      }
      prior_seeds = prior_picks_for(answerable, "prior", prior_count);
      std::printf("prior: %zu picks from %s (%zu of its %zu measured configurations are in this recording)\n",
                  prior_seeds.size(), prior_sources.front().describe.c_str(), kept, all);
    }
    std::printf("## %s: %s\n", r.name().c_str(), r.describe().c_str());
    std::printf("%llu valid configurations (constraints: %s)",
                static_cast<unsigned long long>(valid), r.space_origin().c_str());
    for (double t : options.targets)
      std::printf("; %zu within %.0f%%", r.count_within(1 + t), t * 100);
    std::printf("\n\n");
    std::printf(
        "| proposer | target | median | q1 | q3 | worst | mean | cap hits | best/opt at stop (median) | ms "
        "per proposal |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < options.targets.size(); ++k) {
      auto b = bench::uniform_sampling_baseline(valid, r.count_within(1 + options.targets[k]));
      std::printf("| uniform random, exact | %.0f%% | %llu | %llu | %llu | - | %.1f | - | - | - |\n",
                  options.targets[k] * 100, static_cast<unsigned long long>(b.median),
                  static_cast<unsigned long long>(b.q1), static_cast<unsigned long long>(b.q3),
                  b.expectation);
    }
    for (const auto& name : proposer_names) {
      std::vector<std::vector<double>> hits(options.targets.size());
      std::vector<int> cap_hits(options.targets.size(), 0);
      std::vector<double> best_ratio;
      double seconds = 0;
      int calls = 0;
      const int runs = name == "exhaustive" || name == "grid" ? 1 : seeds;
      // Runs are independent (a proposer each; the recording is shared read-only), so
      // they can go on several threads; results are gathered by seed, so the table does
      // not depend on the thread count.
      std::vector<bench::SearchRunResult> results(static_cast<size_t>(runs));
      std::vector<bench::LoopRunResult> loop_results(through_loop ? static_cast<size_t>(runs) : 0);
      std::atomic<int> next{0};
      bool bad_name = false;
      auto worker = [&] {
        for (int i = next++; i < runs; i = next++) {
          auto proposer = make_offline_proposer(name);
          if (!proposer.ok()) {
            bad_name = true;
            return;
          }
          if (name == "evolve" && !evolve_text.empty())
            *proposer = std::make_unique<EvolveProposer>(evolve_options);
          // The prior's rows go with the picks, as autotune-loop hands them over
          // (tuner/assembly/proposer_factory.cpp: a wrapper wherever there are picks or rows):
          // through the loop the proposer sees no request.prior of the benchmark's own.
          if (!prior_seeds.empty() || options.prior) {
            WarmStartOptions warm;
            if (options.prior) warm.prior = *options.prior;
            *proposer = std::make_unique<WarmStartProposer>(prior_seeds, std::move(*proposer), std::move(warm));
          }
          const auto seed = static_cast<std::uint64_t>(first_seed + i);
          if (through_loop) {
            bench::LoopRunOptions lo;
            lo.candidates = options.batch;
            lo.max_evals = options.cap;
            lo.targets = options.targets;
            if (calibration) lo.convergence_margin = calibration->margin;
            if (!keep_dir.empty()) {
              lo.scratch = keep_dir;
              lo.keep = true;
            }
            auto& lr = loop_results[static_cast<size_t>(i)];
            lr = bench::run_loop(*rec, **proposer, seed, lo);
            results[static_cast<size_t>(i)] = bench::as_search_result(lr);
          } else {
            results[static_cast<size_t>(i)] = bench::run_search(r, **proposer, seed, options);
          }
        }
      };
      std::vector<std::thread> threads;
      for (int t = 0; t < std::max(1, jobs); ++t) threads.emplace_back(worker);
      for (auto& t : threads) t.join();
      if (bad_name) {
        std::fprintf(stderr, "%s\n", make_offline_proposer(name).status().to_string().c_str());
        return 2;
      }
      for (int i = 0; i < runs; ++i) {
        const auto& res = results[static_cast<size_t>(i)];
        if (!res.status.ok()) {
          std::fprintf(stderr, "%s seed %d: %s\n", name.c_str(), first_seed + i,
                       res.status.to_string().c_str());
          exit_code = 1;
        }
        for (size_t k = 0; k < options.targets.size(); ++k) {
          if (res.evaluations_to_target[k]) {
            hits[k].push_back(*res.evaluations_to_target[k]);
          } else {
            hits[k].push_back(options.cap + 1.0);  // above every real count: sorts last
            ++cap_hits[k];
          }
        }
        best_ratio.push_back(res.best_over_optimum);
        seconds += res.propose_seconds;
        calls += res.propose_calls;
      }
      std::sort(best_ratio.begin(), best_ratio.end());
      for (size_t k = 0; k < options.targets.size(); ++k) {
        auto& v = hits[k];
        std::sort(v.begin(), v.end());
        double mean = 0;
        for (double x : v) mean += x;
        mean /= double(v.size());
        std::string mean_text =
            cap_hits[k] ? ">" + std::to_string(static_cast<long long>(mean)) : [&] {
              char buf[32];
              std::snprintf(buf, sizeof buf, "%.1f", mean);
              return std::string(buf);
            }();
        std::printf("| %s | %.0f%% | %s | %s | %s | %s | %s | %d/%zu | %.3f | %.1f |\n", name.c_str(),
                    options.targets[k] * 100, stat(v, 0.5, options.cap).c_str(),
                    stat(v, 0.25, options.cap).c_str(), stat(v, 0.75, options.cap).c_str(),
                    stat(v, 1.0, options.cap).c_str(), mean_text.c_str(), cap_hits[k], v.size(),
                    analysis::percentile_sorted(best_ratio, 0.5),
                    calls ? seconds / calls * 1e3 : 0.0);
      }
      if (detail) std::printf("\n%s\n", bench::format_loop_details(name, loop_results, first_seed).c_str());
      if (calibration)
        std::printf("\n%s\n", bench::format_calibration(name, loop_results, calibration->margin).c_str());
      std::fflush(stdout);
    }
    std::printf("\n");
  }
  return exit_code;
}
