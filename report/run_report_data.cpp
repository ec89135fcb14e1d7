#include "report/run_report_data.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/files.h"
#include "registry/device_facts.h"
#include "registry/problem.h"
#include "runtime/telemetry.h"
#include "tuner/records/csv.h"
#include "tuner/records/history.h"
#include "tuner/records/history_report.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

// Parameters are spelled out for this many of the fastest candidates; the rest of a huge
// run keeps its numbers (each candidate is a point in the charts) but not its config text.
constexpr std::size_t kConfigsKept = 400;

struct Reader {
  ReportData out;
  void warn(std::string w) { out.warnings.push_back(std::move(w)); }
};

// Every JSON line of a .jsonl file; lines that are not JSON are counted, not fatal.
std::vector<json> read_jsonl(const fs::path& path, Reader& r) {
  std::vector<json> events;
  std::ifstream in(path, std::ios::binary);
  if (!in) return events;
  std::string line;
  int bad = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) ++bad;
    else events.push_back(std::move(j));
  }
  if (bad) r.warn(path.filename().string() + ": " + std::to_string(bad) + " line(s) that are not JSON were skipped");
  return events;
}

// history.csv, leniently: the header must be one of tilesmith's schemas, a row that does
// not parse is skipped and counted (with its line), and a torn last row is left out.
Result<std::vector<HistoryRow>> read_rows(const fs::path& path, Reader& r, int& version) {
  TS_ASSIGN_OR_RETURN(std::string text, read_file(path));
  auto parsed = csv::parse(text);
  std::vector<csv::Record> records;
  if (parsed.ok()) {
    records = std::move(parsed->records);
    if (parsed->torn_tail) r.warn("history.csv ends in a torn row (a run still writing, or stopped mid-write): left out");
  } else {
    // A malformed record stops the strict parser; take the lines one by one instead.
    r.warn("history.csv: " + parsed.status().message() + "; reading it line by line");
    std::istringstream lines(text);
    std::string line;
    std::size_t n = 0;
    while (std::getline(lines, line)) {
      ++n;
      auto one = csv::parse(line + "\n");
      if (one.ok() && !one->records.empty()) {
        one->records[0].line = n;
        records.push_back(std::move(one->records[0]));
      }
    }
  }
  if (records.empty()) return Status::parse_error(path.string() + " is empty: no header row");
  version = 0;
  for (int v = kHistoryOldestSchemaVersion; v <= kHistorySchemaVersion; ++v)
    if (records.front().fields == history_columns(v)) version = v;
  if (version == 0)
    return Status::parse_error(path.string() + ": the header is not tilesmith's history schema (versions " +
                               std::to_string(kHistoryOldestSchemaVersion) + " to " +
                               std::to_string(kHistorySchemaVersion) + " are read)");
  std::vector<HistoryRow> rows;
  std::vector<std::size_t> skipped;
  for (std::size_t i = 1; i < records.size(); ++i) {
    auto row = history_row_from_fields(records[i].fields, version);
    if (!row.ok()) {
      skipped.push_back(records[i].line);
      continue;
    }
    if (row->c_dtype.empty()) row->c_dtype = row->dtype;
    rows.push_back(std::move(row).value());
  }
  if (!skipped.empty()) {
    std::string lines;
    for (std::size_t i = 0; i < skipped.size() && i < 8; ++i) lines += (i ? ", " : "") + std::to_string(skipped[i]);
    r.warn("history.csv: " + std::to_string(skipped.size()) + " damaged row(s) skipped (line " + lines +
           (skipped.size() > 8 ? ", ..." : "") + ")");
  }
  return rows;
}

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// Candidates in columns (one array per field), in evaluation order.
json candidate_columns(const std::vector<const HistoryRow*>& evals, double t0, const std::set<std::size_t>& with_config) {
  json c = json::object();
  for (const char* k : {"row", "generation", "session", "proposer", "template", "outcome", "tflops", "median_ms",
                        "p20_ms", "p80_ms", "gbps", "compile_ms", "compile_cached", "eval_ms", "t", "rel_error",
                        "max_error", "config", "message"})
    c[k] = json::array();
  for (std::size_t i = 0; i < evals.size(); ++i) {
    const HistoryRow& r = *evals[i];
    auto t = parse_timestamp(r.timestamp);
    c["row"].push_back(r.row);
    c["generation"].push_back(r.generation);
    c["session"].push_back(r.session);
    c["proposer"].push_back(r.proposer);
    c["template"].push_back(r.template_name);
    c["outcome"].push_back(outcome_name(r.outcome));
    c["tflops"].push_back(r.ok() ? opt(r.tflops) : json(nullptr));
    c["median_ms"].push_back(opt(r.median_ms));
    c["p20_ms"].push_back(opt(r.p20_ms));
    c["p80_ms"].push_back(opt(r.p80_ms));
    c["gbps"].push_back(opt(r.gbps));
    c["compile_ms"].push_back(opt(r.compile_ms));
    c["compile_cached"].push_back(r.compile_cached ? json(*r.compile_cached) : json(nullptr));
    c["eval_ms"].push_back(opt(r.eval_ms));
    c["t"].push_back(t ? json(*t - t0) : json(nullptr));
    c["rel_error"].push_back(opt(r.rel_error_norm));
    c["max_error"].push_back(opt(r.max_abs_error));
    c["config"].push_back(with_config.count(i) ? json(r.config) : json(nullptr));
    c["message"].push_back(r.ok() ? std::string() : csv::sanitize_text(r.message, 160));
  }
  return c;
}

