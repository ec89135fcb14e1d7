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

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

struct Row {
  std::string label;
  Evaluation e;
};

void print_table(const DeviceFacts& dev, double bandwidth, const GemmProblem& p, const std::vector<Row>& rows,
                 const std::optional<double>& ratio) {
  const std::string peak_name = p.a_type == DType::kF32 ? "FP32" : std::string(dtype_name(p.a_type));
  if (dev.multiprocessors > 0 && bandwidth > 0)
    std::printf("device   %s (%s, %d SMs, %s peak %.1f TFLOP/s, measured copy bandwidth %.2f TB/s)\n",
                dev.name.c_str(), dev.arch.c_str(), dev.multiprocessors, peak_name.c_str(),
                dev.peak_flops(p.a_type) / 1e12, bandwidth / 1e12);
  else if (dev.multiprocessors > 0)  // no bandwidth was measured
    std::printf("device   %s (%s, %d SMs, %s peak %.1f TFLOP/s)\n", dev.name.c_str(), dev.arch.c_str(),
                dev.multiprocessors, peak_name.c_str(), dev.peak_flops(p.a_type) / 1e12);
  else  // a replayed recording: only its name is known
    std::printf("device   %s (%s) [%s]\n", dev.name.c_str(), dev.arch.c_str(), dev.backend.c_str());
  std::printf("problem  %s  (%.3g GFLOP, %.1f MB minimum traffic)\n\n", p.describe().c_str(), p.flops() / 1e9,
              p.min_bytes() / 1e6);
  std::printf("%-34s %-13s %9s %9s %9s %9s %6s %5s %8s %8s %7s %10s %10s\n", "kernel", "outcome", "median_ms", "min_ms",
              "p20_ms", "p80_ms", "cv%", "n", "TFLOP/s", "GB/s", "roof%", "max_err", "rel_err");
  for (const auto& r : rows) {
    const auto& e = r.e;
    std::printf("%-34s %-13s %9.4f %9.4f %9.4f %9.4f %6.2f %5d %8.2f %8.1f %7.1f %10.3g %10.3g\n", r.label.c_str(),
                outcome_name(e.outcome), e.timing.median_ms, e.timing.min_ms, e.timing.p20_ms, e.timing.p80_ms,
                e.timing.cv * 100, e.timing.samples, e.tflops, e.gbps, e.roofline_pct, e.accuracy.max_abs_error,
                e.accuracy.rel_error_norm);
    if (!e.message.empty()) std::printf("    %s\n", e.message.c_str());  // a failure, or how the vendor ran
  }
  if (ratio) std::printf("\nratio (ours / vendor throughput): %.3f\n", *ratio);
}

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
    auto it = cache_.find(p.key());
    if (it == cache_.end()) {
      auto v = ev_.vendor_baseline(p);
      Entry e;
      if (v.ok() && v->ok()) e.eval = *v;
      else e.note = v.ok() ? std::string(outcome_name(v->outcome)) + ": " + v->message : v.status().message();
      it = cache_.emplace(p.key(), e).first;
    }
    *note = it->second.note;
    return it->second.eval;
  }

 private:
  struct Entry {
    std::optional<Evaluation> eval;
    std::string note;
  };
  Evaluator& ev_;
  bool skip_;
  std::map<std::string, Entry> cache_;
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
    auto it = cache_.find(p.key());
    if (it == cache_.end()) {
      auto f = ev_.read_floor(p);
      Entry e;
      if (f.ok()) e.floor = *f;
      else e.note = f.status().message();
      it = cache_.emplace(p.key(), e).first;
    }
    *note = it->second.note;
    return it->second.floor;
  }

 private:
  struct Entry {
    std::optional<ReadFloor> floor;
    std::string note;
  };
  Evaluator& ev_;
  const BenchBestOptions& o_;
  std::map<std::string, Entry> cache_;
};

// Which of ours and the vendor ran faster than the floor (then it is no floor).
std::vector<std::string> floor_beaten_by(const std::optional<ReadFloor>& floor, const std::optional<Evaluation>& ours,
                                         const std::optional<Evaluation>& vendor) {
  std::vector<std::string> who;
  if (!floor || floor->timing.median_ms <= 0) return who;
  if (ours && ours->ok() && ours->timing.median_ms < floor->timing.median_ms) who.push_back("ours");
  if (vendor && vendor->ok() && vendor->timing.median_ms < floor->timing.median_ms) who.push_back("vendor");
  return who;
}

