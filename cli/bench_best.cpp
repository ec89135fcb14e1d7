#include "cli/bench_best.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "analysis/stats.h"
#include "cli/bench_best_code_hashes.h"
#include "cli/bench_best_inputs.h"
#include "cli/bench_best_measure.h"
#include "cli/bench_best_output.h"
#include "cli/bench_best_rounds.h"
#include "cli/exit_codes.h"

namespace tilesmith::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The template --config names (--template), or the only one that supports the problem; the
// error is a usage message.
Result<const KernelTemplate*> config_template(const TemplateLibrary& lib, const std::string& name,
                                              const GemmProblem& problem) {
  std::string chosen = name;
  if (chosen.empty()) {
    auto supporting = lib.supporting(problem);
    if (supporting.size() != 1) {
      std::string names;
      for (auto* t : supporting) names += " " + t->name();
      return Status::invalid(supporting.empty() ? "no template supports " + problem.describe()
                                                : "several templates support the problem; pick one with --template:" + names);
    }
    chosen = supporting.front()->name();
  }
  const KernelTemplate* tmpl = lib.find(chosen);
  if (!tmpl) return Status::invalid("no template named '" + chosen + "'");
  if (Status st = tmpl->supports(problem); !st.ok()) return st;
  return tmpl;
}

// --versus-kernels-dir: the other version of the template --config measures, from that folder;
// checked before a GPU is opened. It must be another source: the same one would be measured
// against itself.
Result<const KernelTemplate*> versus_template(const BenchBestOptions& o, const TemplateLibrary& lib,
                                              const TemplateLibrary& versus_lib) {
  auto p = to_problem(o.problem);
  if (!p.ok()) return p.status();
  auto base = config_template(lib, o.template_name, *p);
  if (!base.ok()) return base.status();
  const KernelTemplate* other = versus_lib.find((*base)->name());
  if (!other) return Status::invalid(o.versus_kernels_dir + " has no template '" + (*base)->name() + "'");
  if (other->source_hash() == (*base)->source_hash())
    return Status::invalid(o.versus_kernels_dir + "'s " + other->name() + " is the same source as the one it would be "
                           "compared with (source hash " + other->source_hash() + "): nothing to compare");
  if (Status st = other->supports(*p); !st.ok()) return Status::invalid(o.versus_kernels_dir + ": " + st.message());
  return other;
}

