#include "cli/bench_best.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/bench_best_output.h"
#include "cli/exit_codes.h"
#include "tuner/records/best_config.h"
#include "tuner/records/history_report.h"
#include "tuner/records/journal.h"

namespace tilesmith::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int usage(const std::string& msg) {
  std::cerr << "bench-best: " << msg << "\n";
  return kExitUsage;
}

// The recordings a run of the replay backend answered from, as its journal's session
// events name them (read only: bench-best writes nothing into a results folder).
std::vector<std::string> replay_files_of_run(const fs::path& results) {
  std::vector<std::string> files;
  std::ifstream in(results / kJournalFileName);
  std::string line;
  while (std::getline(in, line)) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("settings") || !j["settings"].is_object()) continue;
    const json& s = j["settings"];
    if (s.value("backend", std::string()) != "replay" || !s.contains("replay_files") || !s["replay_files"].is_array())
      continue;
    files.clear();
    for (const auto& f : s["replay_files"])
      if (f.is_string()) files.push_back(f.get<std::string>());
  }
  return files;
}

// What a user without a GPU can do instead: a run made on recorded measurements is
// re-checked on the same recordings.
std::string without_gpu_hint(const BenchBestOptions& o, const std::vector<BestEntry>& entries) {
  bool replayed = false;
  for (const auto& e : entries) replayed = replayed || e.device.value("backend", std::string()) == "replay";
  std::string sources;
  std::vector<std::string> files;
  for (const auto& r : o.results) {
    sources += " --results " + r;
    for (auto& f : replay_files_of_run(r))
      if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(std::move(f));
  }
  for (const auto& b : o.best_configs) sources += " --best-config " + b;
  if (replayed || !files.empty()) {
    std::string flags;
    for (const auto& f : files) flags += " --replay-file " + f;
    if (flags.empty()) flags = " --replay-file FILE (the recording the run answered from)";
    return "\n  these results were measured on the replay backend: without a GPU, re-check them on their recordings "
           "with\n    bench-best --backend replay" + flags + sources;
  }
  return "\n  bench-best measures on a GPU; without one it can re-check a run made with --backend replay: bench-best "
         "--backend replay --replay-file FILE" + sources;
}

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

// --epilogue-cost: the plain GEMM and the fused one timed in turn, ours (plain, fused, plain; the
// fused one was timed first) and the vendor's (plain, fused), each figure the faster of its
// medians: a clock that drifts during the process then touches both sides of the comparison.
EpilogueCost measure_epilogue_cost(Evaluator& ev, const KernelTemplate& tmpl, const GemmProblem& fused,
                                   const Config& config, const Evaluation& ours, const std::optional<Evaluation>& vendor,
                                   VendorCache& vendors) {
  EpilogueCost c;
  GemmProblem plain = fused;
  plain.epilogue = Epilogue::kNone;
  auto faster = [](std::optional<double>& into, const Evaluation& e) {
    if (e.ok() && (!into || e.timing.median_ms < *into)) into = e.timing.median_ms;
  };
  faster(c.ours_fused_ms, ours);
  for (int round = 0; round < 2; ++round) {
    const Evaluation p = ev.evaluate(tmpl, plain, config);
    faster(c.ours_plain_ms, p);
    if (!p.ok()) {
      c.note = "ours without the epilogue: " + std::string(outcome_name(p.outcome)) + " " + p.message;
      break;
    }
    if (round == 0) faster(c.ours_fused_ms, ev.evaluate(tmpl, fused, config));
  }
  if (vendor) c.vendor_fused_ms = vendor->timing.median_ms;
  std::string note;
  if (auto v = vendors.get(plain, &note)) {
    c.vendor_plain_ms = v->timing.median_ms;
    if (auto again = ev.vendor_baseline(fused); again.ok()) faster(c.vendor_fused_ms, *again);
  } else if (!note.empty()) {
    c.note += (c.note.empty() ? "" : "; ") + ("vendor without the epilogue: " + note);
  }
  return c;
}