// Whether the row carries any reading of the device (history schema 5, NVML there).
bool has_telemetry(const HistoryRow& r) {
  return r.sm_clock_mhz || r.mem_clock_mhz || r.power_w || r.max_temp_c || r.joules_per_launch ||
         !r.throttle_reasons.empty();
}

// The row's throttle reasons as NVML's bits; "none" and "" are none. The text was checked
// when the row was read, so a failure here cannot happen and reads as none.
std::uint64_t throttle_bits(const HistoryRow& r) {
  if (r.throttle_reasons.empty() || r.throttle_reasons == "none") return 0;
  auto bits = parse_throttle_reason_names(r.throttle_reasons);
  return bits.ok() ? *bits : 0;
}

// The per-evaluation readings the clocks chart draws, beside the candidate columns.
// `throttled` holds the slowdown reasons ("sw_power_cap"), "" for a row read and not
// throttled, null for a row without readings; the convergence charts mark the first.
void add_telemetry_columns(json& c, const std::vector<const HistoryRow*>& evals) {
  for (const char* k : {"sm_clock_mhz", "power_w", "max_temp_c", "throttled"}) c[k] = json::array();
  for (const HistoryRow* r : evals) {
    c["sm_clock_mhz"].push_back(opt(r->sm_clock_mhz));
    c["power_w"].push_back(opt(r->power_w));
    c["max_temp_c"].push_back(opt(r->max_temp_c));
    c["throttled"].push_back(has_telemetry(*r) ? json(throttle_reason_names(throttle_bits(*r) & throttle::kSlowdown))
                                               : json(nullptr));
  }
}

// Smallest and largest of one telemetry figure over the rows that have it.
struct Range {
  std::optional<double> lo, hi;
  int rows = 0;
  void add(const std::optional<double>& v) {
    if (!v) return;
    lo = std::min(lo.value_or(*v), *v);
    hi = std::max(hi.value_or(*v), *v);
    ++rows;
  }
  json to_json() const { return rows ? json{{"min", *lo}, {"max", *hi}, {"rows", rows}} : json(nullptr); }
};

// One sentence on why a history holds no readings, from what its rows say.
std::string why_no_telemetry(const std::vector<const HistoryRow*>& evals, int version) {
  const std::string lead = "No clock or power readings in this history: ";
  if (version < 5)
    return lead + "it was written before history.csv had telemetry columns (schema version " +
           std::to_string(version) + ").";
  if (evals.empty()) return lead + "no candidate has been measured yet.";
  const bool replayed = std::all_of(evals.begin(), evals.end(), [](auto* r) { return r->backend == "replay"; });
  if (replayed) return lead + "it was replayed from recorded measurements, which carry none.";
  const bool amd = std::any_of(evals.begin(), evals.end(), [](auto* r) { return r->backend == "hip"; });
  if (amd)
    return lead + "it was measured on an AMD GPU without ROCm SMI (no librocm_smi64.so.1, or an older version "
                  "than this history's).";
  return lead + "it was recorded without NVML (no libnvidia-ml.so.1 on the machine, or a GPU without it).";
}

