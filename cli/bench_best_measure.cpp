#include "cli/bench_best_measure.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "cli/bench_best_rounds.h"
#include "runtime/code_identity.h"
#include "runtime/replay/replay_set.h"

namespace tilesmith::cli {
namespace fs = std::filesystem;

namespace {

// The template an entry names: the built-in (or --kernels-dir) one, or on replay the
// recording's (of the entry's problem where recordings of one kernel at several problems
// share the name); nullptr when there is none.
const KernelTemplate* find_template(const BestEntry* e, const OpenedEvaluator& opened, const TemplateLibrary* lib) {
  if (opened.recorded_template) {
    const KernelTemplate* named = nullptr;
    for (std::size_t i = 0; i < opened.recorded_templates.size(); ++i) {
      const KernelTemplate& t = opened.recorded_templates[i];
      if (t.name() != e->template_name) continue;
      if (replay::answers_for(*opened.recordings[i], e->problem)) return &t;
      if (!named) named = &t;
    }
    return named;
  }
  return lib->find(e->template_name);
}

}  // namespace

EpilogueCost measure_epilogue_cost(Evaluator& ev, const KernelTemplate& tmpl, const GemmProblem& fused,
                                   const Config& config, bool with_vendor, VendorCache& vendors, int rounds) {
  EpilogueCost c;
  GemmProblem plain = fused;
  plain.epilogue = Epilogue::kNone;
  std::vector<RoundContestant> sides = {{"ours with the epilogue", [&] { return ev.evaluate(tmpl, fused, config); }},
                                        {"ours without it", [&] { return ev.evaluate(tmpl, plain, config); }}};
  // The vendor's pair joins the rounds where it runs both problems (it refuses an epilogue it
  // cannot fuse, e.g. leaky_relu on cuBLASLt: then ours alone, with the vendor's reason).
  auto vendor_once = [&](const GemmProblem& p) {
    Result<Evaluation> v = ev.vendor_baseline(p);
    if (v.ok()) return *v;
    Evaluation e;
    e.outcome = Outcome::kLaunchError;
    e.message = v.status().message();
    return e;
  };
  std::string note;
  const bool vendor_pair = with_vendor && vendors.get(fused, &note) && vendors.get(plain, &note);
  if (vendor_pair) {
    sides.push_back({"the vendor with the epilogue", [&] { return vendor_once(fused); }});
    sides.push_back({"the vendor without it", [&] { return vendor_once(plain); }});
  } else if (with_vendor && !note.empty()) {
    c.note = "vendor: " + note;
  }
  const ProblemRounds pr = measure_rounds(sides, nullptr, std::max(rounds, 1));
  if (!pr.note.empty()) c.note += (c.note.empty() ? "" : "; ") + pr.note;
  if (pr.rounds > 0) {
    c.ours = side_cost(pr.ms[0], pr.ms[1]);
    if (vendor_pair) c.vendor = side_cost(pr.ms[2], pr.ms[3]);
  }
  return c;
}

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
  const RecordedKernel recorded_kernel{e->template_hash, e->code_hash};
  if (Status st = tmpl->supports(e->problem); !st.ok()) {
    r.status = "MISMATCH";
    if (!tmpl->matches_source_hash(e->template_hash)) r.notes.push_back(describe_source_change(*tmpl, recorded_kernel));
    r.notes.push_back(st.message());
    return r;
  }
  // An entry recorded before the template gained a parameter runs with its default; one
  // with a parameter the template no longer has runs without it and is a mismatch.
  r.update = tmpl->update_config(e->config);
  for (auto& note : r.update.notes()) r.notes.push_back(std::move(note));
  if (!r.update.dropped.empty()) mismatch = true;
  r.now = ev.evaluate(*tmpl, e->problem, r.update.config);
  // A template whose source changed may still compile this config to the kernel the entry
  // measured (a change to another path, a comment, a refactor): its code hash says so.
  const KernelMatch match = match_recorded_kernel(*tmpl, recorded_kernel, r.now->code_hash);
  if (match != KernelMatch::kSameSource)
    r.notes.push_back(describe_kernel_match(match, *tmpl, recorded_kernel, r.now->code_hash) +
                      (match == KernelMatch::kSameKernel ? ": the entry still describes it" : ""));
  if (match == KernelMatch::kChanged || match == KernelMatch::kUnknown) mismatch = true;
  r.vendor = vendors.get(e->problem, &r.vendor_note);
  r.floor = floors.get(e->problem, &r.floor_note);
  r.tmpl = tmpl;
  const auto recorded = metric(e->metrics, "median_ms");
  if (r.now->ok() && recorded && *recorded > 0) r.drift = r.now->timing.median_ms / *recorded - 1;
  if (!r.now->ok()) r.status = "FAILED";
  else if (mismatch) r.status = "MISMATCH";
  else if (r.drift && std::fabs(*r.drift) > tol) r.status = "DRIFT";
  else r.status = "ok";
  return r;
}

std::vector<ProblemContest> measure_entry_rounds(std::vector<EntryResult>& results, Evaluator& ev,
                                                const RoundsPlan& plan) {
  // The problems in result order, each with the entries that ran for it.
  std::vector<std::pair<GemmProblem, std::vector<std::size_t>>> groups;
  for (std::size_t i = 0; i < results.size(); ++i) {
    EntryResult& r = results[i];
    if (!r.now || !r.now->ok() || !r.tmpl) {
      r.paired_note = "ours did not run";
      continue;
    }
    const GemmProblem& p = r.entry->problem;
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first.key() == p.key(); });
    if (g == groups.end()) groups.push_back({p, {i}});
    else g->second.push_back(i);
  }
  std::vector<ProblemContest> contests;
  for (const auto& [problem, members] : groups) {
    std::vector<RoundContestant> cs;
    for (std::size_t i : members) {
      const EntryResult& r = results[i];
      std::string label = entry_tag(i);
      label += ' ';
      label += r.entry->template_name;
      cs.push_back({std::move(label), [&ev, &r] { return ev.evaluate(*r.tmpl, r.entry->problem, r.update.config); }});
    }
    // The vendor where bench-best measured it for this problem (not after --no-vendor or a failure).
    const bool with_vendor = results[members.front()].vendor.has_value();
    std::function<Result<Evaluation>()> vendor = [&ev, p = problem] { return ev.vendor_baseline(p); };
    ProblemRounds pr = measure_rounds(cs, with_vendor ? &vendor : nullptr, plan);
    for (std::size_t k = 0; k < members.size(); ++k) {
      EntryResult& r = results[members[k]];
      r.paired = pr.paired[k];
      r.paired_steady = pr.paired_steady[k];
      if (!r.paired) r.paired_note = unpaired_note(pr, with_vendor);
    }
    if (pr.contest) contests.push_back({problem.describe(), members, *pr.contest});
  }
  return contests;
}

}  // namespace tilesmith::cli
