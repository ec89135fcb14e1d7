#include "package/package_export.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unistd.h>

#include "base/files.h"
#include "base/format.h"
#include "base/hash.h"
#include "gemmlib/package.h"
#include "package/package_manifest.h"
#include "registry/config.h"
#include "registry/device_facts.h"
#include "runtime/candidate_compiler.h"
#include "runtime/code_identity.h"
#include "tuner/loop/problem_set.h"
#include "tuner/records/journal.h"

namespace tilesmith {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double entry_median(const BestEntry& e) {
  auto it = e.metrics.find("median_ms");
  return it != e.metrics.end() && it->is_number() ? it->get<double>() : INFINITY;
}

// The best entry per problem in one best_config.json by the objective the run recorded
// (entry_objective_value: the fastest for a run tuned for time), grouped by problem key,
// on the device the filter selects.
Result<std::map<std::string, BestEntry>> winners_in(const fs::path& path, const std::string& device_filter) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return Status::not_found(path.string() + " does not exist: that problem has no winner yet (tune it first, or "
                             "resume the run until it has one)");
  TS_ASSIGN_OR_RETURN(std::vector<BestEntry> entries, read_best_config(path));
  std::set<std::string> devices;
  std::vector<const BestEntry*> kept;
  for (const auto& e : entries) {
    if (!device_filter.empty() && e.device_fingerprint.find(device_filter) == std::string::npos) continue;
    devices.insert(e.device_fingerprint);
    kept.push_back(&e);
  }
  if (kept.empty())
    return Status::not_found(path.string() + " has no entry" +
                             (device_filter.empty() ? "" : " for a device matching \"" + device_filter + "\""));
  if (devices.size() > 1) {
    std::string list;
    for (const auto& d : devices) list += "\n  " + d;
    return Status::failed_precondition(path.string() + " holds results of several devices; a package is for one. "
                                       "Choose with --device TEXT (part of the fingerprint):" + list);
  }
  std::map<std::string, BestEntry> best;
  for (const BestEntry* e : kept) {
    if (e->device.value("backend", "") == "replay")
      return Status::failed_precondition(path.string() + ": the winner of " + e->problem.describe() +
                                         " was recorded on the replay backend; there is no kernel to compile or "
                                         "ship. Export a run measured on a GPU");
    const auto value = entry_objective_value(*e);
    if (!value) continue;
    auto [it, added] = best.emplace(e->problem.key(), *e);
    if (!added && *value < *entry_objective_value(it->second)) it->second = *e;
  }
  if (best.empty())
    return Status::not_found(path.string() + " has no entry with a measured time (and energy, for a run tuned "
                                             "for energy or edp)");
  return best;
}

// A set's problem_set.json: names, counts and subfolders, in the set's order.
Result<std::vector<ExportProblem>> set_problems(const fs::path& dir, const ExportOptions& o,
                                                std::vector<std::string>* unfinished) {
  const fs::path set_path = dir / kProblemSetFileName;
  TS_ASSIGN_OR_RETURN(std::string text, read_file(set_path));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return Status::parse_error(set_path.string() + " is not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("problems") || !j["problems"].is_array())
    return Status::parse_error(set_path.string() + " has no \"problems\" list");
  std::vector<ExportProblem> out;
  for (const auto& item : j["problems"]) {
    if (!item.is_object() || !item.contains("name") || !item["name"].is_string())
      return Status::parse_error(set_path.string() + ": a problem without a \"name\"");
    ExportProblem p;
    p.name = item["name"].get<std::string>();
    p.count = item.value("count", std::int64_t{1});
    std::string sub = item.value("folder", p.name);  // the set run writes it; its default is the name
    if (sub.empty() || fs::path(sub).is_absolute() || sub.find("..") != std::string::npos)
      return Status::parse_error(set_path.string() + ": problem " + p.name + " names an unsafe folder \"" + sub + "\"");
    p.best_config = dir / sub / "best_config.json";
    auto found = winners_in(p.best_config, o.device_filter);
    if (!found.ok() && found.status().code() == StatusCode::kNotFound && o.skip_unfinished) {
      if (unfinished) unfinished->push_back(p.name + ": " + found.status().message());
      continue;
    }
    TS_ASSIGN_OR_RETURN(auto winners, std::move(found));
    if (item.contains("problem")) {
      TS_ASSIGN_OR_RETURN(GemmProblem want, problem_from_json(item["problem"]));
      auto it = winners.find(want.key());
      if (it == winners.end())
        return Status::not_found(p.best_config.string() + " has no winner for " + p.name + " (" + want.describe() + ")");
      p.winner = it->second;
    } else {
      if (winners.size() != 1)
        return Status::parse_error(set_path.string() + ": problem " + p.name + " has no \"problem\" and its folder "
                                   "holds several");
      p.winner = winners.begin()->second;
    }
    out.push_back(std::move(p));
  }
  if (out.empty() && o.skip_unfinished)
    return Status::not_found(set_path.string() + ": no problem of the set has a winner yet; tune (or resume) first");
  if (out.empty()) return Status::parse_error(set_path.string() + " lists no problems");
  return out;
}

// An absolute path with every existing part's links resolved and no trailing separator.
fs::path resolved(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(p, ec), ec);
  if (ec) r = fs::absolute(p, ec).lexically_normal();
  if (!r.has_filename() && r.has_relative_path()) r = r.parent_path();
  return r;
}

