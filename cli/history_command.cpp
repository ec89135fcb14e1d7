#include "cli/history_command.h"

#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "base/files.h"
#include "cli/cli_common.h"
#include "cli/run_subcommand.h"
#include "cli/exit_codes.h"
#include "cli/flag_checks.h"
#include "registry/template_library.h"
#include "runtime/replay/compressed_file.h"
#include "tuner/records/history.h"
#include "tuner/records/journal.h"
#include "tuner/records/history_recording.h"
#include "tuner/records/history_report.h"

namespace tilesmith::cli {
namespace fs = std::filesystem;

namespace {
struct HistoryOptions : RunFolderFlags {
  std::string file;
  std::size_t top = 10;
  bool json = false;
  std::string kernel_tuner_cache;
  std::string template_name;
};

// --kernel-tuner-cache: the run's measured space as a Kernel Tuner cache file.
int write_kernel_tuner_cache(const std::vector<HistoryRow>& rows, const fs::path& history, const HistoryOptions& o) {
  auto cache = kernel_tuner_cache_from_history(rows, o.template_name);
  if (!cache.ok()) {
    std::cerr << "autotune-loop history: --kernel-tuner-cache: " << cache.status().message() << "\n";
    return kExitUsage;
  }
  // history.csv names the device; the run's journal beside it has the whole description
  // (SMs, clock: what bounds a template's speed in a replay of the file).
  if (auto device = read_first_device(history.parent_path() / kJournalFileName);
      device && cache->device && device->name == cache->device->name && device->arch == cache->device->arch)
    cache->device = *device;
  // The template's math units by its name (a property of the template, not of its version).
  if (auto library = TemplateLibrary::embedded(); library.ok())
    if (const KernelTemplate* t = library->find(cache->kernel_name)) cache->math = t->math();
  // Where it goes is checked before anything is written there.
  const fs::path out = o.kernel_tuner_cache;
  std::error_code ec;
  Status where = fs::is_directory(out, ec)
                     ? Status::invalid(out.string() + " is a folder; give a file name (NAME.json.gz)")
                     : check_writable_directory(out.has_parent_path() ? out.parent_path() : fs::path("."),
                                                "the folder of");
  if (!where.ok()) {
    std::cerr << "autotune-loop history: --kernel-tuner-cache " << out.string() << ": " << where.message() << "\n";
    return kExitUsage;
  }
  Status written = replay::write_maybe_gzip(out, replay::kernel_tuner_cache_to_json_text(*cache));
  if (!written.ok()) {
    std::cerr << "autotune-loop history: --kernel-tuner-cache: " << written.message() << "\n";
    return kExitFailed;
  }
  std::size_t ok = 0;
  for (const auto& r : cache->records) ok += r.outcome == Outcome::kOk;
  std::cout << "wrote " << o.kernel_tuner_cache << ": " << cache->kernel_name << ", " << cache->problem->describe()
            << " on " << cache->device_name << ", " << cache->records.size() << " configurations (" << ok
            << " ok); replay it with --backend replay --replay-file " << o.kernel_tuner_cache << "\n";
  return kExitOk;
}
}  // namespace

CLI::App* add_history_command(CLI::App& app, int& exit_code) {
  auto [sub, o] = add_run_subcommand<HistoryOptions>(app, "history",
      "Summarise a run's history.csv: top configs, outcomes by proposer and by generation, best so far over "
      "evaluations and time.\n  Example: autotune-loop history --results results --top 5");
  sub->add_option("--file", o->file, "a history.csv elsewhere (instead of <results>/history.csv)");
  sub->add_option("--top", o->top, "how many of the fastest configs to list")->check(integer_from_to(1, 100000))->capture_default_str();
  sub->add_flag("--json", o->json, "print one JSON object");
  sub->add_option("--kernel-tuner-cache", o->kernel_tuner_cache,
                  "instead of the summary, write the configurations the run evaluated and their times as a Kernel Tuner "
                  "cache file (.json, or gzip-compressed when the name ends in .gz), replayable with --backend replay "
                  "--replay-file: record a space with --proposer random --retime 0, then convert it");
  sub->add_option("--template", o->template_name,
                  "with --kernel-tuner-cache: the template to write when the run tuned several");
  sub->callback([o, &exit_code] {
    const fs::path path = o->file.empty() ? fs::path(o->results) / kHistoryFileName : fs::path(o->file);
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      std::cerr << "autotune-loop history: " << path.string()
                << " does not exist; run autotune-loop first, or point --results at a run's folder\n";
      exit_code = kExitUsage;
      return;
    }
    auto load = read_history(path);
    if (!load.ok()) {
      std::cerr << "autotune-loop history: " << load.status().message() << "\n";
      exit_code = kExitUsage;
      return;
    }
    if (load->torn_bytes)
      std::cerr << "note: " << path.string() << " ends in a torn row (" << load->torn_bytes
                << " bytes, a run was stopped mid-write); it is left out here and repaired by the next run\n";
    if (!o->kernel_tuner_cache.empty()) {
      exit_code = write_kernel_tuner_cache(load->rows, path, *o);
      return;
    }
    if (!o->template_name.empty()) {
      std::cerr << "autotune-loop history: --template goes with --kernel-tuner-cache\n";
      exit_code = kExitUsage;
      return;
    }
    // The run's last convergence estimate lives in its journal beside history.csv.
    const auto convergence = read_last_convergence(path.parent_path() / kJournalFileName);
    if (o->json) {
      auto j = history_report_json(load->rows, o->top);
      if (convergence)
        j["convergence"] = {{"probability", convergence->probability},
                            {"margin", convergence->margin},
                            {"evaluated", convergence->evaluated}};
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << format_history_report(load->rows, o->top);
      if (convergence) {
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      "\nconvergence: P(best found within %.3g%% of the space's best) = %.2f (the proposer's "
                      "estimate after %lld evaluations)\n",
                      convergence->margin * 100, convergence->probability,
                      static_cast<long long>(convergence->evaluated));
        std::cout << buf;
      }
    }
    exit_code = kExitOk;
  });
  return sub;
}

}  // namespace tilesmith::cli
