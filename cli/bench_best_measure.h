#pragma once
// What bench-best measures: the vendor library and the read floor once per problem, the
// epilogue's cost, and each best_config.json entry now, compiled ahead in parallel.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/bench_best.h"
#include "cli/bench_best_output.h"
#include "runtime/evaluator.h"
#include "runtime/read_floor.h"
#include "tuner/assembly/open_evaluator.h"

namespace tilesmith::cli {

// One figure per problem, measured once each: the value, or a note saying why there is none.
template <typename T>
class OncePerProblem {
 public:
  // measure(value, note) fills one of them the first time a problem is asked for.
  template <typename Measure>
  std::optional<T> get(const GemmProblem& p, std::string* note, Measure measure) {
    auto it = cache_.find(p.key());
    if (it == cache_.end()) {
      Entry e;
      measure(e.value, e.note);
      it = cache_.emplace(p.key(), std::move(e)).first;
    }
    *note = it->second.note;
    return it->second.value;
  }

 private:
  struct Entry {
    std::optional<T> value;
    std::string note;
  };
  std::map<std::string, Entry> cache_;
};

// Vendor figures per problem, measured once each.
class VendorCache {
 public:
  VendorCache(Evaluator& ev, bool skip) : ev_(ev), skip_(skip) {}
  // The vendor's evaluation, or nullopt with `note` saying why not.
  std::optional<Evaluation> get(const GemmProblem& p, std::string* note) {
    if (skip_) {
      *note = "skipped (--no-vendor)";
      return std::nullopt;
    }
    return once_.get(p, note, [&](std::optional<Evaluation>& eval, std::string& why) {
      auto v = ev_.vendor_baseline(p);
      if (v.ok() && v->ok()) eval = *v;
      else why = v.ok() ? std::string(outcome_name(v->outcome)) + ": " + v->message : v.status().message();
    });
  }

 private:
  Evaluator& ev_;
  bool skip_;
  OncePerProblem<Evaluation> once_;
};

// Read floors per problem, measured once each (runtime/read_floor.h).
class FloorCache {
 public:
  FloorCache(Evaluator& ev, const BenchBestOptions& o) : ev_(ev), o_(o) {}
  // The problem's floor, or nullopt with `note` saying why not.
  std::optional<ReadFloor> get(const GemmProblem& p, std::string* note) {
    if (!o_.read_floor) {
      *note = "not measured (--no-read-floor)";
      return std::nullopt;
    }
    if (o_.read_floor_max_m >= 0 && p.m > o_.read_floor_max_m) {
      *note = "not measured (M > --read-floor-max-m " + std::to_string(o_.read_floor_max_m) + ")";
      return std::nullopt;
    }
    return once_.get(p, note, [&](std::optional<ReadFloor>& floor, std::string& why) {
      auto f = ev_.read_floor(p);
      if (f.ok()) floor = *f;
      else why = f.status().message();
    });
  }

 private:
  Evaluator& ev_;
  const BenchBestOptions& o_;
  OncePerProblem<ReadFloor> once_;
};

// --epilogue-cost: the config with the fused epilogue and without it, and the vendor's two
// (where it runs both), measured in `rounds` alternating rounds (at least one): each side's cost
// is the median of its rounds' fused / plain ratios, so a drifting clock biases neither.
EpilogueCost measure_epilogue_cost(Evaluator& ev, const KernelTemplate& tmpl, const GemmProblem& fused,
                                   const Config& config, bool with_vendor, VendorCache& vendors, int rounds);

// --rounds over the results: per problem, the entries that ran and the vendor in alternating
// rounds (cli/bench_best_rounds.h); each entry's paired ratio, and a contest between the
// entries of a problem served by several. One contest per such problem, in result order.
std::vector<ProblemContest> measure_entry_rounds(std::vector<EntryResult>& results, Evaluator& ev,
                                                const RoundsPlan& plan);

// Compiles every entry that will run, on `threads` threads (the evaluator's prepare, so the
// compile cache holds them when each is measured): many entries then cost one compile
// time per `threads`, not one each.
void compile_ahead(const std::vector<const BestEntry*>& entries, OpenedEvaluator& opened, const TemplateLibrary* lib,
                   int threads);

// One entry measured now, with its status: ok, DRIFT, FAILED or MISMATCH.
EntryResult bench_entry(const BestEntry* e, const std::filesystem::path& file, OpenedEvaluator& opened,
                        const TemplateLibrary* lib, VendorCache& vendors, FloorCache& floors, double tol);

}  // namespace tilesmith::cli