// `inner` lies strictly inside `outer` (both resolved).
bool strictly_inside(const fs::path& inner, const fs::path& outer) {
  auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end() && i != inner.end();
}

// Where the package goes and what is there now.
struct Destination {
  fs::path out;  // resolved
  PackageFolderCheck existing;
};

std::string listed(const std::vector<std::string>& problems) {
  std::string out;
  const std::size_t shown = std::min<std::size_t>(problems.size(), 6);
  for (std::size_t i = 0; i < shown; ++i) out += (i ? "; " : "") + problems[i];
  if (problems.size() > shown) out += "; and " + std::to_string(problems.size() - shown) + " more";
  return out;
}

Result<Destination> destination(const ExportOptions& o) {
  Destination d;
  d.out = resolved(o.out_dir);
  const fs::path results = resolved(o.results_dir);
  const std::string out_name =
      "--out " + o.out_dir.string() + (d.out.string() != o.out_dir.string() ? " (" + d.out.string() + ")" : "");
  const std::string elsewhere = "choose another --out, outside the results folder and not above it";
  auto refuse = [](const std::string& msg) { return Status::failed_precondition(msg); };
  if (d.out == results)
    return refuse(out_name + " is the results folder: export never writes into the run's folder (history.csv, "
                  "best_config.json and the journal live there); " + elsewhere);
  if (strictly_inside(results, d.out))
    return refuse(out_name + " contains the results folder " + results.string() + ": export never writes above the "
                  "run's folder; " + elsewhere);
  if (strictly_inside(d.out, results))
    return refuse(out_name + " is inside the results folder " + results.string() + ": export never writes into the "
                  "run's folder; " + elsewhere);
  d.existing = check_package_folder(d.out);
  const std::string yourself = "choose another --out, or remove it yourself (export deletes only a package it wrote, "
                               "unchanged since)";
  using Kind = PackageFolderCheck::Kind;
  switch (d.existing.kind) {
    case Kind::kMissing:
    case Kind::kEmpty: return d;
    case Kind::kNotAFolder: return refuse(out_name + " exists and is not a folder; " + yourself);
    case Kind::kNotAPackage:
      return refuse(out_name + " is a folder that is not a package (it has no " + kManifestFileName +
                    " and no tuned.json); " + yourself);
    case Kind::kNoManifest:
      return refuse(out_name + " holds a package without " + kManifestFileName + " (written by an earlier "
                    "tilesmith, or by hand): not a package this version can verify as unchanged; remove it yourself "
                    "or choose another --out");
    case Kind::kBadManifest: return refuse(out_name + ": " + listed(d.existing.problems) + "; " + yourself);
    case Kind::kChanged:
      return refuse(out_name + " holds a package that differs from its " + kManifestFileName + " (" +
                    listed(d.existing.problems) + "); " + yourself);
    case Kind::kIntact:
      if (!o.replace)
        return refuse(out_name + " holds a package" +
                      (d.existing.manifest.created.empty() ? "" : " exported " + d.existing.manifest.created) +
                      "; give --replace to replace it, or choose another --out");
      return d;
  }
  return d;
}

