#include "cli/export_command.h"

#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/cli_common.h"
#include "cli/run_subcommand.h"
#include "cli/exit_codes.h"
#include "package/package_export.h"
#include "runtime/backend.h"

namespace tilesmith::cli {

CLI::App* add_export_command(CLI::App& app, int& exit_code) {
  // The flags, shared with the callback that runs once they are parsed.
  struct ExportFlags : RunFolderFlags {
    std::string out;
    std::string kernels_dir;
    std::string device;
    bool replace = false;
    bool skip_unfinished = false;
  };
  auto [sub, f] = add_run_subcommand<ExportFlags>(app, "export",
      "Write the winners of a run (one problem, or a --problems set) as a package a program uses through "
      "libtilesmith_gemm: tuned.json, the kernel sources and compiled binaries for the tuned GPU's architecture "
      "(docs/package.md). Needs no GPU.\n  Example: autotune-loop export --results results --out llama_pkg");
  sub->add_option("--out", f->out, "the package folder to write")->required();
  sub->add_option("--kernels-dir", f->kernels_dir,
                  "the templates the run was tuned with, when not the built-in ones (NAME.hip + NAME.json)");
  sub->add_option("--device", f->device,
                  "only entries whose device fingerprint contains this text (when best_config.json holds several "
                  "devices' results)");
  sub->add_flag("--replace", f->replace,
                "replace the package at --out: only one an earlier export wrote, unchanged since (its manifest.json); "
                "never the results folder or a folder holding it");
  sub->add_flag("--skip-unfinished", f->skip_unfinished,
                "a problem set's problems without a winner yet (a run stopped early) are left out and named, instead "
                "of refusing the export; the library runs the vendor for them");
  sub->callback([f, &exit_code] {
    auto fail = [&](int code, const std::string& msg) {
      std::cerr << "autotune-loop export: " << msg << "\n";
      exit_code = code;
    };
    auto lib = load_templates(f->kernels_dir);
    if (!lib.ok()) return fail(kExitUsage, lib.status().message());
    ExportOptions o;
    o.results_dir = f->results;
    o.out_dir = f->out;
    o.device_filter = f->device;
    o.replace = f->replace;
    o.skip_unfinished = f->skip_unfinished;
    // Before anything else: a refused --out needs no compiler to say so.
    if (Status st = check_export_destination(o); !st.ok()) return fail(kExitUsage, st.message());
    // The compiler follows the device the winners were measured on.
    auto problems = collect_export_problems(o);
    if (!problems.ok()) return fail(kExitUsage, problems.status().message());
    const std::string backend_name = problems->front().winner.device.value("backend", "cuda");
    auto backend = make_backend(backend_name);
    if (!backend.ok()) return fail(kExitUsage, backend.status().message());
    auto compiler = (*backend)->compiler();
    if (!compiler.ok())
      return fail(kExitNoDevice, backend_name + " compiler unavailable: " + compiler.status().message());
    auto report = export_package(o, *lib, **compiler);
    if (!report.ok()) return fail(kExitUsage, report.status().message());
    for (const auto& n : report->notes) std::cout << "note: " << n << "\n";
    std::cout << std::left << std::setw(28) << "problem" << std::setw(30) << "shape" << std::setw(18) << "template"
              << std::setw(18) << "kernel" << std::right << std::setw(10) << "ours ms" << std::setw(12) << "vendor ms"
              << "  runs\n";
    std::size_t on_vendor = 0;
    for (const auto& p : report->problems) {
      const auto& w = p.winner;
      std::cout << std::left << std::setw(28) << p.name << std::setw(30) << w.problem.describe() << std::setw(18)
                << w.template_name << std::setw(18);
      std::string kernel;
      for (const auto& k : report->tuned["problems"])
        if (k["name"] == p.name) kernel = k["kernel"].get<std::string>();
      std::cout << kernel;
      const auto ms = [](double v) {
        std::ostringstream s;
        s << std::fixed << std::setprecision(4) << v;
        return s.str();
      };
      // What libtilesmith_gemm will run for it: the one rule (analysis/vendor_rule.h).
      std::string runs = "kernel";
      if (!p.vs_vendor.runs_tuned()) {
        ++on_vendor;
        runs = p.vs_vendor.verdict == analysis::VendorVerdict::kWithinNoise ? "vendor (within noise)"
                                                                            : "vendor (vendor faster)";
      }
      std::cout << std::right << std::setw(10) << ms(w.metrics.value("median_ms", 0.0)) << std::setw(12)
                << (w.vendor_median_ms ? ms(*w.vendor_median_ms) : std::string("-")) << "  " << runs << "\n";
    }
    if (on_vendor)
      std::cout << on_vendor << " of " << report->problems.size()
                << " problem(s) will run on the vendor library: their tuned kernel was not faster than the vendor's "
                   "by more than the noise (docs/gemm-library.md)\n";
    std::cout << "package -> " << f->out << " (" << report->problems.size() << " problem(s), " << report->kernels.size()
              << " kernel binar" << (report->kernels.size() == 1 ? "y" : "ies") << " for "
              << report->tuned["device"]["arch"].get<std::string>() << ")\n";
    exit_code = kExitOk;
  });
  return sub;
}

}  // namespace tilesmith::cli