// The clocks-and-power section's figures: how many measured rows, how many throttled and
// by which slowdown reasons (a row counts once per reason), the other clock events seen
// (idle, application clocks: not slowdowns), and each figure's range. A history without
// readings gets measured_rows 0 and the sentence the page shows instead of a chart.
json telemetry_summary(const std::vector<const HistoryRow*>& evals, int version) {
  json reasons = json::object(), other = json::object();
  Range sm, mem, power, temp, joules;
  int measured = 0, throttled = 0;
  for (const HistoryRow* r : evals) {
    if (!has_telemetry(*r)) continue;
    ++measured;
    const std::uint64_t bits = throttle_bits(*r);
    throttled += (bits & throttle::kSlowdown) != 0;
    for (int b = 0; b < 64; ++b) {
      const std::uint64_t bit = std::uint64_t(1) << b;
      if (!(bits & bit)) continue;
      json& counts = bit & throttle::kSlowdown ? reasons : other;
      const std::string name = throttle_reason_names(bit);
      counts[name] = counts.value(name, 0) + 1;
    }
    sm.add(r->sm_clock_mhz);
    mem.add(r->mem_clock_mhz);
    power.add(r->power_w);
    temp.add(r->max_temp_c);
    joules.add(r->joules_per_launch);
  }
  if (!measured) return {{"measured_rows", 0}, {"none", why_no_telemetry(evals, version)}};
  return {{"measured_rows", measured},   {"throttled_rows", throttled},   {"reasons", reasons},
          {"other_reasons", other},      {"sm_clock_mhz", sm.to_json()},  {"mem_clock_mhz", mem.to_json()},
          {"power_w", power.to_json()},  {"max_temp_c", temp.to_json()}, {"joules_per_launch", joules.to_json()}};
}

// Per template and parameter: for each value, the throughputs of its ok candidates
// (five-number summary) and how many failed.
json sensitivity(const std::vector<const HistoryRow*>& evals) {
  struct Cell {
    std::vector<double> tflops;
    int failed = 0;
  };
  std::map<std::string, std::map<std::string, std::map<std::int64_t, Cell>>> cells;
  for (const HistoryRow* r : evals) {
    json cfg = json::parse(r->config, nullptr, false);
    if (!cfg.is_object()) continue;
    for (const auto& [name, value] : cfg.items()) {
      if (!value.is_number_integer()) continue;
      Cell& cell = cells[r->template_name][name][value.get<std::int64_t>()];
      if (r->ok() && r->tflops) cell.tflops.push_back(*r->tflops);
      else ++cell.failed;
    }
  }
  json out = json::object();
  for (auto& [tmpl, params] : cells) {
    json list = json::array();
    for (auto& [name, values] : params) {
      if (values.size() < 2) continue;  // a fixed parameter says nothing
      json p = {{"name", name}, {"values", json::array()}};
      double lo = 1e300, hi = 0;
      for (auto& [v, cell] : values) {
        auto& t = cell.tflops;
        std::sort(t.begin(), t.end());
        auto q = [&](double f) { return t.empty() ? json(nullptr) : json(t[std::size_t(f * double(t.size() - 1) + 0.5)]); };
        p["values"].push_back({{"value", v}, {"ok", t.size()}, {"failed", cell.failed}, {"min", q(0)}, {"q1", q(0.25)},
                               {"median", q(0.5)}, {"q3", q(0.75)}, {"max", q(1)}});
        if (!t.empty()) {
          lo = std::min(lo, t[t.size() / 2]);
          hi = std::max(hi, t.back());
        }
      }
      // How much the knob matters: the spread of the best throughput across its values.
      p["spread_tflops"] = hi > 0 && lo < 1e300 ? hi - lo : 0.0;
      list.push_back(std::move(p));
    }
    std::sort(list.begin(), list.end(),
              [](const json& a, const json& b) { return a["spread_tflops"].get<double>() > b["spread_tflops"].get<double>(); });
    out[tmpl] = std::move(list);
  }
  return out;
}