// Writes the package into a fresh folder beside the destination, then puts it in place;
// a package that was there (checked intact just now) loses exactly its listed files.
Status write_package(const ExportOptions& o, const std::string& created,
                     const std::map<std::string, std::string>& files, std::vector<std::string>& notes) {
  // Checked again: compiling took a while, and the folder may have changed meanwhile.
  TS_ASSIGN_OR_RETURN(Destination dest, destination(o));
  const fs::path& out = dest.out;
  std::error_code ec;
  const fs::path parent = out.parent_path();
  TS_RETURN_IF_ERROR(ensure_directory(parent));
  const std::string pid = std::to_string(::getpid());
  const fs::path staging = parent / (out.filename().string() + ".partial-" + pid);
  fs::remove_all(staging, ec);  // this process's own leftover
  auto write_all = [&]() -> Status {
    for (const auto& [rel, contents] : files) {
      const fs::path p = staging / rel;
      TS_RETURN_IF_ERROR(ensure_directory(p.parent_path()));
      TS_RETURN_IF_ERROR(write_file_atomic(p, contents));
    }
    return write_file_atomic(staging / kManifestFileName,
                             manifest_to_json(make_manifest(files, created)).dump(2) + "\n");
  };
  if (Status st = write_all(); !st.ok()) {
    fs::remove_all(staging, ec);
    return st;
  }
  if (dest.existing.kind == PackageFolderCheck::Kind::kMissing) {
    fs::rename(staging, out, ec);
    if (ec) {
      std::error_code ignore;
      fs::remove_all(staging, ignore);
      return Status::io_error("cannot put the package in place at " + out.string() + ": " + ec.message());
    }
    return Status();
  }
  const fs::path old = parent / (out.filename().string() + ".old-" + pid);
  fs::rename(out, old, ec);
  if (ec) {
    std::error_code ignore;
    fs::remove_all(staging, ignore);
    return Status::io_error("cannot move the old package " + out.string() + " aside: " + ec.message());
  }
  fs::rename(staging, out, ec);
  if (ec) {
    std::error_code ignore;
    fs::rename(old, out, ignore);
    fs::remove_all(staging, ignore);
    return Status::io_error("cannot put the package in place at " + out.string() + ": " + ec.message());
  }
  if (dest.existing.kind == PackageFolderCheck::Kind::kIntact) {
    const std::string left = remove_listed_package(old, dest.existing.manifest);
    if (!left.empty()) notes.push_back("the replaced package: " + left);
  } else {
    fs::remove(old, ec);  // was empty; fs::remove never deletes a folder with entries
    if (fs::exists(fs::symlink_status(old, ec)))
      notes.push_back("the folder that was at --out is now " + old.string() + " (entries appeared in it during the "
                      "export); look at them and remove it yourself");
  }
  return Status();
}

std::optional<double> metric(const json& metrics, const char* key) {
  if (metrics.is_object() && metrics.contains(key) && metrics[key].is_number()) return metrics[key].get<double>();
  return std::nullopt;
}

// For a best_config.json written before the vendor's spread was recorded there: the
// journal beside it holds the vendor measurement whole; the event with the same median is
// the one best_config.json cites.
void vendor_spread_from_journal(const fs::path& dir, double median_ms, gemmlib::PackageProblem& pp) {
  auto text = read_file(dir / kJournalFileName);
  if (!text.ok()) return;
  std::size_t start = 0;
  while (start < text->size()) {
    std::size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    const std::string_view line(text->data() + start, end - start);
    start = end + 1;
    if (line.find("\"vendor\"") == std::string_view::npos) continue;
    json e = json::parse(line, nullptr, false);
    if (e.is_discarded() || !e.is_object() || e.value("event", "") != "vendor" || !e.contains("evaluation")) continue;
    auto v = evaluation_from_json(e["evaluation"]);
    if (!v.ok() || !v->ok() || v->timing.median_ms != median_ms) continue;
    pp.vendor_p20_ms = v->timing.p20_ms;
    pp.vendor_p80_ms = v->timing.p80_ms;
    pp.vendor_cv = v->timing.cv;
  }
}

}  // namespace

Result<std::vector<ExportProblem>> collect_export_problems(const ExportOptions& o,
                                                           std::vector<std::string>* unfinished) {
  std::error_code ec;
  if (!fs::is_directory(o.results_dir, ec))
    return Status::not_found("results folder " + o.results_dir.string() + " does not exist: give --results the folder an autotune-loop run wrote");
  if (fs::exists(o.results_dir / kProblemSetFileName, ec)) return set_problems(o.results_dir, o, unfinished);
  const fs::path best = o.results_dir / "best_config.json";
  if (!fs::exists(best, ec))
    return Status::not_found(o.results_dir.string() + " holds neither problem_set.json (a problem set's run) nor "
                             "best_config.json (a single problem's run): is it an autotune-loop results folder, "
                             "and has the run found a config yet?");
  TS_ASSIGN_OR_RETURN(auto winners, winners_in(best, o.device_filter));
  std::vector<ExportProblem> out;
  for (auto& [key, entry] : winners) {
    ExportProblem p;
    p.name = default_problem_name(entry.problem);
    p.best_config = best;
    p.winner = entry;
    out.push_back(std::move(p));
  }
  return out;
}