// --config: one config on the flags' problem.
int bench_one(const BenchBestOptions& o, OpenedEvaluator& opened, const TemplateLibrary* lib) {
  if (opened.recordings.size() > 1)
    return usage("--config measures one config of one recording: give one --replay-file");
  if (!problem_given(o.problem) && !opened.recording)
    return usage("--config needs the problem: --m M --n N --k K (and --dtype, --layout, ... as needed)");
  GemmProblem problem;
  if (problem_given(o.problem)) {
    auto p = to_problem(o.problem);
    if (!p.ok()) return usage(p.status().message());
    problem = *p;
  } else {
    problem = opened.recording->problem();
  }
  const KernelTemplate* tmpl = nullptr;
  if (opened.recorded_template) {
    if (!o.template_name.empty() && o.template_name != opened.recorded_template->name())
      return usage("the replay backend has only the recording's template '" + opened.recorded_template->name() + "'");
    tmpl = &*opened.recorded_template;
  } else {
    std::string name = o.template_name;
    if (name.empty()) {
      auto supporting = lib->supporting(problem);
      if (supporting.size() != 1) {
        std::string names;
        for (auto* t : supporting) names += " " + t->name();
        return usage(supporting.empty() ? "no template supports " + problem.describe()
                                        : "several templates support the problem; pick one with --template:" + names);
      }
      name = supporting.front()->name();
    }
    tmpl = lib->find(name);
    if (!tmpl) return usage("no template named '" + name + "'");
    if (Status st = tmpl->supports(problem); !st.ok()) return usage(st.message());
  }
  auto c = config_from_json_text(o.config_json);
  if (!c.ok()) return usage("--config: " + c.status().message());
  const Config config = *c;

  Evaluator& ev = opened.primary();
  std::vector<Row> rows;
  Evaluation ours = ev.evaluate(*tmpl, problem, config);
  rows.push_back({tmpl->name(), ours});
  VendorCache vendors(ev, o.no_vendor);
  std::string vendor_note;
  std::optional<Evaluation> vendor = vendors.get(problem, &vendor_note);
  if (vendor) rows.push_back({ev.vendor_name().substr(0, 34), *vendor});
  std::optional<double> ratio;
  if (ours.ok() && vendor && ours.timing.median_ms > 0) ratio = vendor->timing.median_ms / ours.timing.median_ms;
  std::optional<EpilogueCost> epilogue_cost;
  if (o.epilogue_cost) epilogue_cost = measure_epilogue_cost(ev, *tmpl, problem, config, ours, vendor, vendors);
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
    j["ratio"] = ratio ? json(*ratio) : json(nullptr);
    if (floor) to_json(j["read_floor"], *floor);
    else j["read_floor_unavailable"] = floor_note;
    j["floor_beaten_by"] = floor_beaten_by(floor, ours, vendor);
    if (epilogue_cost) j["epilogue_cost"] = to_json(*epilogue_cost);
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("config   %s %s\n", tmpl->name().c_str(), config_to_json_text(config).c_str());
    print_table(ev.device(), bandwidth, problem, rows, ratio);
    if (!vendor_note.empty()) std::printf("vendor library: %s\n", vendor_note.c_str());
    std::printf("%s\n", floor_line(floor, floor_note, ours, vendor).c_str());
    if (epilogue_cost) std::printf("%s\n", epilogue_cost_line(*epilogue_cost, problem).c_str());
  }
  return ours.ok() ? kExitOk : kExitFailed;
}

// The steps of bench_best. A step that returns an int wants bench-best to end with that
// exit code now; std::nullopt means go on.

