#include "tuner/records/history.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <functional>

#include "base/files.h"
#include "base/format.h"
#include "runtime/telemetry.h"
#include "tuner/records/csv.h"

namespace tilesmith {
namespace fs = std::filesystem;

namespace {

// Messages and rationales are cut so a row stays readable; the compile log itself is
// long and belongs to the compile cache, not to a CSV cell.
constexpr std::size_t kMaxMessageBytes = 2000;
constexpr std::size_t kMaxTextBytes = 600;

std::string text(std::string_view s) { return csv::sanitize_text(s, kMaxTextBytes); }

std::string opt_num(const std::optional<double>& v) { return v ? format_number(*v) : std::string(); }
std::string opt_int(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string(); }

Status bad(const std::string& column, const std::string& value, const char* what) {
  return Status::parse_error("column " + column + ": '" + value.substr(0, 40) + "' is not " + what);
}

Result<double> parse_double(const std::string& column, const std::string& s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    // from_chars does not read "inf"/"nan" spellings some writers use; accept them.
    if (s == "inf" || s == "Infinity") return HUGE_VAL;
    if (s == "-inf" || s == "-Infinity") return -HUGE_VAL;
    if (s == "nan" || s == "NaN") return std::nan("");
    return bad(column, s, "a number");
  }
  return v;
}

Result<std::int64_t> parse_int(const std::string& column, const std::string& s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return bad(column, s, "an integer");
  return v;
}

Status set_opt_double(std::optional<double>& out, const std::string& column, const std::string& s) {
  if (s.empty()) {
    out.reset();
    return {};
  }
  TS_ASSIGN_OR_RETURN(out, parse_double(column, s));
  return {};
}

Status set_opt_int(std::optional<std::int64_t>& out, const std::string& column, const std::string& s) {
  if (s.empty()) {
    out.reset();
    return {};
  }
  TS_ASSIGN_OR_RETURN(out, parse_int(column, s));
  return {};
}

struct Column {
  const char* name;
  std::function<std::string(const HistoryRow&)> get;
  std::function<Status(HistoryRow&, const std::string&)> set;
  int since = 1;  // the first schema version with this column
};

#define TS_TEXT_COLUMN(field)                                                         \
  Column {                                                                            \
    #field, [](const HistoryRow& r) { return text(r.field); },                        \
        [](HistoryRow& r, const std::string& s) -> Status { r.field = s; return {}; } \
  }
#define TS_NUM_COLUMN(field)                                                      \
  Column {                                                                        \
    #field, [](const HistoryRow& r) { return opt_num(r.field); },                 \
        [](HistoryRow& r, const std::string& s) { return set_opt_double(r.field, #field, s); } \
  }
#define TS_INT_COLUMN(field)                                                      \
  Column {                                                                        \
    #field, [](const HistoryRow& r) { return opt_int(r.field); },                 \
        [](HistoryRow& r, const std::string& s) { return set_opt_int(r.field, #field, s); } \
  }

const std::vector<Column>& columns() {
  static const std::vector<Column> cols = {
      {"schema_version", [](const HistoryRow& r) { return std::to_string(r.schema_version); },
       [](HistoryRow& r, const std::string& s) -> Status {
         TS_ASSIGN_OR_RETURN(auto v, parse_int("schema_version", s));
         r.schema_version = int(v);
         return {};
       }},
      TS_TEXT_COLUMN(run_id),
      {"session", [](const HistoryRow& r) { return std::to_string(r.session); },
       [](HistoryRow& r, const std::string& s) -> Status {
         TS_ASSIGN_OR_RETURN(auto v, parse_int("session", s));
         r.session = int(v);
         return {};
       }},
      {"row", [](const HistoryRow& r) { return std::to_string(r.row); },
       [](HistoryRow& r, const std::string& s) -> Status {
         TS_ASSIGN_OR_RETURN(r.row, parse_int("row", s));
         return {};
       }},
      TS_TEXT_COLUMN(timestamp),
      {"generation", [](const HistoryRow& r) { return std::to_string(r.generation); },
       [](HistoryRow& r, const std::string& s) -> Status {
         TS_ASSIGN_OR_RETURN(auto v, parse_int("generation", s));
         r.generation = int(v);
         return {};
       }},
      {"stage", [](const HistoryRow& r) { return r.stage; },
       [](HistoryRow& r, const std::string& s) -> Status {
         if (s != kStageProposal && s != kStageEvaluation)
           return bad("stage", s, "'proposal' or 'evaluation'");
         r.stage = s;
         return {};
       }},
      TS_TEXT_COLUMN(proposer),
      TS_TEXT_COLUMN(model),
      {"template", [](const HistoryRow& r) { return text(r.template_name); },
       [](HistoryRow& r, const std::string& s) -> Status {
         r.template_name = s;
         return {};
       }},
      TS_TEXT_COLUMN(template_hash),
      {"m", [](const HistoryRow& r) { return std::to_string(r.m); },
       [](HistoryRow& r, const std::string& s) -> Status {
         TS_ASSIGN_OR_RETURN(r.m, parse_int("m", s));
         return {};
       }},
      {"n", [](const HistoryRow& r) { return std::to_string(r.n); },
       [](HistoryRow& r, const std::string& s) -> Status {
         TS_ASSIGN_OR_RETURN(r.n, parse_int("n", s));
         return {};
       }},
      {"k", [](const HistoryRow& r) { return std::to_string(r.k); },
       [](HistoryRow& r, const std::string& s) -> Status {
         TS_ASSIGN_OR_RETURN(r.k, parse_int("k", s));
         return {};
       }},
      TS_TEXT_COLUMN(dtype),
      {"c_dtype", [](const HistoryRow& r) { return text(r.c_dtype); },
       [](HistoryRow& r, const std::string& s) -> Status {
         r.c_dtype = s;
         return {};
       },
       3},
      TS_TEXT_COLUMN(layout),
      TS_TEXT_COLUMN(c_layout),
      {"alpha", [](const HistoryRow& r) { return format_number(r.alpha); },
       [](HistoryRow& r, const std::string& s) -> Status {
         TS_ASSIGN_OR_RETURN(r.alpha, parse_double("alpha", s));
         return {};
       }},
      {"beta", [](const HistoryRow& r) { return format_number(r.beta); },
       [](HistoryRow& r, const std::string& s) -> Status {
         TS_ASSIGN_OR_RETURN(r.beta, parse_double("beta", s));
         return {};
       }},
      TS_TEXT_COLUMN(epilogue),
      TS_TEXT_COLUMN(problem_key),
      {"config", [](const HistoryRow& r) { return text(r.config); },
       [](HistoryRow& r, const std::string& s) -> Status {
         r.config = s;
         return {};
       }},
      TS_TEXT_COLUMN(config_hash),
      {"outcome", [](const HistoryRow& r) { return std::string(outcome_name(r.outcome)); },
       [](HistoryRow& r, const std::string& s) -> Status {
         auto o = parse_outcome(s);
         if (!o.ok()) return bad("outcome", s, "an outcome name");
         r.outcome = *o;
         return {};
       }},
      {"message",
       [](const HistoryRow& r) { return csv::sanitize_text(r.message, kMaxMessageBytes); },
       [](HistoryRow& r, const std::string& s) -> Status {
         r.message = s;
         return {};
       }},
      TS_TEXT_COLUMN(rationale),
      TS_NUM_COLUMN(compile_ms),
      {"compile_cached",
       [](const HistoryRow& r) {
         return r.compile_cached ? std::string(*r.compile_cached ? "true" : "false") : "";
       },
       [](HistoryRow& r, const std::string& s) -> Status {
         if (s.empty())
           r.compile_cached.reset();
         else if (s == "true")
           r.compile_cached = true;
         else if (s == "false")
           r.compile_cached = false;
         else
           return bad("compile_cached", s, "true or false");
         return {};
       }},
      TS_INT_COLUMN(registers),
      TS_INT_COLUMN(shared_bytes),
      TS_INT_COLUMN(local_bytes),
      TS_INT_COLUMN(spill_store_bytes),
      TS_INT_COLUMN(spill_load_bytes),
      TS_INT_COLUMN(samples),
      TS_NUM_COLUMN(median_ms),
      TS_NUM_COLUMN(min_ms),
      TS_NUM_COLUMN(p20_ms),
      TS_NUM_COLUMN(p80_ms),
      TS_NUM_COLUMN(cv),
      TS_NUM_COLUMN(tflops),
      TS_NUM_COLUMN(gbps),
      TS_NUM_COLUMN(roofline_pct),
      TS_NUM_COLUMN(max_abs_error),
      TS_NUM_COLUMN(rel_error_norm),
      TS_NUM_COLUMN(vendor_ratio),
      TS_NUM_COLUMN(eval_ms),
      // Telemetry (version 5): empty where nothing was read.
      {"sm_clock_mhz", [](const HistoryRow& r) { return opt_num(r.sm_clock_mhz); },
       [](HistoryRow& r, const std::string& s) {
         return set_opt_double(r.sm_clock_mhz, "sm_clock_mhz", s);
       },
       5},
      {"mem_clock_mhz", [](const HistoryRow& r) { return opt_num(r.mem_clock_mhz); },
       [](HistoryRow& r, const std::string& s) {
         return set_opt_double(r.mem_clock_mhz, "mem_clock_mhz", s);
       },
       5},
      {"power_w", [](const HistoryRow& r) { return opt_num(r.power_w); },
       [](HistoryRow& r, const std::string& s) { return set_opt_double(r.power_w, "power_w", s); },
       5},
      {"max_temp_c", [](const HistoryRow& r) { return opt_num(r.max_temp_c); },
       [](HistoryRow& r, const std::string& s) {
         return set_opt_double(r.max_temp_c, "max_temp_c", s);
       },
       5},
      {"throttle_reasons", [](const HistoryRow& r) { return text(r.throttle_reasons); },
       [](HistoryRow& r, const std::string& s) -> Status {
         if (!s.empty() && s != "none") {
           auto reasons = parse_throttle_reason_names(s);
           if (!reasons.ok())
             return bad("throttle_reasons", s, "'none' or throttle reasons joined by '+'");
         }
         r.throttle_reasons = s;
         return {};
       },
       5},
      {"joules_per_launch", [](const HistoryRow& r) { return opt_num(r.joules_per_launch); },
       [](HistoryRow& r, const std::string& s) {
         return set_opt_double(r.joules_per_launch, "joules_per_launch", s);
       },
       5},
      TS_TEXT_COLUMN(backend),
      {"host", [](const HistoryRow& r) { return text(r.host); },
       [](HistoryRow& r, const std::string& s) -> Status {
         r.host = s;
         return {};
       },
       4},
      {"device", [](const HistoryRow& r) { return text(r.device); },
       [](HistoryRow& r, const std::string& s) -> Status {
         r.device = s;
         return {};
       },
       2},
      TS_TEXT_COLUMN(device_name),
      TS_TEXT_COLUMN(device_arch),
      TS_TEXT_COLUMN(driver_version),
      TS_TEXT_COLUMN(runtime_version),
      TS_TEXT_COLUMN(tilesmith_version),
  };
  return cols;
}

bool known_version(int version) {
  return version >= kHistoryOldestSchemaVersion && version <= kHistorySchemaVersion;
}

// The columns of one schema version, in file order.
const std::vector<const Column*>& columns(int version) {
  static const std::vector<std::vector<const Column*>> by_version = [] {
    std::vector<std::vector<const Column*>> v(kHistorySchemaVersion + 1);
    for (int version = kHistoryOldestSchemaVersion; version <= kHistorySchemaVersion; ++version)
      for (const auto& c : columns())
        if (c.since <= version) v[version].push_back(&c);
    return v;
  }();
  return by_version.at(known_version(version) ? version : kHistorySchemaVersion);
}
#undef TS_TEXT_COLUMN
#undef TS_NUM_COLUMN
#undef TS_INT_COLUMN

// What the file holds: rows, where the complete part ends, and the torn tail if any.
struct Scan {
  int schema_version = kHistorySchemaVersion;
  std::vector<HistoryRow> rows;
  std::size_t complete_bytes = 0;
  std::size_t torn_bytes = 0;
  std::string torn_excerpt;
};

Result<Scan> scan(const fs::path& path, std::string_view contents) {
  const std::string where = path.string();
  auto parsed = csv::parse(contents);
  if (!parsed.ok()) return parsed.status().with_context(where);
  Scan s;
  auto& records = parsed->records;
  std::size_t complete = parsed->complete_bytes;
  // A last record that a crash cut short can still end in a newline when the cut fell
  // right after one inside a quoted message; it then has too few fields or a NUL byte.
  // Such a last record is torn too; the same defect earlier in the file is corruption.
  // The header says the version; records are checked against its column count.
  int version = kHistorySchemaVersion;
  if (!records.empty())
    for (int v = kHistoryOldestSchemaVersion; v <= kHistorySchemaVersion; ++v)
      if (records.front().fields == history_columns(v)) version = v;
  const auto& header = history_columns(version);
  auto defect = [&](const csv::Record& r) -> std::string {
    if (r.fields.size() != header.size())
      return std::to_string(r.fields.size()) + " fields where the header has " + std::to_string(header.size());
    for (const auto& f : r.fields)
      if (f.find('\0') != std::string::npos) return "a NUL byte";
    return "";
  };
  if (!records.empty() && !defect(records.back()).empty() && records.size() > 1) {
    complete = records.back().offset;
    records.pop_back();
  }
  if (records.empty()) {
    if (contents.empty()) return s;
    return Status::parse_error(where + " has no header row; it is not a tilesmith history (move it away or use another --results folder)");
  }
  if (records.front().fields != header) {
    std::string got;
    for (std::size_t i = 0; i < records.front().fields.size() && i < 6; ++i)
      got += (i ? "," : "") + records.front().fields[i];
    return Status::parse_error(where + ": the header is not tilesmith's history schema (versions " +
                               std::to_string(kHistoryOldestSchemaVersion) + " to " +
                               std::to_string(kHistorySchemaVersion) + " are read; it starts '" + got.substr(0, 120) +
                               "'); move the file away or use another --results folder");
  }
  s.schema_version = version;
  for (std::size_t i = 1; i < records.size(); ++i) {
    const auto& rec = records[i];
    std::string d = defect(rec);
    if (!d.empty())
      return Status::parse_error(where + " line " + std::to_string(rec.line) + ": " + d +
                                 "; the file was changed by hand or damaged (a crash only ever cuts the last row)");
    auto row = history_row_from_fields(rec.fields, version);
    if (!row.ok()) return row.status().with_context(where + " line " + std::to_string(rec.line));
    if (row->c_dtype.empty()) row->c_dtype = row->dtype;  // before version 3, C had the input type
    s.rows.push_back(std::move(row).value());
  }
  s.complete_bytes = complete;
  s.torn_bytes = contents.size() - complete;
  if (s.torn_bytes) s.torn_excerpt = csv::sanitize_text(contents.substr(complete, 80), 80);
  return s;
}

}  // namespace

std::string candidate_key(std::string_view template_name, std::string_view config_hash) {
  std::string k(template_name);
  k += '/';
  k += config_hash;
  return k;
}

std::string HistoryRow::key() const { return candidate_key(template_name, config_hash); }

const std::vector<std::string>& history_columns(int version) {
  static const std::vector<std::vector<std::string>> names = [] {
    std::vector<std::vector<std::string>> v(kHistorySchemaVersion + 1);
    for (int version = kHistoryOldestSchemaVersion; version <= kHistorySchemaVersion; ++version)
      for (const Column* c : columns(version)) v[version].push_back(c->name);
    return v;
  }();
  return names.at(known_version(version) ? version : kHistorySchemaVersion);
}

std::string history_header_line(int version) { return csv::format_record(history_columns(version)); }

std::string history_row_line(const HistoryRow& row) {
  const auto& cols = columns(row.schema_version);
  std::vector<std::string> fields;
  fields.reserve(cols.size());
  for (const Column* c : cols) fields.push_back(c->get(row));
  return csv::format_record(fields);
}

Result<HistoryRow> history_row_from_fields(const std::vector<std::string>& fields, int version) {
  if (!known_version(version))
    return Status::parse_error("history schema version " + std::to_string(version) + " is not one this build reads");
  const auto& cols = columns(version);
  if (fields.size() != cols.size())
    return Status::parse_error(std::to_string(fields.size()) + " fields where the schema has " +
                               std::to_string(cols.size()));
  HistoryRow r;
  for (std::size_t i = 0; i < cols.size(); ++i) TS_RETURN_IF_ERROR(cols[i]->set(r, fields[i]));
  if (r.schema_version != version)
    return Status::parse_error("schema_version " + std::to_string(r.schema_version) + " in a file of version " +
                               std::to_string(version));
  return r;
}

Result<HistoryLoad> read_history(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return HistoryLoad{};
  TS_ASSIGN_OR_RETURN(std::string contents, read_file(path));
  TS_ASSIGN_OR_RETURN(Scan s, scan(path, contents));
  HistoryLoad out;
  out.schema_version = s.schema_version;
  out.rows = std::move(s.rows);
  out.torn_bytes = s.torn_bytes;
  out.torn_excerpt = std::move(s.torn_excerpt);
  return out;
}

Result<HistoryFile> HistoryFile::open(const fs::path& path) {
  HistoryFile f;
  f.path_ = path;
  std::error_code ec;
  if (!fs::exists(path, ec) || fs::file_size(path, ec) == 0) {
    TS_RETURN_IF_ERROR(write_file_atomic(path, history_header_line()));
    return f;
  }
  TS_ASSIGN_OR_RETURN(std::string contents, read_file(path));
  TS_ASSIGN_OR_RETURN(Scan s, scan(path, contents));
  if (s.torn_bytes) {
    if (::truncate(path.c_str(), static_cast<off_t>(s.complete_bytes)) != 0)
      return Status::io_error("repairing " + path.string() + " (truncating a torn last row): " + std::strerror(errno));
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
      if (fd >= 0) ::close(fd);
      return Status::io_error("fsync of " + path.string() + " after repair: " + std::strerror(errno));
    }
    ::close(fd);
  }
  f.schema_version_ = s.schema_version;
  f.rows_ = std::move(s.rows);
  f.repaired_bytes_ = s.torn_bytes;
  f.repaired_excerpt_ = std::move(s.torn_excerpt);
  return f;
}

Status HistoryFile::append(HistoryRow row) {
  row.row = static_cast<std::int64_t>(rows_.size()) + 1;
  // A version-1 file keeps its columns (it cannot change its header); the device is then
  // only in the journal's evaluate markers.
  row.schema_version = schema_version_;
  if (schema_version_ < 2) row.device.clear();
  if (schema_version_ < 4) row.host.clear();
  const std::string line = history_row_line(row);
  std::error_code ec;
  const auto size_before = fs::file_size(path_, ec);
  Status st = append_line_durable(path_, line);
  if (!st.ok()) {
    // Leave no partial row behind for the rows that may follow (disk full, EIO).
    if (!ec) (void)::truncate(path_.c_str(), static_cast<off_t>(size_before));
    return st.with_context("appending to history");
  }
  rows_.push_back(std::move(row));
  return {};
}

}  // namespace tilesmith