std::string floor_line(const std::optional<ReadFloor>& floor, const std::string& note,
                       const std::optional<Evaluation>& ours, const std::optional<Evaluation>& vendor) {
  if (!floor) return "read floor: " + note;
  std::string line = "read floor " + fmt("%.4f", floor->timing.median_ms) + " ms to read " +
                     fmt("%.1f", double(floor->bytes.total()) / 1e6) + " MB once (" + fmt("%.0f", floor->gbps) +
                     " GB/s, " + floor->variant + ")";
  if (ours && ours->ok())
    line += "; ours at " + fmt("%.1f%%", percent_of_floor(floor->timing.median_ms, ours->timing.median_ms)) + " of it";
  if (vendor && vendor->ok())
    line += ", vendor at " + fmt("%.1f%%", percent_of_floor(floor->timing.median_ms, vendor->timing.median_ms));
  for (const auto& who : floor_beaten_by(floor, ours, vendor))
    line += std::string("\n    NOTE: ") + (who == "ours" ? "our kernel" : "the vendor's GEMM") +
            " ran faster than this read floor, so the floor is not the fastest read (the sweep missed a faster "
            "way); percentages above 100 say so";
  return line;
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
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("config   %s %s\n", tmpl->name().c_str(), config_to_json_text(config).c_str());
    print_table(ev.device(), bandwidth, problem, rows, ratio);
    if (!vendor_note.empty()) std::printf("vendor library: %s\n", vendor_note.c_str());
    std::printf("%s\n", floor_line(floor, floor_note, ours, vendor).c_str());
  }
  return ours.ok() ? kExitOk : kExitFailed;
}

struct EntryResult {
  const BestEntry* entry = nullptr;
  fs::path file;  // the best_config.json it came from
  std::string status;  // ok, DRIFT, FAILED, MISMATCH
  std::vector<std::string> notes;
  ConfigUpdate update;  // the recorded config brought up to date with the template
  std::optional<Evaluation> now;
  std::optional<Evaluation> vendor;
  std::string vendor_note;
  std::optional<double> drift;  // now / recorded - 1
  std::optional<ReadFloor> floor;
  std::string floor_note;
};

std::optional<double> metric(const json& m, const char* name) {
  if (m.contains(name) && m[name].is_number()) return m[name].get<double>();
  return std::nullopt;
}

// The steps of bench_best. A step that returns an int wants bench-best to end with that
// exit code now; std::nullopt means go on.