Status check_export_destination(const ExportOptions& o) { return destination(o).status(); }

Result<ExportReport> export_package(const ExportOptions& o, const TemplateLibrary& templates, Compiler& compiler) {
  TS_RETURN_IF_ERROR(check_export_destination(o));
  ExportReport report;
  std::vector<std::string> unfinished;
  TS_ASSIGN_OR_RETURN(report.problems, collect_export_problems(o, &unfinished));
  for (const auto& u : unfinished)
    report.notes.push_back("left out (the library runs the vendor for it): " + u);
  // The library's C API has no FP8 types (ts_dtype: fp32, fp16, bf16), so no program could ask
  // for an FP8 problem: such winners stay in the results folder and out of the package.
  std::vector<std::string> fp8;
  std::erase_if(report.problems, [&](const ExportProblem& p) {
    if (!dtype_is_fp8(p.winner.problem.a_type)) return false;
    fp8.push_back(p.name);
    return true;
  });
  for (const auto& name : fp8)
    report.notes.push_back("left out: " + name + " is an FP8 problem, which libtilesmith_gemm's API cannot express "
                           "yet (ts_dtype has fp32, fp16 and bf16); its results stay in the results folder");
  if (report.problems.empty())
    return Status::failed_precondition(
        "nothing to export: every problem in " + o.results_dir.string() + " is FP8 (" + fp8.front() +
        (fp8.size() > 1 ? ", ..." : "") + "), and libtilesmith_gemm's API has no FP8 types yet (ts_dtype has fp32, "
        "fp16 and bf16); use the tuned configs through bench-best --results or best_config.json");

  const BestEntry& first = report.problems.front().winner;
  for (const auto& p : report.problems)
    if (p.winner.device_fingerprint != first.device_fingerprint)
      return Status::failed_precondition("the winners were measured on different devices (" + first.device_fingerprint +
                                         "; " + p.winner.device_fingerprint + " for " + p.name +
                                         "); a package is for one device: choose with --device TEXT");
  TS_ASSIGN_OR_RETURN(DeviceFacts device, device_facts_from_json(first.device));

  // The package in memory; gemmlib::package_to_json writes its tuned.json (one writer of
  // the schema, read back by the runtime library's read_package).
  gemmlib::Package pkg;
  pkg.created = utc_timestamp_now();
  pkg.tilesmith_version = TILESMITH_VERSION;
  pkg.device.fingerprint = first.device_fingerprint;
  pkg.device.name = device.name;
  pkg.device.arch = device.arch;
  pkg.device.multiprocessors = device.multiprocessors;
  pkg.device.backend = device.backend;
  pkg.device.driver = device.driver_version;
  pkg.device.runtime_compiler = first.environment.value("compiler", "");
  pkg.device.facts = device;
  std::map<std::string, std::string> files;  // package-relative path -> contents
  std::shared_ptr<const KernelHeaders> headers;

  for (auto& p : report.problems) {
    const BestEntry& w = p.winner;
    const KernelTemplate* tmpl = templates.find(w.template_name);
    if (!tmpl)
      return Status::not_found("problem " + p.name + ": template " + w.template_name +
                               " is not among this build's templates (give --kernels-dir with the folder it was "
                               "tuned from)");
    const RecordedKernel recorded{w.template_hash, w.code_hash};
    const std::string refused = ", so the measured time would not belong to the kernel shipped. Export with the "
                                "templates of that version (--kernels-dir), or tune again";
    // Without a code hash to compare, nothing tells the kernel shipped from the one measured.
    if (match_recorded_kernel(*tmpl, recorded, "") == KernelMatch::kUnknown)
      return Status::failed_precondition("problem " + p.name + ": " +
                                         describe_kernel_match(KernelMatch::kUnknown, *tmpl, recorded, "") + refused);
    ConfigUpdate update = tmpl->update_config(w.config);
    if (!update.dropped.empty())
      return Status::failed_precondition("problem " + p.name + ": " + update.notes().back());
    for (const auto& n : update.notes()) report.notes.push_back(p.name + ": " + n);

    CompiledCandidate c = compile_candidate(compiler, *tmpl, w.problem, update.config, device);
    if (!c.evaluation.ok())
      return Status::failed_precondition(
          "problem " + p.name + ": " + w.template_name + " " + config_to_json_text(update.config) +
          (c.evaluation.outcome == Outcome::kInvalid ? " is not valid for it: " : " does not compile for " + device.arch + ": ") +
          c.evaluation.message);
    // A changed template may still compile the winner to the kernel that was measured.
    const KernelMatch match = match_recorded_kernel(*tmpl, recorded, c.evaluation.code_hash);
    const std::string said = describe_kernel_match(match, *tmpl, recorded, c.evaluation.code_hash);
    if (match == KernelMatch::kChanged) return Status::failed_precondition("problem " + p.name + ": " + said + refused);
    if (match == KernelMatch::kSameKernel) report.notes.push_back(p.name + ": " + said + ": exported");
    const RenderedKernel& rk = c.rendered;
    Hasher id_hash;
    id_hash.add_field(tmpl->source_hash()).add_field(rk.arch);
    for (const auto& opt : rk.options) id_hash.add_field(opt);
    const std::string id = id_hash.hex().substr(0, 16);

    if (!pkg.find_template(tmpl->name())) {
      gemmlib::PackageTemplate t;
      t.name = tmpl->name();
      t.source_hash = tmpl->source_hash();
      t.source_path = "kernels/" + t.name + ".hip";
      t.description_path = "kernels/" + t.name + ".json";
      files[t.source_path] = tmpl->source();
      files[t.description_path] = tmpl->description_json();
      pkg.templates.push_back(std::move(t));
      if (!headers) headers = tmpl->headers();
    }
    if (!pkg.find_kernel(id)) {
      gemmlib::PackageKernel k;
      k.id = id;
      k.template_name = tmpl->name();
      k.arch = rk.arch;
      k.entry = rk.entry;
      k.options = rk.options;
      k.compiler = compiler.version();
      k.binary_path = "binaries/" + id + (device.backend == "hip" ? ".hsaco" : ".cubin");
      k.binary_hash = short_hash(c.compiled.binary);
      files[k.binary_path] = c.compiled.binary;
      report.kernels.push_back({id, tmpl->name(), k.binary_path, c.compiled.binary.size(), c.compiled.compile_ms});
      pkg.kernels.push_back(std::move(k));
    }
    gemmlib::PackageProblem pp;
    pp.name = p.name;
    pp.count = p.count;
    pp.problem = w.problem;
    pp.template_name = tmpl->name();
    pp.config = update.config;
    pp.kernel_id = id;
    pp.grid = rk.grid;
    pp.block = rk.block;
    pp.dynamic_shared_bytes = rk.dynamic_shared_bytes;
    pp.workspace_bytes = rk.workspace_bytes;
    pp.median_ms = entry_median(w);
    pp.tflops = w.metrics.value("tflops", 0.0);
    pp.p20_ms = metric(w.metrics, "p20_ms");
    pp.p80_ms = metric(w.metrics, "p80_ms");
    pp.cv = metric(w.metrics, "cv");
    pp.vendor_name = w.vendor_name;
    pp.vendor_median_ms = w.vendor_median_ms;
    pp.vendor_p20_ms = w.vendor_p20_ms;
    pp.vendor_p80_ms = w.vendor_p80_ms;
    pp.vendor_cv = w.vendor_cv;
    if (pp.vendor_median_ms && !pp.vendor_p20_ms && !pp.vendor_p80_ms && !pp.vendor_cv)
      vendor_spread_from_journal(p.best_config.parent_path(), *pp.vendor_median_ms, pp);
    p.vs_vendor = pp.against_vendor();
    pkg.problems.push_back(std::move(pp));
  }
  if (headers)
    for (const auto& [name, text] : *headers) {
      files["kernels/" + name] = text;
      pkg.header_paths.push_back("kernels/" + name);
    }
  if (!pkg.device.runtime_compiler.empty() && pkg.device.runtime_compiler != compiler.version())
    report.notes.push_back("the winners were measured with " + pkg.device.runtime_compiler +
                           "; the binaries are compiled with " + compiler.version());

  report.tuned = gemmlib::package_to_json(pkg);
  files["tuned.json"] = report.tuned.dump(2) + "\n";
  TS_RETURN_IF_ERROR(write_package(o, pkg.created, files, report.notes));
  return report;
}

}  // namespace tilesmith
