#include "cli/bench_best_measure.h"

#include <atomic>
#include <cmath>
#include <thread>

namespace tilesmith::cli {
namespace fs = std::filesystem;

namespace {

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

}  // namespace

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

std::optional<analysis::PairedRatio> measure_paired(Evaluator& ev, const KernelTemplate& tmpl,
                                                    const GemmProblem& problem, const Config& config, int rounds,
                                                    std::string* note) {
  if (rounds <= 0) {
    *note = "not measured (--rounds 0)";
    return std::nullopt;
  }
  std::vector<double> ours_ms, vendor_ms;
  for (int round = 0; round < rounds; ++round) {
    std::optional<double> ours, vendor;
    for (int side = 0; side < 2; ++side) {
      if ((side == 0) == analysis::ours_first(round)) {
        const Evaluation e = ev.evaluate(tmpl, problem, config);
        if (!e.ok()) {
          *note = "round " + std::to_string(round + 1) + ", ours: " + outcome_name(e.outcome) + " " + e.message;
          return std::nullopt;
        }
        ours = e.timing.median_ms;
      } else {
        auto v = ev.vendor_baseline(problem);
        if (!v.ok() || !v->ok()) {
          *note = "round " + std::to_string(round + 1) + ", vendor: " +
                  (v.ok() ? std::string(outcome_name(v->outcome)) + " " + v->message : v.status().message());
          return std::nullopt;
        }
        vendor = v->timing.median_ms;
      }
    }
    ours_ms.push_back(*ours);
    vendor_ms.push_back(*vendor);
  }
  auto p = analysis::paired_ratio(ours_ms, vendor_ms);
  if (!p) *note = "a round gave no positive time";
  return p;
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
                        VendorCache& vendors, FloorCache& floors, double tol, int rounds) {
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
  if (r.now->ok() && r.vendor)
    r.paired = measure_paired(ev, *tmpl, e->problem, r.update.config, rounds, &r.paired_note);
  else
    r.paired_note = r.vendor ? "ours did not run" : "no vendor figure to pair with";
  const auto recorded = metric(e->metrics, "median_ms");
  if (r.now->ok() && recorded && *recorded > 0) r.drift = r.now->timing.median_ms / *recorded - 1;
  if (!r.now->ok()) r.status = "FAILED";
  else if (mismatch) r.status = "MISMATCH";
  else if (r.drift && std::fabs(*r.drift) > tol) r.status = "DRIFT";
  else r.status = "ok";
  return r;
}

}  // namespace tilesmith::cli
