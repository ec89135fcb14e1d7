#include "tuner/records/history_report.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <set>

#include <nlohmann/json.hpp>

namespace tilesmith {
using nlohmann::json;

namespace {

const Outcome kOutcomeOrder[] = {Outcome::kOk,          Outcome::kInvalid,     Outcome::kCompileError,
                                 Outcome::kResourceError, Outcome::kLaunchError, Outcome::kWrongResult,
                                 Outcome::kTimeout,     Outcome::kCrash};

std::string proposer_label(const HistoryRow& r) { return r.model.empty() ? r.proposer : r.proposer + ":" + r.model; }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

bool numeric_cell(const std::string& s) {
  if (s.empty()) return false;
  std::size_t digits = 0;
  for (char c : s) {
    if (c >= '0' && c <= '9') ++digits;
    else if (c != '.' && c != '-' && c != '+' && c != 'e' && c != 'x' && c != '%') return false;
  }
  return digits > 0;
}

OutcomeTable tabulate(const std::vector<HistoryRow>& rows, const std::vector<std::string>& group_of_row,
                      std::vector<std::string> order) {
  OutcomeTable t;
  std::set<std::string> seen;
  bool rejected = false;
  std::map<std::string, std::map<std::string, std::int64_t>> counts;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string col = rows[i].evaluated() ? outcome_name(rows[i].outcome) : "rejected";
    if (!rows[i].evaluated()) rejected = true;
    else seen.insert(col);
    ++counts[group_of_row[i]][col];
  }
  for (Outcome o : kOutcomeOrder)
    if (seen.count(outcome_name(o))) t.columns.push_back(outcome_name(o));
  if (rejected) t.columns.push_back("rejected");
  for (const auto& g : order) t.groups.emplace_back(g, counts[g]);
  return t;
}

}  // namespace

std::vector<const HistoryRow*> top_configs(const std::vector<HistoryRow>& rows, std::size_t k, Objective objective) {
  std::vector<std::pair<double, const HistoryRow*>> ok;
  std::set<std::string> keys;
  for (const auto& r : rows)
    if (const auto value = objective_value(objective, r); value && keys.insert(r.key()).second) ok.emplace_back(*value, &r);
  std::stable_sort(ok.begin(), ok.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const HistoryRow*> top;
  for (std::size_t i = 0; i < ok.size() && i < k; ++i) top.push_back(ok[i].second);
  return top;
}

OutcomeTable outcomes_by_proposer(const std::vector<HistoryRow>& rows) {
  std::vector<std::string> groups, order;
  std::set<std::string> seen;
  for (const auto& r : rows) {
    groups.push_back(proposer_label(r));
    if (seen.insert(groups.back()).second) order.push_back(groups.back());
  }
  return tabulate(rows, groups, order);
}

OutcomeTable outcomes_by_generation(const std::vector<HistoryRow>& rows) {
  std::vector<std::string> groups;
  std::set<int> gens;
  for (const auto& r : rows) {
    groups.push_back(std::to_string(r.generation));
    gens.insert(r.generation);
  }
  std::vector<std::string> order;
  for (int g : gens) order.push_back(std::to_string(g));
  return tabulate(rows, groups, order);
}

std::optional<double> parse_timestamp(const std::string& iso) {
  int y, mo, d, h, mi, s, ms = 0;
  if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &y, &mo, &d, &h, &mi, &s, &ms) < 6) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return double(timegm(&tm)) + ms / 1000.0;
}

std::vector<BestPoint> best_so_far(const std::vector<HistoryRow>& rows) {
  std::vector<BestPoint> out;
  std::optional<double> t0;
  std::optional<double> best;
  std::int64_t evals = 0;
  for (const auto& r : rows) {
    if (!t0) t0 = parse_timestamp(r.timestamp);
    if (!r.evaluated()) continue;
    ++evals;
    if (!r.ok() || !r.median_ms || (best && *r.median_ms >= *best)) continue;
    best = r.median_ms;
    auto t = parse_timestamp(r.timestamp);
    out.push_back({evals, t && t0 ? *t - *t0 : 0.0, &r});
  }
  return out;
}

std::string format_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(headers.size(), 0);
  for (std::size_t c = 0; c < headers.size(); ++c) width[c] = headers[c].size();
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string out = " ";
    for (std::size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::size_t pad = width[c] - std::min(width[c], cell.size());
      const bool last = c + 1 == width.size();
      if (!header && numeric_cell(cell)) out += std::string(pad, ' ') + cell;
      else out += cell + (last ? "" : std::string(pad, ' '));
      if (!last) out += "  ";
    }
    return out + "\n";
  };
  std::string out = line(headers, true);
  for (const auto& r : rows) out += line(r, false);
  return out;
}

std::string format_top_table(const std::vector<const HistoryRow*>& top, Objective objective) {
  const bool by_time = objective == Objective::kTime;
  std::vector<std::vector<std::string>> rows;
  int i = 0;
  for (const HistoryRow* r : top) {
    std::vector<std::string> row{std::to_string(++i), r->template_name, fmt("%.4f", *r->median_ms)};
    if (!by_time) {
      const auto value = objective_value(objective, *r);
      row.push_back(value ? fmt("%.4g", *value) : "");
    }
    for (std::string cell : {r->tflops ? fmt("%.2f", *r->tflops) : "", r->vendor_ratio ? fmt("%.3fx", *r->vendor_ratio) : "",
                             std::to_string(r->generation), std::to_string(r->row), proposer_label(*r), r->config})
      row.push_back(std::move(cell));
    rows.push_back(std::move(row));
  }
  std::vector<std::string> headers{"#", "template", "median_ms"};
  if (!by_time) headers.push_back(objective_name(objective) + std::string("_") + objective_unit(objective));
  for (const char* h : {"TFLOP/s", "vs_vendor", "gen", "row", "proposer", "config"}) headers.push_back(h);
  return format_table(headers, rows);
}

