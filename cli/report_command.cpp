#include "cli/report_command.h"

#include <iostream>
#include <memory>

#include "base/files.h"
#include "cli/cli_common.h"
#include "cli/run_subcommand.h"
#include "cli/exit_codes.h"
#include "cli/flag_checks.h"
#include "report/report_page.h"
#include "report/run_report_data.h"

namespace tilesmith::cli {
namespace fs = std::filesystem;

CLI::App* add_report_command(CLI::App& app, int& exit_code) {
  // The flags, shared with the callback that runs once they are parsed.
  struct ReportOptions : RunFolderFlags {
    std::string out;
    std::string bench;
    std::string chart_js;
    std::size_t top = 20;
  };
  auto [sub, o] = add_run_subcommand<ReportOptions>(app, "report",
      "Write one self-contained HTML page about a run (summary, convergence, every candidate, clocks and "
      "power, sensitivity, roofline, time, LLM, top configurations); it opens offline.\n"
      "  Example: autotune-loop report --results results --out report.html");
  sub->add_option("--out", o->out, "the page to write (default: <results>/report.html)");
  sub->add_option("--bench", o->bench,
                  "bench-best --json output to fold in (default: <results>/bench-best.json when present)");
  sub->add_option("--chart-js", o->chart_js, "Chart.js UMD file to inline (default: Debian libjs-chart.js's)");
  sub->add_option("--top", o->top, "rows of the top-configurations table")->check(integer_from_to(1, 1000))->capture_default_str();
  sub->callback([o, &exit_code] {
    auto lib = load_chart_library(o->chart_js);
    if (!lib.ok()) {
      std::cerr << "autotune-loop report: " << lib.status().message() << "\n";
      exit_code = kExitUsage;
      return;
    }
    ReportSources src{o->results, o->bench, o->top};
    auto data = collect_report_data(src);
    if (!data.ok()) {
      std::cerr << "autotune-loop report: " << data.status().message() << "\n";
      exit_code = kExitUsage;
      return;
    }
    for (const auto& w : data->warnings) std::cerr << "note: " << w << "\n";
    const fs::path out = o->out.empty() ? fs::path(o->results) / "report.html" : fs::path(o->out);
    Status st = write_file_atomic(out, render_report_page(data->data, *lib));
    if (!st.ok()) {
      std::cerr << "autotune-loop report: " << st.message() << "\n";
      exit_code = kExitUsage;
      return;
    }
    std::cout << "report -> " << out.string() << " (" << data->data.value("evaluated", 0) << " candidates)\n";
    exit_code = kExitOk;
  });
  return sub;
}

}  // namespace tilesmith::cli