// What the flags can be wrong about on their own, before any file or GPU.
std::optional<int> check_flags(const BenchBestOptions& o, bool from_file, bool replay) {
  if (!o.config_json.empty() && from_file) return usage("give --config or --best-config/--results, not both");
  if (o.config_json.empty() && !from_file)
    return usage("give a config: --config '{...}' with the problem flags, or --best-config FILE, or --results DIR");
  if (!o.config_json.empty() && o.fastest_only) return usage("--fastest-only goes with --best-config/--results");
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

struct Selection {
  std::vector<const BestEntry*> selected;      // for this device, through the filters
  std::vector<const BestEntry*> other_device;  // the rest
  std::size_t slower_left_out = 0;             // --fastest-only: this device's entries not kept
};

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

// Percent of the device's dense peak for the problem's input type; nullopt when unknown.
std::optional<double> percent_of_peak(const DeviceFacts& device, const GemmProblem& p, const Evaluation& e) {
  const double peak = device.peak_flops(p.a_type);
  if (!(peak > 0) || !e.ok()) return std::nullopt;
  return 100.0 * e.tflops * 1e12 / peak;
}

json maybe(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

struct Sources {
  std::vector<fs::path> files;
  std::vector<std::string> missing;  // problem-set folders without a result yet
  std::string label() const {
    return files.size() == 1 ? files.front().string() : std::to_string(files.size()) + " best_config.json files";
  }
};

void print_json(const Sources& src, const OpenedEvaluator& opened, const DeviceFacts& device, const Selection& sel,
                const std::vector<EntryResult>& results, int code) {
  const std::vector<const BestEntry*>& other_device = sel.other_device;
  const double bandwidth = opened.measured_bandwidth();
  json files = json::array();
  for (const auto& f : src.files) files.push_back(f.string());
  json out{{"best_config", src.files.front().string()},
           {"best_configs", files},
           {"not_tuned", src.missing},
           {"entries", json::array()},
           {"other_devices", other_device.size()},
           {"slower_entries_left_out", sel.slower_left_out},
           {"measured_bandwidth_gbps", bandwidth > 0 ? json(bandwidth / 1e9) : json(nullptr)}};
  to_json(out["device"], device);
  for (const auto& r : results) {
    const GemmProblem& p = r.entry->problem;
    const double peak = device.peak_flops(p.a_type);
    json j{{"template", r.entry->template_name},
           {"problem", p.describe()},
           {"problem_json", p},
           {"best_config", r.file.string()},
           {"config", config_to_json(r.entry->config)},
           {"status", r.status},
           {"notes", r.notes},
           {"recorded", r.entry->metrics},
           {"drift", r.drift ? json(*r.drift) : json(nullptr)},
           {"peak_tflops", peak > 0 ? json(peak / 1e12) : json(nullptr)}};
    if (r.update.changed()) j["config_run"] = config_to_json(r.update.config);
    if (r.now) {
      to_json(j["now"], *r.now);
      j["percent_of_peak"] = maybe(percent_of_peak(device, p, *r.now));
    }
    if (r.vendor) {
      to_json(j["vendor"], *r.vendor);
      j["vendor_percent_of_peak"] = maybe(percent_of_peak(device, p, *r.vendor));
    } else {
      j["vendor_unavailable"] = r.vendor_note;
    }
    if (r.floor) {
      to_json(j["read_floor"], *r.floor);
      const double f = r.floor->timing.median_ms;
      j["percent_of_floor"] = r.now && r.now->ok() ? json(percent_of_floor(f, r.now->timing.median_ms)) : json(nullptr);
      j["vendor_percent_of_floor"] =
          r.vendor && r.vendor->ok() ? json(percent_of_floor(f, r.vendor->timing.median_ms)) : json(nullptr);
    } else {
      j["read_floor_unavailable"] = r.floor_note;
    }
    j["floor_beaten_by"] = floor_beaten_by(r.floor, r.now, r.vendor);
    out["entries"].push_back(j);
  }
  out["exit_code"] = code;
  std::cout << out.dump(2) << "\n";
}

void print_text(const Sources& src, Evaluator& ev, const DeviceFacts& device, const Selection& sel,
                const std::vector<EntryResult>& results, const BenchBestOptions& o, bool drift) {
  const std::vector<const BestEntry*>& other_device = sel.other_device;
  std::printf("device   %s (%s) [%s]\n", device.name.c_str(), device.arch.c_str(), device.backend.c_str());
  std::printf("entries  %zu for this device in %s", results.size(), src.label().c_str());
  if (!other_device.empty()) std::printf(" (%zu for other devices or filters left out)", other_device.size());
  if (sel.slower_left_out) std::printf(" (%zu slower ones left out: --fastest-only)", sel.slower_left_out);
  for (const auto& m : src.missing) std::printf("\nnot tuned %s", m.c_str());
  std::printf("\ndrift tolerance %.1f%%\n", o.drift_tolerance_pct);
  std::vector<std::vector<std::string>> table;
  int i = 0;
  for (const auto& r : results) {
    const BestEntry& e = *r.entry;
    ++i;
    std::printf("\n[%d] %s %s\n    config  %s\n", i, e.template_name.c_str(), e.problem.describe().c_str(),
                config_to_json_text(e.config).c_str());
    if (src.files.size() > 1) std::printf("    from    %s\n", r.file.string().c_str());
    if (r.update.changed()) std::printf("    run as  %s\n", config_to_json_text(r.update.config).c_str());
    const auto rec = metric(e.metrics, "median_ms"), rp20 = metric(e.metrics, "p20_ms"), rp80 = metric(e.metrics, "p80_ms"),
               rtf = metric(e.metrics, "tflops");
    std::printf("    recorded  %s median %s ms [p20 %s, p80 %s], %s TFLOP/s%s (run %s, row %s, %s)\n",
                e.metrics.value("source", std::string("")).c_str(), rec ? fmt("%.4f", *rec).c_str() : "?",
                rp20 ? fmt("%.4f", *rp20).c_str() : "?", rp80 ? fmt("%.4f", *rp80).c_str() : "?",
                rtf ? fmt("%.2f", *rtf).c_str() : "?",
                e.vendor_ratio ? (", " + fmt("%.3fx", *e.vendor_ratio) + " vendor").c_str() : "",
                e.provenance.value("run_id", std::string("?")).c_str(),
                e.provenance.contains("history_row") ? e.provenance["history_row"].dump().c_str() : "?",
                e.provenance.value("timestamp", std::string("?")).c_str());
    if (r.now) {
      const Evaluation& n = *r.now;
      if (n.ok()) {
        std::string spread;
        if (rp20 && rp80)
          spread = n.timing.median_ms >= *rp20 && n.timing.median_ms <= *rp80 ? ", within the recorded p20-p80"
                                                                              : ", outside the recorded p20-p80";
        const std::string accuracy = n.accuracy.checked ? "max error " + fmt("%.3g", n.accuracy.max_abs_error) +
                                                              ", rel " + fmt("%.3g", n.accuracy.rel_error_norm)
                                                        : std::string("accuracy not checked");
        std::printf("    now       median %.4f ms [p20 %.4f, p80 %.4f], %.2f TFLOP/s, %s; drift %s%s\n",
                    n.timing.median_ms, n.timing.p20_ms, n.timing.p80_ms, n.tflops, accuracy.c_str(),
                    r.drift ? fmt("%+.1f%%", *r.drift * 100).c_str() : "?", spread.c_str());
      } else {
        std::printf("    now       %s: %s\n", outcome_name(n.outcome), n.message.c_str());
      }
    }
    if (r.vendor)
      std::printf("    vendor    %s: median %.4f ms, %.2f TFLOP/s%s\n", ev.vendor_name().c_str(), r.vendor->timing.median_ms,
                  r.vendor->tflops,
                  r.now && r.now->ok() ? (", ratio now " + fmt("%.3f", r.vendor->timing.median_ms / r.now->timing.median_ms)).c_str() : "");
    else if (r.now)
      std::printf("    vendor    %s\n", r.vendor_note.c_str());
    if (r.now) std::printf("    floor     %s\n", floor_line(r.floor, r.floor_note, r.now, r.vendor).c_str());
    for (const auto& note : r.notes) std::printf("    note      %s\n", note.c_str());
    std::printf("    status    %s\n", r.status.c_str());
    const bool now_ok = r.now && r.now->ok();
    table.push_back({std::to_string(i), e.template_name, e.problem.describe(), rec ? fmt("%.4f", *rec) : "",
                     now_ok ? fmt("%.4f", r.now->timing.median_ms) : "",
                     r.drift ? fmt("%+.1f%%", *r.drift * 100) : "",
                     r.vendor ? fmt("%.4f", r.vendor->timing.median_ms) : "",
                     r.vendor && now_ok ? fmt("%.3fx", r.vendor->timing.median_ms / r.now->timing.median_ms) : "",
                     r.floor ? fmt("%.4f", r.floor->timing.median_ms) : "",
                     r.floor && now_ok ? fmt("%.1f%%", percent_of_floor(r.floor->timing.median_ms, r.now->timing.median_ms)) +
                                             (floor_beaten_by(r.floor, r.now, r.vendor).empty() ? "" : "!")
                                       : "",
                     r.status});
  }
  std::printf("\n%s", format_table({"#", "template", "problem", "recorded_ms", "now_ms", "drift", "vendor_ms",
                                    "ratio_now", "read_floor_ms", "%_of_floor", "status"},
                                   table)
                          .c_str());
  bool beaten = false;
  for (const auto& r : results) beaten |= !floor_beaten_by(r.floor, r.now, r.vendor).empty();
  if (beaten)
    std::printf("!: a GEMM (ours or the vendor's) ran faster than the read floor measured here: that floor is not the "
                "fastest read\n");
  if (drift && !o.fail_on_drift) std::printf("drift beyond %.1f%% is flagged (exit code unaffected; --fail-on-drift makes it 1)\n", o.drift_tolerance_pct);
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
