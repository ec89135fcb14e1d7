// `autotune-loop report` end to end: a replay run's results become one HTML page that a
// real browser (Debian's headless chromium) opens with no console error and no request,
// with every chart drawn (non-blank canvas pixels, counted by the page after drawing); a
// screenshot is kept under the build tree (Testing/report/). The data side copes with old
// schema versions, a damaged row, a torn last row and a missing chart library. Clocks,
// power and throttling are drawn from a history given NVML-like readings, and a history
// without them says why in one sentence.

#include <fstream>
#include <map>
#include <regex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/run_report_data.h"
#include "tests/cli/process.h"
#include "tuner/records/history.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using namespace tilesmith::testing;

fs::path chromium() {
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (fs::exists(c)) return c;
  return {};
}

// A replay run of `evals` candidates in `results`.
void tune(const fs::path& dir, const fs::path& results, int evals) {
  auto r = run_process({autotune_loop_exe().string(), "--backend", "replay", "--replay-file", rtx3090_recording().string(),
                        "--results", results.string(), "--max-evals", std::to_string(evals), "--progress", "none"},
                       dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// Writes the rows of the run's history.csv in `results`, with `change` applied to each, as
// `to` in the columns of schema `version`.
template <typename Change>
void rewrite_history(const fs::path& results, Change change, const fs::path& to = {},
                     int version = kHistorySchemaVersion) {
  auto load = read_history(results / "history.csv");
  ASSERT_TRUE(load.ok()) << load.status().to_string();
  std::string text = history_header_line(version);
  for (HistoryRow row : load->rows) {
    change(row);
    row.schema_version = version;
    text += history_row_line(row);
  }
  std::ofstream(to.empty() ? results / "history.csv" : to, std::ios::binary | std::ios::trunc) << text;
}

// The report's data for the run in `results`; null, with the failure recorded, when it
// cannot be gathered.
json report_data(const fs::path& results) {
  auto d = collect_report_data({results, {}, 20});
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  return d.ok() ? d->data : json();
}

// `autotune-loop report` on `results` into `page`.
void write_report(const fs::path& dir, const fs::path& results, const fs::path& page) {
  auto r = run_process({autotune_loop_exe().string(), "report", "--results", results.string(), "--out", page.string()}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

struct BrowserView {
  json check;                     // what the page says it drew
  std::vector<std::string> console;  // console messages (errors, warnings, logs)
  std::string dom;                // the page's DOM after its scripts ran
};

// The chart the page drew on canvas `id`; null when it drew none there.
json drawn_chart(const BrowserView& v, const std::string& id) {
  for (const json& c : v.check["drawn"])
    if (c["id"] == id) return c;
  return nullptr;
}

// The text of the table cell after the one holding `label` (a kv row); "" when absent.
std::string cell_after(const std::string& dom, const std::string& label) {
  std::smatch m;
  return std::regex_search(dom, m, std::regex("<td>" + label + "</td><td>([^<]*)")) ? m[1].str() : std::string();
}

// How many points the dataset labelled `label` of a drawn chart holds; -1 when it has none.
int series_points(const json& chart, const std::string& label) {
  for (const json& s : chart["series"])
    if (s[0] == label) return s[1].get<int>();
  return -1;
}

// Opens the page in headless chromium, returns the page's own record of what it drew and
// every console message; keeps a screenshot at `png`.
BrowserView open_in_browser(const fs::path& page, const fs::path& scratch, const fs::path& png) {
  BrowserView v;
  const std::vector<std::string> common = {
      chromium().string(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync", "--enable-logging=stderr",
      "--v=0", "--user-data-dir=" + (scratch / "profile").string(), "--window-size=1280,7000"};
  auto args = common;
  args.insert(args.end(), {"--dump-dom", "file://" + fs::absolute(page).string()});
  auto r = run_process(args, scratch, {}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  v.dom = r.out;
  std::smatch m;
  if (std::regex_search(r.out, m, std::regex("data-report-check=\"([^\"]*)\""))) {
    std::string s = m[1];
    for (auto [from, to] : {std::pair<std::string, std::string>{"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}})
      for (std::size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
    v.check = json::parse(s, nullptr, false);
  }
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);)
    if (line.find(":CONSOLE") != std::string::npos) v.console.push_back(line);
  fs::create_directories(png.parent_path());
  auto shot = common;
  shot.insert(shot.end(), {"--screenshot=" + png.string(), "file://" + fs::absolute(page).string()});
  auto s = run_process(shot, scratch, {}, 120);
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_TRUE(fs::exists(png) && fs::file_size(png) > 10000) << "no screenshot at " << png;
  return v;
}

// A test that opens a page: it needs the recording for its run, and the browser.
class ReportInBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_RECORDING();
    ASSERT_FALSE(chromium().empty()) << "the report test needs Debian's chromium (scripts/test.sh installs it)";
  }
};

TEST_F(ReportInBrowser, PageOpensOfflineWithEveryChartDrawn) {
  const fs::path dir = fresh_dir("report_browser");
  const fs::path results = dir / "results";
  tune(dir, results, 40);
  const fs::path page = dir / "report.html";
  auto r = run_process({autotune_loop_exe().string(), "report", "--results", results.string(), "--out", page.string()}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "40 candidates")) << r.out;
  const std::string html = slurp(page);
  EXPECT_TRUE(contains(html, "Chart.js v")) << "the chart library is inlined";
  EXPECT_FALSE(std::regex_search(html, std::regex("<(script|link|img)[^>]+(src|href)=", std::regex::icase)))
      << "nothing is loaded from elsewhere";

  const fs::path png = binary_dir() / "Testing" / "report" / "replay_report.png";
  BrowserView v = open_in_browser(page, dir, png);
  ASSERT_TRUE(v.check.is_object()) << "the page did not finish drawing (no data-report-check)";
  EXPECT_TRUE(v.console.empty()) << "console: " << v.console.front();
  EXPECT_TRUE(v.check["resources"].empty()) << "the page fetched " << v.check["resources"].dump();
  // Convergence (2), candidates, at least two sensitivity charts, roofline, time.
  EXPECT_GE(v.check["charts"].get<int>(), 7) << v.check.dump();
  for (const json& c : v.check["drawn"]) {
    EXPECT_GT(c["pixels"].get<int>(), 2000) << c.dump() << ": a blank canvas";
    EXPECT_GT(c["points"].get<int>(), 0) << c.dump() << ": a chart without data";
  }
  // A replayed run read no device: the clocks section says so instead of an empty chart,
  // and no convergence point is marked throttled.
  EXPECT_TRUE(drawn_chart(v, "power-chart").is_null()) << v.check.dump();
  EXPECT_TRUE(contains(v.dom, "<div id=\"power-body\"><p class=\"muted\">No clock or power readings in this history: it was replayed"))
      << "the section's sentence, drawn";
  EXPECT_FALSE(contains(v.dom, "id=\"power-note\"")) << "the chart's note went with the chart";
  EXPECT_EQ(series_points(drawn_chart(v, "conv-evals"), "throttled"), -1);
  EXPECT_TRUE(v.check["sections"].contains("power")) << v.check.dump();
  std::printf("screenshot: %s\n", png.c_str());
}

// NVML-like readings for the k-th measured row: clocks falling and power rising with k,
// and a mix of slowdowns (throttled), clock events that are not slowdowns, and none.
void give_readings(HistoryRow& row, int k) {
  row.sm_clock_mhz = 1980 - 15 * (k % 7);
  row.mem_clock_mhz = 2619;
  row.power_w = 300 + 5 * k;
  row.max_temp_c = 50 + k % 20;
  if (k == 0) row.throttle_reasons = "hw_slowdown";  // the first step of every line is throttled
  else if (k % 4 == 1) row.throttle_reasons = "sw_power_cap";
  else if (k % 6 == 3) row.throttle_reasons = "sw_power_cap+hw_thermal";
  else if (k % 5 == 2) row.throttle_reasons = "gpu_idle+applications_clocks";
  else row.throttle_reasons = "none";
  if (k % 3 == 0) row.joules_per_launch = 0.25 + 0.01 * k;
}

TEST_F(ReportInBrowser, ClocksPowerAndThrottlingAreGatheredAndDrawn) {
  const fs::path dir = fresh_dir("report_power");
  const fs::path results = dir / "results";
  tune(dir, results, 40);
  // The replayed rows as if a GPU with NVML had measured the ok ones (as a real run does:
  // failed candidates are not timed, so they carry no readings).
  int k = 0;
  rewrite_history(results, [&](HistoryRow& row) {
    row.backend = "cuda";
    if (row.evaluated() && row.ok()) give_readings(row, k++);
  });
  const int measured = k;
  ASSERT_GE(measured, 12) << "too few valid candidates for every kind of reading";

  // What the data should say, worked out here from the same readings.
  int throttled = 0, power_cap = 0, thermal = 0, slowdown = 0, idle = 0, with_joules = 0;
  for (int i = 0; i < measured; ++i) {
    HistoryRow r;
    give_readings(r, i);
    const bool cap = contains(r.throttle_reasons, "sw_power_cap"), hot = contains(r.throttle_reasons, "hw_thermal"),
               slow = r.throttle_reasons == "hw_slowdown";
    throttled += cap || hot || slow;
    power_cap += cap;
    thermal += hot;
    slowdown += slow;
    idle += contains(r.throttle_reasons, "gpu_idle");
    with_joules += r.joules_per_launch.has_value();
  }
  const json data = report_data(results);
  ASSERT_TRUE(data.is_object());
  const json& t = data["telemetry"];
  EXPECT_EQ(t["measured_rows"], measured) << t.dump();
  EXPECT_EQ(t["throttled_rows"], throttled) << t.dump();
  EXPECT_EQ(t["reasons"], json({{"sw_power_cap", power_cap}, {"hw_thermal", thermal}, {"hw_slowdown", slowdown}})) << t.dump();
  EXPECT_EQ(t["other_reasons"], json({{"gpu_idle", idle}, {"applications_clocks", idle}})) << "not slowdowns: " << t.dump();
  EXPECT_EQ(t["sm_clock_mhz"], json({{"min", 1980 - 15 * 6}, {"max", 1980}, {"rows", measured}})) << t.dump();
  EXPECT_EQ(t["power_w"]["max"], 300 + 5 * (measured - 1)) << t.dump();
  EXPECT_EQ(t["mem_clock_mhz"]["min"], 2619) << t.dump();
  EXPECT_EQ(t["joules_per_launch"]["rows"], with_joules) << t.dump();
  EXPECT_DOUBLE_EQ(t["joules_per_launch"]["min"].get<double>(), 0.25);
  // Per evaluation: the readings beside the other columns, in history order, and the
  // slowdown reasons only ("" for a measured row that was not throttled, null unmeasured).
  const json& c = data["candidates"];
  int seen = 0, marked_steps = 0;
  double best = 0;
  std::map<std::string, double> best_by;
  for (std::size_t i = 0; i < c["outcome"].size(); ++i) {
    if (c["outcome"][i] != "ok") {
      EXPECT_TRUE(c["sm_clock_mhz"][i].is_null() && c["throttled"][i].is_null()) << "row " << c["row"][i];
      continue;
    }
    HistoryRow want;
    give_readings(want, seen++);
    EXPECT_EQ(c["sm_clock_mhz"][i], *want.sm_clock_mhz);
    EXPECT_EQ(c["power_w"][i], *want.power_w);
    EXPECT_EQ(c["max_temp_c"][i], *want.max_temp_c);
    const std::string reasons = c["throttled"][i].get<std::string>();
    EXPECT_EQ(reasons, want.throttle_reasons == "gpu_idle+applications_clocks" || want.throttle_reasons == "none"
                           ? std::string()
                           : want.throttle_reasons)
        << "row " << c["row"][i];
    // The convergence charts mark the steps (overall or the proposer's) a throttled row set.
    const double tf = c["tflops"][i].get<double>();
    double& mine = best_by[c["proposer"][i].get<std::string>()];
    const bool step = tf > best || tf > mine;
    best = std::max(best, tf);
    mine = std::max(mine, tf);
    marked_steps += step && !reasons.empty();
  }
  EXPECT_EQ(seen, measured);
  ASSERT_GE(marked_steps, 1) << "the first valid row is throttled, and always a step";

  const fs::path page = dir / "report.html";
  write_report(dir, results, page);
  BrowserView v = open_in_browser(page, dir, binary_dir() / "Testing" / "report" / "power_report.png");
  ASSERT_TRUE(v.check.is_object()) << "the page did not finish drawing (no data-report-check)";
  EXPECT_TRUE(v.console.empty()) << "console: " << v.console.front();
  EXPECT_TRUE(contains(v.dom, "id=\"power-note\""));
  const json power = drawn_chart(v, "power-chart");
  ASSERT_TRUE(power.is_object()) << "no clocks chart: " << v.check.dump();
  EXPECT_GT(power["pixels"].get<int>(), 2000) << power.dump() << ": a blank canvas";
  EXPECT_EQ(series_points(power, "SM clock (MHz)"), measured - throttled) << power.dump();
  EXPECT_EQ(series_points(power, "SM clock, throttled"), throttled) << power.dump();
  EXPECT_EQ(series_points(power, "power (W)"), measured) << power.dump();
  EXPECT_EQ(series_points(power, "temperature (°C)"), measured) << power.dump();
  for (const char* id : {"conv-evals", "conv-time"})
    EXPECT_EQ(series_points(drawn_chart(v, id), "throttled"), marked_steps) << drawn_chart(v, id).dump();
  // The text beside the chart, read from its table cells (the DOM also holds the page's
  // data, where the same words stand in JSON).
  const std::string throttle_cell = cell_after(v.dom, "throttled"), events_cell = cell_after(v.dom, "other clock events");
  for (const std::string& words : {std::to_string(throttled) + " of them (", "sw_power_cap " + std::to_string(power_cap),
                                   "hw_thermal " + std::to_string(thermal), "hw_slowdown " + std::to_string(slowdown)})
    EXPECT_TRUE(contains(throttle_cell, words)) << "no '" << words << "' in '" << throttle_cell << "'";
  EXPECT_TRUE(contains(events_cell, "gpu_idle " + std::to_string(idle))) << events_cell;
}

// Without readings the data carries the reason in one sentence (and no columns of nulls):
// a history written before the telemetry columns, and one measured without NVML.
TEST(Report, HistoriesWithoutReadingsSaySoInOneSentence) {
  REQUIRE_RECORDING();
  const fs::path dir = fresh_dir("report_no_power");
  const fs::path results = dir / "results";
  tune(dir, results, 8);
  json replayed = report_data(results);
  EXPECT_EQ(replayed["telemetry"]["measured_rows"], 0);
  EXPECT_TRUE(contains(replayed["telemetry"].value("none", ""), "replayed from recorded measurements"))
      << replayed["telemetry"].dump();
  EXPECT_FALSE(replayed["candidates"].contains("throttled"));

  rewrite_history(results, [](HistoryRow& row) { row.backend = "cuda"; });
  EXPECT_EQ(report_data(results)["telemetry"]["none"],
            "No clock or power readings in this history: it was recorded without NVML (no libnvidia-ml.so.1 on "
            "the machine, or a GPU without it).");

  rewrite_history(results, [](HistoryRow&) {}, {}, 4);
  json old = report_data(results);
  EXPECT_EQ(old["telemetry"]["measured_rows"], 0);
  EXPECT_TRUE(contains(old["telemetry"].value("none", ""), "before history.csv had telemetry columns (schema version 4)"))
      << old["telemetry"].dump();
}

TEST(Report, OldSchemasDamagedRowsATornTailAndAMissingLibraryAreHandled) {
  REQUIRE_RECORDING();
  const fs::path dir = fresh_dir("report_damaged");
  const fs::path results = dir / "results";
  tune(dir, results, 24);
  const fs::path history = results / "history.csv";
  auto load = read_history(history);
  ASSERT_TRUE(load.ok());

  // Version 1 (no device, no c_dtype): the same rows in the old columns.
  const fs::path old_dir = dir / "v1";
  fs::create_directories(old_dir);
  rewrite_history(results, [](HistoryRow&) {}, old_dir / "history.csv", 1);
  auto old = collect_report_data({old_dir, {}, 5});
  ASSERT_TRUE(old.ok()) << old.status().to_string();
  EXPECT_EQ(old->data["history_schema_version"], 1);
  EXPECT_EQ(old->data["evaluated"].get<std::size_t>(), load->rows.size());
  EXPECT_EQ(old->data["problem"]["c_dtype"], "fp32");
  EXPECT_TRUE(contains(old->data["telemetry"]["none"].get<std::string>(), "(schema version 1)"));

  // A damaged row in the middle and a torn last row: reported, the rest kept.
  std::string text = slurp(history);
  const std::size_t third = text.find('\n', text.find('\n', text.find('\n') + 1) + 1) + 1;
  text.insert(third, "3,this,is,not,a,row\n");
  text += "3,run,1,99,2026-";
  std::ofstream(history, std::ios::binary | std::ios::trunc) << text;
  auto damaged = collect_report_data({results, {}, 5});
  ASSERT_TRUE(damaged.ok()) << damaged.status().to_string();
  EXPECT_EQ(damaged->data["evaluated"].get<std::size_t>(), load->rows.size());
  std::string warnings = damaged->data["warnings"].dump();
  EXPECT_TRUE(contains(warnings, "1 damaged row(s) skipped (line 4)")) << warnings;
  EXPECT_TRUE(contains(warnings, "torn row")) << warnings;
  EXPECT_LE(damaged->data["top"].size(), 5u);
  // The fastest first, and each is a real row's candidate.
  const json& c = damaged->data["candidates"];
  double last = 1e300;
  for (const json& i : damaged->data["top"]) {
    double t = c["tflops"][i.get<std::size_t>()].get<double>();
    EXPECT_LE(t, last);
    last = t;
    EXPECT_FALSE(c["config"][i.get<std::size_t>()].is_null());
  }
  auto page = run_process({autotune_loop_exe().string(), "report", "--results", results.string()}, dir);
  EXPECT_EQ(page.exit_code, 0) << page.err;
  EXPECT_TRUE(contains(page.err, "damaged row(s) skipped")) << page.err;
  EXPECT_TRUE(fs::exists(results / "report.html"));

  // No chart library: a clear message, nothing written.
  auto missing = run_process({autotune_loop_exe().string(), "report", "--results", results.string(), "--chart-js",
                              (dir / "none.js").string(), "--out", (dir / "x.html").string()},
                             dir);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(contains(missing.err, "libjs-chart.js")) << missing.err;
  EXPECT_FALSE(fs::exists(dir / "x.html"));
  // Not a results folder.
  auto absent = run_process({autotune_loop_exe().string(), "report", "--results", (dir / "absent").string()}, dir);
  EXPECT_EQ(absent.exit_code, 2);
  EXPECT_TRUE(contains(absent.err, "does not exist")) << absent.err;
}

// 100k candidates (a long night on a fast proposer): the data stays small enough to embed
// and is gathered quickly.
TEST(Report, LargeRunsAreAggregatedBeforeEmbedding) {
  REQUIRE_RECORDING();
  const fs::path dir = fresh_dir("report_large");
  const fs::path results = dir / "results";
  tune(dir, results, 8);
  auto load = read_history(results / "history.csv");
  ASSERT_TRUE(load.ok());
  std::string text = history_header_line();
  for (int i = 0; i < 100000; ++i) {
    HistoryRow row = load->rows[std::size_t(i) % load->rows.size()];
    row.row = i + 1;
    row.generation = i / 64;
    if (row.tflops) row.tflops = *row.tflops * (1.0 + double(i % 1000) / 1e4);
    text += history_row_line(row);
  }
  std::ofstream(results / "history.csv", std::ios::binary | std::ios::trunc) << text;
  const auto t0 = std::chrono::steady_clock::now();
  auto data = collect_report_data({results, {}, 20});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(data.ok()) << data.status().to_string();
  EXPECT_EQ(data->data["evaluated"].get<std::size_t>(), 100000u);
  std::size_t configs = 0;
  for (const json& c : data->data["candidates"]["config"]) configs += !c.is_null();
  EXPECT_EQ(configs, 400u);
  const std::size_t bytes = data->data.dump().size();
  std::printf("100k rows: gathered in %.2f s, %.1f MB of page data\n", s, bytes / 1e6);
  EXPECT_LT(bytes, 40u << 20);
}

// A replayed run spends no compile time: the recorded compile times its rows carry are
// shown as recorded on the measuring GPU, not counted as this run's (a 2 s run once showed
// 20 s of compiling). Rows measured on a GPU still count theirs.
TEST(Report, ReplayedCompileTimesAreNotCountedAsSpent) {
  REQUIRE_RECORDING();
  const fs::path dir = fresh_dir("report_replay_time");
  const fs::path results = dir / "results";
  tune(dir, results, 16);
  auto replayed = collect_report_data({results, {}, 20});
  ASSERT_TRUE(replayed.ok()) << replayed.status().to_string();
  const json& t = replayed->data["time"];
  EXPECT_EQ(t["compile_s"].get<double>(), 0.0);
  EXPECT_EQ(t["compiled"].get<int>(), 0);
  EXPECT_GT(t["recorded_compile_s"].get<double>(), 0.0) << "the recording's compile times are shown as recorded";

  // The same rows as if a GPU had measured them: their compile time is this run's.
  double compile_ms = 0;
  rewrite_history(results, [&](HistoryRow& row) {
    row.backend = "cuda";
    if (row.evaluated() && row.compile_ms && !row.compile_cached.value_or(false)) compile_ms += *row.compile_ms;
  });
  auto measured = collect_report_data({results, {}, 20});
  ASSERT_TRUE(measured.ok());
  EXPECT_NEAR(measured->data["time"]["compile_s"].get<double>(), compile_ms / 1e3, 1e-9);
  EXPECT_EQ(measured->data["time"]["recorded_compile_s"].get<double>(), 0.0);
}

}  // namespace
}  // namespace tilesmith