// What the flags can be wrong about on their own, before any file or GPU.
std::optional<int> check_flags(const BenchBestOptions& o, bool from_file, bool replay) {
  if (!o.config_json.empty() && from_file) return usage("give --config or --best-config/--results, not both");
  if (o.config_json.empty() && !from_file)
    return usage("give a config: --config '{...}' with the problem flags, or --best-config FILE, or --results DIR");
  if (!o.config_json.empty() && o.fastest_only) return usage("--fastest-only goes with --best-config/--results");
  if (o.epilogue_cost && o.config_json.empty()) return usage("--epilogue-cost goes with --config");
  if (o.epilogue_cost && o.problem.epilogue == "none")
    return usage("--epilogue-cost needs a fused --epilogue (bias_row, bias_col, relu, leaky_relu or gelu)");
  if (o.drift_tolerance_pct < 0) return usage("--drift-tolerance must not be negative");
  if (replay && !o.kernels_dir.empty()) return usage("--kernels-dir does not go with --backend replay");
  return std::nullopt;
}

// The best_config.json files the flags name: each --best-config, each --results folder's,
// and for a problem-set folder (problem_set.json, docs/problem-sets.md) each problem's that
// exists (the others go to `missing`, named).
std::optional<int> collect_files(const BenchBestOptions& o, std::vector<fs::path>* files,
                                 std::vector<std::string>* missing) {
  std::error_code ec;
  for (const auto& f : o.best_configs) {
    if (!fs::exists(f, ec)) return usage(f + " does not exist");
    files->push_back(f);
  }
  for (const auto& dir : o.results) {
    const fs::path best = fs::path(dir) / "best_config.json";
    const fs::path set = fs::path(dir) / "problem_set.json";
    if (fs::exists(best, ec)) {
      files->push_back(best);
      continue;
    }
    if (!fs::exists(set, ec))
      return usage(best.string() + " does not exist (is --results the folder an autotune-loop run wrote?)");
    std::ifstream in(set);
    json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.contains("problems") || !j["problems"].is_array())
      return usage(set.string() + " is not a problem set's record (docs/problem-sets.md)");
    for (const auto& p : j["problems"]) {
      const std::string folder = p.is_object() ? p.value("folder", std::string()) : std::string();
      if (folder.empty()) return usage(set.string() + ": a problem without a folder");
      const fs::path pb = fs::path(dir) / folder / "best_config.json";
      if (fs::exists(pb, ec)) files->push_back(pb);
      else missing->push_back((fs::path(dir) / folder).string() + " (no best_config.json yet)");
    }
  }
  if (files->empty())
    return usage("no best_config.json to reproduce" +
                 (missing->empty() ? std::string() : " (" + std::to_string(missing->size()) + " problems not tuned yet)"));
  return std::nullopt;
}

// Every entry of the files, with the file each came from, and the problem filter.
std::optional<int> read_entries(const BenchBestOptions& o, const std::vector<fs::path>& files,
                                std::vector<BestEntry>* entries, std::vector<fs::path>* entry_files,
                                std::optional<GemmProblem>* problem_filter) {
  for (const auto& path : files) {
    auto e = read_best_config(path);
    if (!e.ok()) return usage(e.status().message());
    for (auto& entry : *e) {
      entries->push_back(std::move(entry));
      entry_files->push_back(path);
    }
  }
  if (problem_given(o.problem)) {
    auto p = to_problem(o.problem);
    if (!p.ok()) return usage(p.status().message());
    *problem_filter = *p;
  }
  return std::nullopt;
}