// The LLM's requests from llm_log.jsonl: count, failures, retries, tokens, time waited.
json llm_summary(const std::vector<json>& log, const std::vector<const HistoryRow*>& evals,
                 const std::vector<HistoryRow>& rows) {
  json s = {{"requests", 0}, {"failed", 0}, {"retried", 0}, {"input_tokens", 0}, {"output_tokens", 0},
            {"latency_ms", 0.0}, {"models", json::array()}};
  std::set<std::string> models;
  for (const json& e : log) {
    s["requests"] = s["requests"].get<int>() + 1;
    const bool ok = e.contains("status") && e["status"].is_number() && e["status"].get<int>() / 100 == 2;
    if (!ok) s["failed"] = s["failed"].get<int>() + 1;
    if (e.value("will_retry", false)) s["retried"] = s["retried"].get<int>() + 1;
    if (e.contains("latency_ms") && e["latency_ms"].is_number()) s["latency_ms"] = s["latency_ms"].get<double>() + e["latency_ms"].get<double>();
    if (e.contains("model") && e["model"].is_string()) models.insert(e["model"].get<std::string>());
    if (e.contains("usage") && e["usage"].is_object()) {
      const json& u = e["usage"];
      auto count = [&](const char* k) { return u.contains(k) && u[k].is_number_integer() ? u[k].get<std::int64_t>() : 0; };
      s["input_tokens"] = s["input_tokens"].get<std::int64_t>() + count("prompt_tokens") + count("input_tokens");
      s["output_tokens"] = s["output_tokens"].get<std::int64_t>() + count("completion_tokens") + count("output_tokens");
    }
  }
  for (const auto& m : models) s["models"].push_back(m);
  // Proposals and evaluations by proposer; an LLM run's fallbacks are the candidates
  // proposed by anything else while the LLM was the chosen proposer.
  json by = json::object();
  for (const HistoryRow& r : rows) {
    json& p = by[r.proposer.empty() ? "?" : r.proposer];
    if (p.is_null()) p = {{"proposed", 0}, {"rejected", 0}, {"evaluated", 0}, {"ok", 0}};
    if (r.evaluated()) {
      p["evaluated"] = p["evaluated"].get<int>() + 1;
      if (r.ok()) p["ok"] = p["ok"].get<int>() + 1;
    } else {
      p["rejected"] = p["rejected"].get<int>() + 1;
    }
    p["proposed"] = p["proposed"].get<int>() + 1;
  }
  s["by_proposer"] = by;
  // The rationale the proposer gave for the fastest candidates.
  std::vector<const HistoryRow*> ranked;
  for (const HistoryRow* r : evals)
    if (r->ok() && r->tflops && !r->rationale.empty()) ranked.push_back(r);
  std::sort(ranked.begin(), ranked.end(), [](auto* a, auto* b) { return *a->tflops > *b->tflops; });
  s["rationales"] = json::array();
  for (std::size_t i = 0; i < ranked.size() && i < 10; ++i)
    s["rationales"].push_back({{"row", ranked[i]->row}, {"proposer", ranked[i]->proposer}, {"tflops", *ranked[i]->tflops},
                               {"config", ranked[i]->config}, {"rationale", csv::sanitize_text(ranked[i]->rationale, 600)}});
  return s;
}

}  // namespace

