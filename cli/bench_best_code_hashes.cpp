#include "cli/bench_best_code_hashes.h"

#include <iostream>
#include <map>
#include <memory>

#include "cli/bench_best_inputs.h"
#include "cli/exit_codes.h"
#include "runtime/backend.h"
#include "runtime/candidate_compiler.h"
#include "runtime/code_identity.h"

namespace tilesmith::cli {
namespace fs = std::filesystem;
namespace {

enum class Verdict { kRecorded, kSame, kChanged, kUnknown, kFailed };

struct Checked {
  Verdict verdict = Verdict::kFailed;
  std::string why;
  std::string code_hash;  // today's, where it compiled
};

// Compilers by backend, made once.
class Compilers {
 public:
  Result<std::shared_ptr<Compiler>> get(const std::string& backend) {
    if (auto it = made_.find(backend); it != made_.end()) return it->second;
    auto b = make_backend(backend);
    if (!b.ok()) return b.status();
    auto c = (*b)->compiler();
    if (!c.ok()) return c.status();
    backends_.push_back(std::move(b).value());
    made_[backend] = *c;
    return *c;
  }

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
  std::map<std::string, std::shared_ptr<Compiler>> made_;
};

Checked check_entry(const BestEntry& e, const TemplateLibrary& lib, Compilers& compilers) {
  Checked c;
  const KernelTemplate* tmpl = lib.find(e.template_name);
  if (!tmpl) {
    c.why = "no template " + e.template_name + " (use --kernels-dir for your own)";
    return c;
  }
  const RecordedKernel recorded{e.template_hash, e.code_hash};
  const ConfigUpdate update = tmpl->update_config(e.config);
  const bool same_source = tmpl->matches_source_hash(e.template_hash) && update.dropped.empty();
  // Nothing to record and nothing to compare with: no compile needed.
  if (!same_source && !needs_compile(*tmpl, recorded)) {
    c.verdict = Verdict::kUnknown;
    c.why = tmpl->matches_source_hash(e.template_hash)
                ? "the entry names parameters the template no longer has: " + update.notes().back()
                : describe_kernel_match(KernelMatch::kUnknown, *tmpl, recorded, "");
    return c;
  }
  auto device = device_facts_from_json(e.device);
  if (!device.ok()) {
    c.why = "the entry's \"device\" cannot be read back: " + device.status().message();
    return c;
  }
  auto compiler = compilers.get(device->backend);
  if (!compiler.ok()) {
    c.why = device->backend + " compiler unavailable: " + compiler.status().message();
    return c;
  }
  // Another compiler version makes other code from the same source: its hash would not
  // describe the kernel the entry measured.
  if (!device->runtime_version.empty() && (*compiler)->version() != device->runtime_version) {
    c.why = "recorded with " + device->runtime_version + ", this compiler is " + (*compiler)->version();
    return c;
  }
  CompiledCandidate cc = compile_candidate(**compiler, *tmpl, e.problem, update.config, *device);
  c.code_hash = cc.evaluation.code_hash;
  if (!cc.evaluation.ok() || c.code_hash.empty()) {
    c.why = std::string(outcome_name(cc.evaluation.outcome)) + ": " + cc.evaluation.message;
    return c;
  }
  if (e.code_hash.empty()) {
    c.verdict = Verdict::kRecorded;
  } else if (e.code_hash == c.code_hash) {
    c.verdict = Verdict::kSame;
  } else {
    c.verdict = Verdict::kChanged;
    c.why = describe_kernel_match(KernelMatch::kChanged, *tmpl, recorded, c.code_hash);
  }
  return c;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kRecorded: return "recorded";
    case Verdict::kSame: return "same kernel";
    case Verdict::kChanged: return "CHANGED";
    case Verdict::kUnknown: return "UNKNOWN";
    case Verdict::kFailed: return "FAILED";
  }
  return "?";
}

}  // namespace

int record_code_hashes(const BenchBestOptions& o, const std::vector<BestEntry>& entries,
                       const std::vector<fs::path>& entry_files, const std::optional<GemmProblem>& problem_filter,
                       const TemplateLibrary& lib) {
  Compilers compilers;
  std::map<fs::path, std::vector<std::pair<std::string, std::string>>> to_write;  // file -> (key, code hash)
  // The entries the flags keep, as for a measurement (without the device: each its own).
  std::vector<const BestEntry*> kept;
  for (const BestEntry& e : entries)
    if ((!problem_filter || e.problem.key() == problem_filter->key()) &&
        (o.template_name.empty() || e.template_name == o.template_name))
      kept.push_back(&e);
  if (o.fastest_only) keep_fastest_per_problem(kept);
  int changed = 0, failed = 0, shown = 0;
  for (const BestEntry* entry : kept) {
    const BestEntry& e = *entry;
    const fs::path& file = entry_files[std::size_t(entry - entries.data())];
    const Checked c = check_entry(e, lib, compilers);
    ++shown;
    std::cout << verdict_name(c.verdict) << "  " << e.template_name << "  " << e.problem.describe() << "  "
              << config_to_json_text(e.config) << "  (" << file.string() << ")";
    if (!c.why.empty()) std::cout << ": " << c.why;
    std::cout << "\n";
    if (c.verdict == Verdict::kRecorded) to_write[file].emplace_back(e.key(), c.code_hash);
    if (c.verdict == Verdict::kChanged || c.verdict == Verdict::kUnknown) ++changed;
    if (c.verdict == Verdict::kFailed) ++failed;
  }
  for (const auto& [file, hashes] : to_write) {
    // Read again and written whole: the entries as the file holds them now, each given its hash.
    auto now = read_best_config(file);
    Status st = now.status();
    if (now.ok()) {
      for (BestEntry& e : *now)
        for (const auto& [key, hash] : hashes)
          if (e.key() == key && e.code_hash.empty()) e.code_hash = hash;
      st = write_best_config(file, *now);
    }
    if (!st.ok()) {
      std::cerr << "bench-best: " << file.string() << ": the code hashes were not written: " << st.message() << "\n";
      ++failed;
    } else {
      std::cout << file.string() << ": " << hashes.size() << " code hash(es) written\n";
    }
  }
  std::cout << shown << " entr" << (shown == 1 ? "y" : "ies") << " checked; " << changed
            << " whose kernel changed or cannot be told, " << failed << " failed\n";
  if (failed) return kExitFailed;
  return changed ? kExitMismatch : kExitOk;
}

}  // namespace tilesmith::cli
