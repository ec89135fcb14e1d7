#pragma once
// The morning report as one self-contained HTML file: Chart.js inlined (from Debian's
// libjs-chart.js), the run's data embedded as JSON (report/run_report_data.h), nothing
// fetched when the page opens. Sections: summary, convergence, every candidate, clocks and
// power, sensitivity, roofline, where the time went, LLM, top-N (docs/report.md).
// After drawing, the page records what it drew in <body data-report-check="...">
// (charts, and how many non-blank pixels each canvas holds) for the browser test.

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace tilesmith {

// Where Debian's libjs-chart.js puts the UMD build the page inlines.
inline constexpr const char* kDebianChartJs = "/usr/share/javascript/chart.js/chart.min.js";

// The chart library's source from `path` (empty: kDebianChartJs). not_found with what to
// install when it is missing.
Result<std::string> load_chart_library(const std::filesystem::path& path = {});

// The whole page. `chart_js` is the library's source, inlined verbatim.
std::string render_report_page(const nlohmann::json& data, const std::string& chart_js);

}  // namespace tilesmith