// --config: one config on the flags' problem (and with `versus`, the same config of that
// version of the template beside it).
int bench_one(const BenchBestOptions& o, OpenedEvaluator& opened, const TemplateLibrary* lib,
              const KernelTemplate* versus) {
  if (opened.recordings.size() > 1)
    return bench_usage("--config measures one config of one recording: give one --replay-file");
  if (!problem_given(o.problem) && !opened.recording)
    return bench_usage("--config needs the problem: --m M --n N --k K (and --dtype, --layout, ... as needed)");
  GemmProblem problem;
  if (problem_given(o.problem)) {
    auto p = to_problem(o.problem);
    if (!p.ok()) return bench_usage(p.status().message());
    problem = *p;
  } else {
    problem = opened.recording->problem();
  }
  const KernelTemplate* tmpl = nullptr;
  if (opened.recorded_template) {
    if (!o.template_name.empty() && o.template_name != opened.recorded_template->name())
      return bench_usage("the replay backend has only the recording's template '" + opened.recorded_template->name() + "'");
    tmpl = &*opened.recorded_template;
  } else {
    auto t = config_template(*lib, o.template_name, problem);
    if (!t.ok()) return bench_usage(t.status().message());
    tmpl = *t;
  }
  std::vector<std::string> filled;
  auto c = config_over_defaults(*tmpl, o.config_json, &filled);
  if (!c.ok()) return bench_usage("--config: " + c.status().message());
  const Config config = *c;

  Evaluator& ev = opened.primary();
  std::vector<Row> rows;
  Evaluation ours = ev.evaluate(*tmpl, problem, config);
  rows.push_back({tmpl->name(), ours});
  // The other version: named by its folder in the table and the versus line; the one it is
  // compared with by --kernels-dir, or "built-in".
  const std::string versus_name = o.versus_kernels_dir, base_name = o.kernels_dir.empty() ? "built-in" : o.kernels_dir;
  std::optional<Evaluation> theirs;
  if (versus) {
    theirs = ev.evaluate(*versus, problem, config);
    rows.push_back({(versus->name() + " (" + versus_name + ")").substr(0, 34), *theirs});
  }
  VendorCache vendors(ev, o.no_vendor);
  std::string vendor_note;
  std::optional<Evaluation> vendor = vendors.get(problem, &vendor_note);
  if (vendor) rows.push_back({ev.vendor_name().substr(0, 34), *vendor});
  std::optional<double> ratio;
  if (ours.ok() && vendor && ours.timing.median_ms > 0) ratio = vendor->timing.median_ms / ours.timing.median_ms;
  std::optional<analysis::PairedRatio> paired, paired_steady, versus_paired, versus_base;
  std::string paired_note = !vendor ? "no vendor figure to pair with" : ours.ok() ? "" : "ours did not run";
  std::string versus_note = !versus ? "" : !ours.ok() ? base_name + "'s did not run" : !theirs->ok() ? versus_name + "'s did not run" : "";
  // One set of rounds for all of them: this version, the other, the vendor, alternating.
  std::vector<RoundContestant> contestants{{tmpl->name(), [&] { return ev.evaluate(*tmpl, problem, config); }}};
  if (versus && theirs->ok()) contestants.push_back({versus_name, [&] { return ev.evaluate(*versus, problem, config); }});
  if (ours.ok() && (vendor || contestants.size() == 2)) {
    std::function<Result<Evaluation>()> vendor_once = [&] { return ev.vendor_baseline(problem); };
    ProblemRounds pr = measure_rounds(contestants, vendor ? &vendor_once : nullptr, o.rounds_plan());
    paired = pr.paired.front();
    paired_steady = pr.paired_steady.front();
    if (!paired && vendor) paired_note = unpaired_note(pr, true);
    if (contestants.size() == 2) {
      versus_paired = pr.paired[1];
      if (pr.rounds > 0) versus_base = analysis::paired_ratio(pr.ms[1], pr.ms[0]);
      if (!versus_base) versus_note = unpaired_note(pr, true);
    }
  }
  std::optional<EpilogueCost> epilogue_cost;
  if (o.epilogue_cost) epilogue_cost = measure_epilogue_cost(ev, *tmpl, problem, config, vendor.has_value(), vendors, o.rounds);
  const double bandwidth = opened.measured_bandwidth();
  FloorCache floors(ev, o);
  std::string floor_note;
  std::optional<ReadFloor> floor = floors.get(problem, &floor_note);

  if (o.json) {
    json j, dev, prob, e;
    to_json(dev, ev.device());
    to_json(prob, problem);
    to_json(e, ours);
    j = {{"device", dev},
         {"measured_bandwidth_gbps", bandwidth > 0 ? json(bandwidth / 1e9) : json(nullptr)},
         {"problem", prob},
         {"template", {{"name", tmpl->name()}, {"source_hash", tmpl->source_hash()}}},
         {"config", config_to_json(config)},
         {"ours", e},
         {"vendor_name", ev.vendor_name()}};
    if (vendor) to_json(j["vendor"], *vendor);
    if (!vendor_note.empty()) j["vendor_unavailable"] = vendor_note;
    if (!filled.empty()) j["defaults_filled"] = filled;
    j["ratio"] = ratio ? json(*ratio) : json(nullptr);
    j["paired"] = paired ? to_json(*paired) : json(nullptr);
    j["paired_steady"] = paired_steady ? to_json(*paired_steady) : json(nullptr);
    if (!paired) j["paired_unavailable"] = paired_note;
    if (floor) to_json(j["read_floor"], *floor);
    else j["read_floor_unavailable"] = floor_note;
    j["floor_beaten_by"] = floor_beaten_by(floor, ours, vendor);
    if (epilogue_cost) j["epilogue_cost"] = to_json(*epilogue_cost);
    if (versus) {
      json v{{"kernels_dir", versus_name},
             {"against", base_name},
             {"template", {{"name", versus->name()}, {"source_hash", versus->source_hash()}}}};
      to_json(v["result"], *theirs);
      v["paired"] = versus_paired ? to_json(*versus_paired) : json(nullptr);
      v["against_ratio"] = versus_base ? versus_json(*versus_base, versus_name, base_name) : json(nullptr);
      if (!versus_base) v["against_unavailable"] = versus_note;
      j["versus"] = v;
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("config   %s %s\n", tmpl->name().c_str(), config_to_json_text(config).c_str());
    if (!filled.empty()) {
      std::string names;
      for (const auto& f : filled) names += " " + f;
      std::printf("         defaults filled in:%s\n", names.c_str());
    }
    print_table(ev.device(), bandwidth, problem, rows, ratio);
    std::printf("paired   %s\n", paired_text(paired, paired_note).c_str());
    if (paired_steady) std::printf("steady   back to back, %s\n", paired_text(paired_steady, "").c_str());
    if (!vendor_note.empty()) std::printf("vendor library: %s\n", vendor_note.c_str());
    std::printf("%s\n", floor_line(floor, floor_note, ours, vendor).c_str());
    if (epilogue_cost) std::printf("%s\n", epilogue_cost_line(*epilogue_cost, problem).c_str());
    if (versus) {
      std::printf("versus   %s against %s: %s\n", versus_name.c_str(), base_name.c_str(),
                  versus_text(versus_base, versus_note, versus_name, base_name).c_str());
      if (versus_paired) std::printf("         %s with the vendor: %s\n", versus_name.c_str(), paired_text(versus_paired, "").c_str());
    }
  }
  return ours.ok() && (!theirs || theirs->ok()) ? kExitOk : kExitFailed;
}

// --vendor-only: the vendor library and the read floor on the flags' problem, the vendor
// measured --rounds times more for its spread (a type or shape no template serves yet).
int bench_vendor(const BenchBestOptions& o, OpenedEvaluator& opened) {
  auto p = to_problem(o.problem);
  if (!p.ok()) return bench_usage(p.status().message());
  const GemmProblem& problem = *p;
  Evaluator& ev = opened.primary();
  auto first = ev.vendor_baseline(problem);
  if (!first.ok() || !first->ok()) {
    const std::string why = first.ok() ? std::string(outcome_name(first->outcome)) + ": " + first->message
                                       : first.status().message();
    std::cerr << "bench-best: no vendor figure for " << problem.describe() << ": " << why << "\n";
    return kExitFailed;
  }
  std::vector<double> again;
  for (int r = 0; r < o.rounds; ++r)
    if (auto v = ev.vendor_baseline(problem); v.ok() && v->ok()) again.push_back(v->timing.median_ms);
  const double bandwidth = opened.measured_bandwidth();
  FloorCache floors(ev, o);
  std::string floor_note;
  std::optional<ReadFloor> floor = floors.get(problem, &floor_note);
  std::optional<analysis::SampleSummary> rounds;
  if (!again.empty()) rounds = analysis::summarize(again);
  if (o.json) {
    json j, dev, prob;
    to_json(dev, ev.device());
    to_json(prob, problem);
    j = {{"device", dev},
         {"measured_bandwidth_gbps", bandwidth > 0 ? json(bandwidth / 1e9) : json(nullptr)},
         {"problem", prob},
         {"vendor_name", ev.vendor_name()}};
    to_json(j["vendor"], *first);
    j["vendor_rounds_ms"] = again;
    if (floor) to_json(j["read_floor"], *floor);
    else j["read_floor_unavailable"] = floor_note;
    std::cout << j.dump(2) << "\n";
  } else {
    print_table(ev.device(), bandwidth, problem, {{ev.vendor_name().substr(0, 34), *first}}, std::nullopt);
    if (rounds)
      std::printf("rounds   %zu more: median %.4f ms, range [%.4f, %.4f]\n", again.size(), rounds->median, rounds->min,
                  rounds->max);
    std::printf("%s\n", floor_line(floor, floor_note, std::nullopt, *first).c_str());
  }
  return kExitOk;
}

int exit_code_for(const std::vector<EntryResult>& results, const BenchBestOptions& o, bool* drift) {
  bool failed = false, mismatch = false;
  *drift = false;
  for (const auto& r : results) {
    failed |= r.status == "FAILED";
    mismatch |= r.status == "MISMATCH";
    *drift |= r.status == "DRIFT";
  }
  if (failed || (*drift && o.fail_on_drift)) return kExitFailed;
  if (mismatch) return kExitMismatch;
  return kExitOk;
}

}  // namespace