Selection select_entries(const std::vector<BestEntry>& entries, const BenchBestOptions& o,
                         const std::optional<GemmProblem>& problem_filter, const DeviceFacts& device) {
  Selection sel;
  for (const auto& e : entries) {
    if (problem_filter && e.problem.key() != problem_filter->key()) continue;
    if (!o.template_name.empty() && e.template_name != o.template_name) continue;
    const std::string name = e.device.value("name", std::string());
    const std::string arch = e.device.value("arch", std::string());
    if (name == device.name && arch == device.arch) sel.selected.push_back(&e);
    else sel.other_device.push_back(&e);
  }
  if (o.fastest_only) {
    // Per problem, the entry with the fastest recorded median (the first of equals).
    std::map<std::string, const BestEntry*> fastest;
    auto recorded = [](const BestEntry* e) {
      const auto& m = e->metrics;
      return m.contains("median_ms") && m["median_ms"].is_number() ? m["median_ms"].get<double>() : 1e300;
    };
    for (const BestEntry* e : sel.selected) {
      auto [it, fresh] = fastest.emplace(e->problem.key(), e);
      if (!fresh && recorded(e) < recorded(it->second)) it->second = e;
    }
    std::vector<const BestEntry*> kept;
    for (const BestEntry* e : sel.selected)
      if (fastest[e->problem.key()] == e) kept.push_back(e);
    sel.slower_left_out = sel.selected.size() - kept.size();
    sel.selected = std::move(kept);
  }
  return sel;
}

int report_no_entry(const std::string& path, const DeviceFacts& device, const BenchBestOptions& o,
                    const std::optional<GemmProblem>& problem_filter, const std::vector<BestEntry>& entries,
                    const Selection& sel) {
  std::string what = path + " has no entry for this device (" + device.name + ", " + device.arch + ")";
  if (problem_filter) what += " and problem " + problem_filter->describe();
  if (!o.template_name.empty()) what += " and template " + o.template_name;
  if (sel.other_device.empty() && entries.empty()) what += "; the file has no entries";
  for (const auto* e : sel.other_device)
    what += "\n  recorded on " + e->device.value("name", std::string("?")) + " (" +
            e->device.value("arch", std::string("?")) + "): " + e->template_name + " " + e->problem.describe();
  std::cerr << "bench-best: " << what << "\n";
  return kExitMismatch;
}

// The template an entry names: the built-in (or --kernels-dir) one, or on replay the
// recording's; nullptr when there is none.
const KernelTemplate* find_template(const BestEntry* e, const OpenedEvaluator& opened, const TemplateLibrary* lib) {
  if (opened.recorded_template) {
    for (const auto& t : opened.recorded_templates)
      if (t.name() == e->template_name) return &t;
    return nullptr;
  }
  return lib->find(e->template_name);
}

// Compiles every entry that will run, on `threads` threads (the evaluator's prepare, so the
// compile cache holds them when each is measured): many entries then cost one compile
// time per `threads`, not one each.
void compile_ahead(const std::vector<const BestEntry*>& entries, OpenedEvaluator& opened, const TemplateLibrary* lib,
                   int threads) {
  struct Job {
    const KernelTemplate* tmpl;
    const BestEntry* entry;
    Config config;
  };
  std::vector<Job> jobs;
  for (const BestEntry* e : entries) {
    const KernelTemplate* t = find_template(e, opened, lib);
    if (!t || !t->supports(e->problem).ok()) continue;
    jobs.push_back({t, e, t->update_config(e->config).config});
  }
  if (jobs.size() < 2 || threads < 2) return;
  Evaluator& ev = opened.primary();
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (int i = 0; i < threads && std::size_t(i) < jobs.size(); ++i)
    pool.emplace_back([&] {
      for (std::size_t j; (j = next.fetch_add(1)) < jobs.size();)
        ev.prepare(*jobs[j].tmpl, jobs[j].entry->problem, jobs[j].config);
    });
  for (auto& t : pool) t.join();
}