Result<ReportData> collect_report_data(const ReportSources& src) {
  Reader r;
  const fs::path history = src.results / kHistoryFileName;
  std::error_code ec;
  if (!fs::exists(history, ec))
    return Status::not_found(history.string() + " does not exist; point --results at a run's folder");
  int version = 0;
  TS_ASSIGN_OR_RETURN(std::vector<HistoryRow> rows, read_rows(history, r, version));

  json& d = r.out.data;
  d["history_schema_version"] = version;
  d["results"] = src.results.string();
  std::vector<const HistoryRow*> evals;
  for (const HistoryRow& row : rows)
    if (row.evaluated()) evals.push_back(&row);

  // The run: sessions, device, problem, settings, vendor baseline (journal.jsonl).
  json sessions = json::array(), vendor = nullptr, ends = json::array();
  for (const json& e : read_jsonl(src.results / "journal.jsonl", r)) {
    const std::string kind = e.value("event", "");
    if (kind == "session") {
      sessions.push_back(e);
    } else if (kind == "vendor") {
      vendor = e;
    } else if (kind == "end") {
      ends.push_back(e);
    }
  }
  if (sessions.empty()) r.warn("journal.jsonl is missing or has no session: device and settings come from history.csv");
  json run = sessions.empty() ? json::object() : sessions.back();
  d["device"] = run.value("device", json::object());
  if (d["device"].empty() && !rows.empty())
    d["device"] = {{"name", rows.front().device_name}, {"arch", rows.front().device_arch}, {"backend", rows.front().backend}};
  d["problem"] = run.value("problem", json::object());
  if (d["problem"].empty() && !rows.empty()) {
    const HistoryRow& f = rows.front();
    d["problem"] = {{"m", f.m}, {"n", f.n}, {"k", f.k}, {"dtype", f.dtype}, {"c_dtype", f.c_dtype}, {"layout", f.layout},
                    {"c_layout", f.c_layout}, {"epilogue", f.epilogue}};
  }
  d["settings"] = run.value("settings", json::object());
  d["run_id"] = run.value("run_id", rows.empty() ? std::string() : rows.front().run_id);
  d["sessions"] = sessions.size();
  d["ends"] = ends;
  d["templates"] = run.value("templates", json::array());
  if (!vendor.is_null()) {
    d["vendor"] = {{"name", vendor.value("name", "")}, {"evaluation", vendor.value("evaluation", json::object())}};
  }
  // The roofline's compute peak from the device's facts (the matrix units' for half
  // inputs) and its bandwidth: bench-best's measured copy bandwidth where present, else the
  // device's theoretical one (the page says which).
  if (d["device"].contains("arch")) {
    DeviceFacts f;
    f.arch = d["device"].value("arch", "");
    f.multiprocessors = d["device"].value("multiprocessors", 0);
    f.clock_khz = d["device"].value("clock_khz", 0);
    f.memory_clock_khz = d["device"].value("memory_clock_khz", 0);
    f.memory_bus_bits = d["device"].value("memory_bus_bits", 0);
    auto dt = parse_dtype(d["problem"].value("dtype", "fp32"));
    if (double peak = f.peak_flops(dt.ok() ? *dt : DType::kF32); peak > 0) d["peak_tflops"] = peak / 1e12;
    if (double bw = f.theoretical_bandwidth(); bw > 0) {
      d["bandwidth_gbps"] = bw / 1e9;
      d["bandwidth_source"] = "theoretical (memory clock x bus width)";
    }
  }

  // best_config.json, and bench-best's output where present.
  if (auto best = read_file(src.results / "best_config.json"); best.ok()) {
    json b = json::parse(*best, nullptr, false);
    if (b.is_discarded()) r.warn("best_config.json is not JSON: left out");
    else d["best_config"] = b.value("entries", json::array());
  } else {
    r.warn("no best_config.json (the run has not finished a generation with a valid candidate, or it was removed)");
  }
  fs::path bench = src.bench.empty() ? src.results / "bench-best.json" : src.bench;
  if (fs::exists(bench, ec)) {
    auto text = read_file(bench);
    json b = text.ok() ? json::parse(*text, nullptr, false) : json(json::value_t::discarded);
    if (b.is_discarded() || !b.is_object()) {
      r.warn(bench.string() + " is not bench-best JSON: left out");
    } else {
      d["bench"] = b;
      if (b.contains("measured_bandwidth_gbps") && b["measured_bandwidth_gbps"].is_number()) {
        d["bandwidth_gbps"] = b["measured_bandwidth_gbps"];
        d["bandwidth_source"] = "measured by bench-best (device-to-device copy)";
      }
    }
  } else if (!src.bench.empty()) {
    r.warn(bench.string() + " does not exist: bench-best results left out");
  }

  // Candidates, with the parameters of the fastest spelled out.
  double t0 = 0;
  for (const HistoryRow* e : evals)
    if (auto t = parse_timestamp(e->timestamp)) {
      t0 = t0 == 0 ? *t : std::min(t0, *t);
    }
  std::vector<std::size_t> order(evals.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto speed = [&](std::size_t i) { return evals[i]->ok() && evals[i]->tflops ? *evals[i]->tflops : -1.0; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return speed(a) > speed(b); });
  std::set<std::size_t> with_config;
  for (std::size_t i = 0; i < order.size() && i < kConfigsKept; ++i) with_config.insert(order[i]);
  if (evals.size() > kConfigsKept)
    r.warn(std::to_string(evals.size()) + " candidates: parameters are shown for the fastest " +
           std::to_string(kConfigsKept) + " only");
  d["candidates"] = candidate_columns(evals, t0, with_config);
  // Clocks, power and throttling; the per-row columns only where some row has readings,
  // so an older or replayed history's page carries no columns of nulls.
  d["telemetry"] = telemetry_summary(evals, version);
  if (d["telemetry"]["measured_rows"].get<int>() > 0) add_telemetry_columns(d["candidates"], evals);
  d["top"] = json::array();
  for (std::size_t i = 0; i < order.size() && i < src.top && speed(order[i]) > 0; ++i) d["top"].push_back(order[i]);

  // Outcomes, proposals that never ran, and the time spent.
  json outcomes = json::object();
  double compile_ms = 0, eval_ms = 0, recorded_compile_ms = 0;
  int cache_hits = 0, compiled = 0;
  for (const HistoryRow* e : evals) {
    outcomes[outcome_name(e->outcome)] = outcomes.value(outcome_name(e->outcome), 0) + 1;
    if (e->backend == "replay") {
      // A replayed row carries the compile time recorded on the GPU that measured it;
      // this run spent none of it.
      recorded_compile_ms += e->compile_ms.value_or(0);
    } else if (e->compile_cached.value_or(false)) {
      ++cache_hits;
    } else if (e->compile_ms) {
      compile_ms += *e->compile_ms;
      ++compiled;
    }
    if (e->eval_ms) eval_ms += *e->eval_ms;
  }
  d["outcomes"] = outcomes;
  d["evaluated"] = evals.size();
  d["rejected"] = rows.size() - evals.size();
  std::vector<json> llm_log = read_jsonl(src.results / "llm_log.jsonl", r);
  d["llm"] = llm_summary(llm_log, evals, rows);
  // Wall time per session, from its first to its last row.
  double wall = 0;
  std::map<int, std::pair<double, double>> span;
  for (const HistoryRow& row : rows)
    if (auto t = parse_timestamp(row.timestamp)) {
      auto [it, fresh] = span.emplace(row.session, std::make_pair(*t, *t));
      if (!fresh) it->second = {std::min(it->second.first, *t), std::max(it->second.second, *t)};
    }
  for (const auto& [s, ab] : span) wall += ab.second - ab.first;
  d["time"] = {{"wall_s", wall},
               {"compile_s", compile_ms / 1e3},
               {"evaluate_s", eval_ms / 1e3},
               {"llm_wait_s", d["llm"]["latency_ms"].get<double>() / 1e3},
               {"compiled", compiled},
               {"compile_cache_hits", cache_hits},
               {"recorded_compile_s", recorded_compile_ms / 1e3}};

  d["sensitivity"] = sensitivity(evals);
  // Generation boundaries: the evaluation index where each generation starts.
  json bounds = json::array();
  int last_gen = -1, last_session = -1;
  for (std::size_t i = 0; i < evals.size(); ++i)
    if (evals[i]->generation != last_gen || evals[i]->session != last_session) {
      bounds.push_back({{"index", i + 1}, {"generation", evals[i]->generation}, {"session", evals[i]->session}});
      last_gen = evals[i]->generation;
      last_session = evals[i]->session;
    }
  d["generations"] = bounds;
  d["warnings"] = r.out.warnings;
  return std::move(r.out);
}

}  // namespace tilesmith