int bench_best(const BenchBestOptions& o) {
  const bool from_file = !o.best_configs.empty() || !o.results.empty();
  const bool replay = o.evaluator.backend == "replay";
  if (auto code = check_flags(o, from_file, replay)) return *code;

  std::optional<TemplateLibrary> lib;
  if (!replay) {
    auto l = load_templates(o.kernels_dir);
    if (!l.ok()) return bench_usage(l.status().message());
    lib = std::move(l).value();
  }
  std::optional<TemplateLibrary> versus_lib;
  const KernelTemplate* versus = nullptr;
  if (!o.versus_kernels_dir.empty()) {
    auto l = TemplateLibrary::from_directory(o.versus_kernels_dir);
    if (!l.ok()) return bench_usage("--versus-kernels-dir: " + l.status().message());
    versus_lib = std::move(l).value();
    auto v = versus_template(o, *lib, *versus_lib);
    if (!v.ok()) return bench_usage("--versus-kernels-dir: " + v.status().message());
    versus = *v;
  }
  std::vector<BestEntry> entries;
  std::vector<fs::path> entry_files;
  Sources src;
  std::optional<GemmProblem> problem_filter;
  if (from_file) {
    if (auto code = collect_files(o, &src.files, &src.missing)) return *code;
    if (auto code = read_entries(o, src.files, &entries, &entry_files, &problem_filter)) return *code;
    if (o.record_code_hashes) return record_code_hashes(o, entries, entry_files, problem_filter, *lib);
  } else if (o.vendor_only) {
    if (auto p = to_problem(o.problem); !p.ok()) return bench_usage(p.status().message());
  } else {
    // Everything the flags can be wrong about is said before a GPU is opened.
    if (!replay && !problem_given(o.problem))
      return bench_usage("--config needs the problem: --m M --n N --k K (and --dtype, --layout, ... as needed)");
    if (auto c = config_from_json_text(o.config_json); !c.ok()) return bench_usage("--config: " + c.status().message());
  }
  EvaluatorContext ec;
  ec.seed = o.seed;
  ec.energy_ms = kEnergyWindowMs;  // joules per GEMM beside the time
  ec.steady_ms = 20;               // and the time per launch back to back, three spans of 20 ms
  // One candidate: one compile helper. Several entries are compiled ahead in parallel.
  const int compile_threads =
      from_file ? std::clamp(int(std::thread::hardware_concurrency()) / 2, 1, 8) : 1;
  ec.compile_threads = compile_threads;
  if (!o.kernels_dir.empty()) ec.template_dirs.push_back(o.kernels_dir);
  if (versus) ec.template_dirs.push_back(o.versus_kernels_dir);  // the worker finds each version by its source hash
  auto opened = open_evaluator(o.evaluator, ec);
  if (!opened.ok()) {
    const bool no_gpu = opened.status().code() == StatusCode::kUnavailable;
    std::cerr << "bench-best: " << opened.status().message() << (no_gpu ? without_gpu_hint(o, entries) : "") << "\n";
    return no_gpu ? kExitNoDevice : kExitUsage;
  }
  if (o.vendor_only) return bench_vendor(o, *opened);
  if (!from_file) return bench_one(o, *opened, lib ? &*lib : nullptr, versus);

  Evaluator& ev = opened->primary();
  const DeviceFacts& device = ev.device();
  const Selection sel = select_entries(entries, o, problem_filter, device);
  if (sel.selected.empty()) return report_no_entry(src.label(), device, o, problem_filter, entries, sel);

  compile_ahead(sel.selected, *opened, lib ? &*lib : nullptr, compile_threads);
  VendorCache vendors(ev, o.no_vendor);
  FloorCache floors(ev, o);
  std::vector<EntryResult> results;
  for (const BestEntry* e : sel.selected) {
    const fs::path& file = entry_files[std::size_t(e - entries.data())];
    results.push_back(bench_entry(e, file, *opened, lib ? &*lib : nullptr, vendors, floors,
                                  o.drift_tolerance_pct / 100));
  }
  const std::vector<ProblemContest> contests = measure_entry_rounds(results, ev, o.rounds_plan());
  bool drift = false;
  const int code = exit_code_for(results, o, &drift);
  if (o.json) print_json(src, *opened, device, sel, results, contests, code);
  else print_text(src, ev, device, sel, results, contests, o, drift);
  return code;
}

}  // namespace tilesmith::cli