// One entry measured now, with its status: ok, DRIFT, FAILED or MISMATCH.
EntryResult bench_entry(const BestEntry* e, const fs::path& file, OpenedEvaluator& opened, const TemplateLibrary* lib,
                        VendorCache& vendors, FloorCache& floors, double tol) {
  Evaluator& ev = opened.primary();
  const DeviceFacts& device = ev.device();
  EntryResult r;
  r.entry = e;
  r.file = file;
  if (e->device_fingerprint != device.fingerprint())
    r.notes.push_back("recorded with " + e->device_fingerprint + "; this is " + device.fingerprint());
  const KernelTemplate* tmpl = find_template(e, opened, lib);
  if (!tmpl) {
    r.status = "MISMATCH";
    r.notes.push_back("template " + e->template_name + " is not " +
                      (opened.recorded_template ? "the recording's (" + opened.recorded_template->name() + ")"
                                                 : "among the templates (use --kernels-dir for your own)"));
    return r;
  }
  bool mismatch = false;
  if (tmpl->source_hash() != e->template_hash) {
    mismatch = true;
    r.notes.push_back("template " + e->template_name + " changed since it was recorded (source hash " +
                      e->template_hash + " then, " + tmpl->source_hash() + " now)");
  }
  if (Status st = tmpl->supports(e->problem); !st.ok()) {
    r.status = "MISMATCH";
    r.notes.push_back(st.message());
    return r;
  }
  // An entry recorded before the template gained a parameter runs with its default; one
  // with a parameter the template no longer has runs without it and is a mismatch.
  r.update = tmpl->update_config(e->config);
  for (auto& note : r.update.notes()) r.notes.push_back(std::move(note));
  if (!r.update.dropped.empty()) mismatch = true;
  r.now = ev.evaluate(*tmpl, e->problem, r.update.config);
  r.vendor = vendors.get(e->problem, &r.vendor_note);
  r.floor = floors.get(e->problem, &r.floor_note);
  const auto recorded = metric(e->metrics, "median_ms");
  if (r.now->ok() && recorded && *recorded > 0) r.drift = r.now->timing.median_ms / *recorded - 1;
  if (!r.now->ok()) r.status = "FAILED";
  else if (mismatch) r.status = "MISMATCH";
  else if (r.drift && std::fabs(*r.drift) > tol) r.status = "DRIFT";
  else r.status = "ok";
  return r;
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
    if (!l.ok()) return usage(l.status().message());
    lib = std::move(l).value();
  }
  std::vector<BestEntry> entries;
  std::vector<fs::path> entry_files;
  Sources src;
  std::optional<GemmProblem> problem_filter;
  if (from_file) {
    if (auto code = collect_files(o, &src.files, &src.missing)) return *code;
    if (auto code = read_entries(o, src.files, &entries, &entry_files, &problem_filter)) return *code;
  } else {
    // Everything the flags can be wrong about is said before a GPU is opened.
    if (!replay && !problem_given(o.problem))
      return usage("--config needs the problem: --m M --n N --k K (and --dtype, --layout, ... as needed)");
    if (auto c = config_from_json_text(o.config_json); !c.ok()) return usage("--config: " + c.status().message());
  }
  EvaluatorContext ec;
  ec.seed = o.seed;
  // One candidate: one compile helper. Several entries are compiled ahead in parallel.
  const int compile_threads =
      from_file ? std::clamp(int(std::thread::hardware_concurrency()) / 2, 1, 8) : 1;
  ec.compile_threads = compile_threads;
  if (!o.kernels_dir.empty()) ec.template_dirs.push_back(o.kernels_dir);
  auto opened = open_evaluator(o.evaluator, ec);
  if (!opened.ok()) {
    const bool no_gpu = opened.status().code() == StatusCode::kUnavailable;
    std::cerr << "bench-best: " << opened.status().message() << (no_gpu ? without_gpu_hint(o, entries) : "") << "\n";
    return no_gpu ? kExitNoDevice : kExitUsage;
  }
  if (!from_file) return bench_one(o, *opened, lib ? &*lib : nullptr);

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
    results.push_back(bench_entry(e, file, *opened, lib ? &*lib : nullptr, vendors, floors, o.drift_tolerance_pct / 100));
  }
  bool drift = false;
  const int code = exit_code_for(results, o, &drift);
  if (o.json) print_json(src, *opened, device, sel, results, code);
  else print_text(src, ev, device, sel, results, o, drift);
  return code;
}

}  // namespace tilesmith::cli