std::string format_outcome_table(const std::string& first_header, const OutcomeTable& table) {
  std::vector<std::string> headers{first_header};
  for (const auto& c : table.columns) headers.push_back(c);
  headers.push_back("total");
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, std::int64_t> totals;
  for (const auto& [group, counts] : table.groups) {
    std::vector<std::string> cells{group};
    std::int64_t sum = 0;
    for (const auto& c : table.columns) {
      auto it = counts.find(c);
      const std::int64_t n = it == counts.end() ? 0 : it->second;
      cells.push_back(std::to_string(n));
      sum += n;
      totals[c] += n;
    }
    cells.push_back(std::to_string(sum));
    rows.push_back(std::move(cells));
  }
  if (table.groups.size() > 1) {
    std::vector<std::string> cells{"all"};
    std::int64_t sum = 0;
    for (const auto& c : table.columns) {
      cells.push_back(std::to_string(totals[c]));
      sum += totals[c];
    }
    cells.push_back(std::to_string(sum));
    rows.push_back(std::move(cells));
  }
  return format_table(headers, rows);
}

std::string format_best_so_far(const std::vector<BestPoint>& points) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : points) {
    const HistoryRow& r = *p.row;
    rows.push_back({std::to_string(p.evaluation), fmt("%.1f", p.elapsed_s), std::to_string(r.generation),
                    std::to_string(r.row), fmt("%.4f", *r.median_ms), r.tflops ? fmt("%.2f", *r.tflops) : "",
                    proposer_label(r), r.template_name, r.config});
  }
  return format_table({"eval", "elapsed_s", "gen", "row", "median_ms", "TFLOP/s", "proposer", "template", "config"}, rows);
}

std::string format_history_report(const std::vector<HistoryRow>& rows, std::size_t top_k) {
  std::int64_t evaluated = 0;
  std::set<int> sessions;
  int max_gen = -1;
  for (const auto& r : rows) {
    if (r.evaluated()) ++evaluated;
    sessions.insert(r.session);
    max_gen = std::max(max_gen, r.generation);
  }
  std::string out;
  if (rows.empty()) return "no rows yet\n";
  out += std::to_string(rows.size()) + " rows: " + std::to_string(evaluated) + " evaluated, " +
         std::to_string(rows.size() - static_cast<std::size_t>(evaluated)) + " rejected before evaluation; run " +
         rows.front().run_id + ", " + std::to_string(sessions.size()) + " session(s), generations 0-" +
         std::to_string(max_gen) + "\n";
  out += "problem " + std::to_string(rows.front().m) + "x" + std::to_string(rows.front().n) + "x" +
         std::to_string(rows.front().k) + " " + rows.front().dtype + " " + rows.front().layout + " on " +
         rows.front().device_name + " (" + rows.front().backend + ")\n\n";
  auto top = top_configs(rows, top_k);
  out += "Top " + std::to_string(top.size()) + " configs:\n" + (top.empty() ? " none passed validation yet\n" : format_top_table(top));
  out += "\nOutcomes by proposer:\n" + format_outcome_table("proposer", outcomes_by_proposer(rows));
  out += "\nOutcomes by generation:\n" + format_outcome_table("gen", outcomes_by_generation(rows));
  auto best = best_so_far(rows);
  out += "\nBest so far (each improvement; eval = evaluations so far, elapsed since the first row):\n" +
         (best.empty() ? std::string(" none yet\n") : format_best_so_far(best));
  return out;
}

json history_report_json(const std::vector<HistoryRow>& rows, std::size_t top_k) {
  auto row_json = [](const HistoryRow& r) {
    json j{{"row", r.row},           {"generation", r.generation}, {"template", r.template_name},
           {"proposer", r.proposer}, {"model", r.model},           {"config", json::parse(r.config, nullptr, false)},
           {"config_hash", r.config_hash}, {"timestamp", r.timestamp}};
    if (j["config"].is_discarded()) j["config"] = r.config;
    if (r.median_ms) j["median_ms"] = *r.median_ms;
    if (r.tflops) j["tflops"] = *r.tflops;
    if (r.vendor_ratio) j["vendor_ratio"] = *r.vendor_ratio;
    return j;
  };
  auto table_json = [](const OutcomeTable& t) {
    json out = json::object();
    for (const auto& [g, counts] : t.groups) out[g] = counts;
    return out;
  };
  json top = json::array(), best = json::array();
  for (const HistoryRow* r : top_configs(rows, top_k)) top.push_back(row_json(*r));
  for (const auto& p : best_so_far(rows)) {
    json j = row_json(*p.row);
    j["evaluation"] = p.evaluation;
    j["elapsed_s"] = p.elapsed_s;
    best.push_back(j);
  }
  std::int64_t evaluated = 0;
  for (const auto& r : rows) evaluated += r.evaluated() ? 1 : 0;
  return json{{"rows", rows.size()},
              {"evaluated", evaluated},
              {"run_id", rows.empty() ? "" : rows.front().run_id},
              {"top", top},
              {"outcomes_by_proposer", table_json(outcomes_by_proposer(rows))},
              {"outcomes_by_generation", table_json(outcomes_by_generation(rows))},
              {"best_so_far", best}};
}

}  // namespace tilesmith
