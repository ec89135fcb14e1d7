#include "tuner/bench/set_bench.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "analysis/stats.h"
#include "runtime/replay/replay_set.h"
#include "tuner/bench/loop_run.h"
#include "tuner/search/evolve_proposer.h"

namespace tilesmith::bench {

namespace {

// "37" for a count, "miss" for a run that never got there.
std::string count_text(double v, int cap) {
  if (v > cap) return "miss";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

// --set: each problem's recordings run together, one template each, through the loop
// (run_loop over several recordings), once per allocation; a row per allocation
// and target, then the evaluations each template got.
int run_sets(const std::vector<std::shared_ptr<const replay::Recording>>& all,
             const std::vector<std::string>& allocations,
             const AllocationOptions& allocation_options, int seeds, int first_seed, int jobs,
             const SearchRunOptions& options) {
  std::vector<std::vector<std::shared_ptr<const replay::Recording>>> groups;
  std::set<const replay::Recording*> grouped;
  for (const auto& r : all) {
    if (grouped.count(r.get())) continue;
    auto g = replay::recordings_for(all, r->problem());
    for (const auto& x : g) grouped.insert(x.get());
    groups.push_back(std::move(g));
  }
  std::vector<std::pair<std::string, TemplateAllocation>> allocs;
  for (const auto& a : allocations) {
    auto parsed = parse_template_allocation(a);
    if (!parsed.ok()) {
      std::fprintf(stderr, "--allocation: %s\n", parsed.status().message().c_str());
      return 2;
    }
    allocs.emplace_back(a, *parsed);
  }
  std::string summary =
      "| problem (templates) | allocation | 5%: median / q1 / q3 / worst / misses | 1%: median / "
      "worst / misses |\n"
      "|---|---|---|---|\n";
  int exit_code = 0;
  for (const auto& group : groups) {
    double optimum = std::numeric_limits<double>::infinity();
    for (const auto& r : group) optimum = std::min(optimum, r->optimum_ms());
    std::printf("## %s: %zu templates, best %.4g ms\n", group.front()->problem().describe().c_str(),
                group.size(), optimum);
    for (const auto& r : group) {
      std::size_t w5 = 0, w1 = 0;
      for (double t : r->sorted_times_ms()) {
        w5 += t <= optimum * (1 + options.targets[0]);
        w1 += options.targets.size() > 1 && t <= optimum * (1 + options.targets[1]);
      }
      std::printf(
          "- %s: %zu configurations, best %.3fx; %zu within %.0f%%, %zu within %.0f%% of the best "
          "over all\n",
          r->name().c_str(), r->sorted_times_ms().size(), r->optimum_ms() / optimum, w5,
          options.targets[0] * 100, w1,
          options.targets.size() > 1 ? options.targets[1] * 100 : 0.0);
    }
    std::printf(
        "\n| allocation | target | median | q1 | q3 | worst | misses | evaluations per template "
        "until within the first target (median over seeds) | over the whole run |\n"
        "|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& [alloc_name, alloc] : allocs) {
      std::vector<LoopRunResult> results(static_cast<std::size_t>(seeds));
      std::atomic<int> next{0};
      auto worker = [&] {
        for (int i = next++; i < seeds; i = next++) {
          std::vector<std::unique_ptr<Proposer>> owned;
          std::vector<Proposer*> proposers;
          for (std::size_t k = 0; k < group.size(); ++k) {
            owned.push_back(std::make_unique<EvolveProposer>());
            proposers.push_back(owned.back().get());
          }
          LoopRunOptions lo;
          lo.candidates = options.batch;
          lo.max_evals = options.cap;
          lo.targets = options.targets;
          lo.allocation = alloc;
          lo.allocation_options = allocation_options;
          results[static_cast<std::size_t>(i)] =
              run_loop(group, proposers, static_cast<std::uint64_t>(first_seed + i), lo);
        }
      };
      std::vector<std::thread> threads;
      for (int t = 0; t < std::max(1, jobs); ++t) threads.emplace_back(worker);
      for (auto& t : threads) t.join();
      // Where the evaluations went until the run first came within the first target (all of them
      // when it never did), and over the whole run (the night's split): medians over the seeds.
      std::map<std::string, std::vector<double>> per_template, per_template_all;
      for (std::size_t i = 0; i < results.size(); ++i) {
        if (!results[i].status.ok()) {
          std::fprintf(stderr, "seed %d: %s\n", first_seed + static_cast<int>(i),
                       results[i].status.to_string().c_str());
          exit_code = 1;
        }
        std::map<std::string, int> n, all;
        for (const auto& r : group) n[r->name()] = all[r->name()] = 0;
        const auto& reached = results[i].evaluations_to_target.front();
        const std::size_t until =
            reached ? static_cast<std::size_t>(*reached) : results[i].rows.size();
        for (std::size_t k = 0; k < results[i].rows.size(); ++k) {
          if (k < until) ++n[results[i].rows[k].template_name];
          ++all[results[i].rows[k].template_name];
        }
        for (const auto& [name, c] : n) per_template[name].push_back(c);
        for (const auto& [name, c] : all) per_template_all[name].push_back(c);
      }
      auto medians = [](std::map<std::string, std::vector<double>>& counts) {
        std::string text;
        for (auto& [name, v] : counts) {
          std::sort(v.begin(), v.end());
          char buf[32];
          std::snprintf(buf, sizeof buf, " %g", analysis::percentile_sorted(v, 0.5));
          text += (text.empty() ? "" : ", ") + name + buf;
        }
        return text;
      };
      const std::string split = medians(per_template), split_all = medians(per_template_all);
      std::string cells[2];
      for (std::size_t k = 0; k < options.targets.size(); ++k) {
        std::vector<double> v;
        int misses = 0;
        for (const auto& r : results) {
          const auto& e = r.evaluations_to_target[k];
          v.push_back(e ? *e : options.cap + 1.0);
          misses += !e;
        }
        std::sort(v.begin(), v.end());
        const std::string med = count_text(analysis::percentile_sorted(v, 0.5), options.cap);
        const std::string worst = count_text(v.back(), options.cap);
        std::printf("| %s | %.0f%% | %s | %s | %s | %s | %d/%zu | %s | %s |\n", alloc_name.c_str(),
                    options.targets[k] * 100, med.c_str(),
                    count_text(analysis::percentile_sorted(v, 0.25), options.cap).c_str(),
                    count_text(analysis::percentile_sorted(v, 0.75), options.cap).c_str(),
                    worst.c_str(), misses, v.size(), split.c_str(), split_all.c_str());
        if (k < 2)
          cells[k] =
              k == 0 ? med + " / " + count_text(analysis::percentile_sorted(v, 0.25), options.cap) +
                           " / " + count_text(analysis::percentile_sorted(v, 0.75), options.cap) +
                           " / " + worst + " / " + std::to_string(misses)
                     : med + " / " + worst + " / " + std::to_string(misses);
      }
      summary += "| " + group.front()->problem().describe() + " (" + std::to_string(group.size()) +
                 ") | " + alloc_name + " | " + cells[0] + " | " + cells[1] + " |\n";
      std::fflush(stdout);
    }
    std::printf("\n");
  }
  std::printf("## Summary\n\n%s", summary.c_str());
  return exit_code;
}

}  // namespace tilesmith::bench
