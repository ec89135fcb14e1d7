// `autotune-loop report` end to end: a replay run's results become one HTML page that a
// real browser (Debian's headless chromium) opens with no console error and no request,
// with every chart drawn (non-blank canvas pixels, counted by the page after drawing); a
// screenshot is kept under the build tree (Testing/report/). The data side copes with old
// schema versions, a damaged row, a torn last row and a missing chart library.

#include <fstream>
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

struct BrowserView {
  json check;                     // what the page says it drew
  std::vector<std::string> console;  // console messages (errors, warnings, logs)
};

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

TEST(Report, PageOpensOfflineInAHeadlessBrowserWithEveryChartDrawn) {
  REQUIRE_RECORDING();
  ASSERT_FALSE(chromium().empty()) << "the report test needs Debian's chromium (scripts/test.sh installs it)";
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
  std::printf("screenshot: %s\n", png.c_str());
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
  std::string v1 = history_header_line(1);
  for (HistoryRow row : load->rows) {
    row.schema_version = 1;
    v1 += history_row_line(row);
  }
  const fs::path old_dir = dir / "v1";
  fs::create_directories(old_dir);
  std::ofstream(old_dir / "history.csv", std::ios::binary) << v1;
  auto old = collect_report_data({old_dir, {}, 5});
  ASSERT_TRUE(old.ok()) << old.status().to_string();
  EXPECT_EQ(old->data["history_schema_version"], 1);
  EXPECT_EQ(old->data["evaluated"].get<std::size_t>(), load->rows.size());
  EXPECT_EQ(old->data["problem"]["c_dtype"], "fp32");

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
  auto load = read_history(results / "history.csv");
  ASSERT_TRUE(load.ok());
  std::string text = history_header_line();
  double compile_ms = 0;
  for (HistoryRow row : load->rows) {
    row.backend = "cuda";
    if (row.evaluated() && row.compile_ms && !row.compile_cached.value_or(false)) compile_ms += *row.compile_ms;
    text += history_row_line(row);
  }
  std::ofstream(results / "history.csv", std::ios::binary | std::ios::trunc) << text;
  auto measured = collect_report_data({results, {}, 20});
  ASSERT_TRUE(measured.ok());
  EXPECT_NEAR(measured->data["time"]["compile_s"].get<double>(), compile_ms / 1e3, 1e-9);
  EXPECT_EQ(measured->data["time"]["recorded_compile_s"].get<double>(), 0.0);
}

}  // namespace
}  // namespace tilesmith
