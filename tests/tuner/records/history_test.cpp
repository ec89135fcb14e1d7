#include <algorithm>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "base/format.h"
#include "base/files.h"
#include "tests/cli/process.h"
#include "tuner/records/csv.h"
#include "tuner/records/history.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using testing::fresh_dir;
using testing::slurp;

const std::vector<std::string> kNasty = {
    "",
    "plain",
    "a,b,c",
    "say \"hi\"",
    "\"quoted at both ends\"",
    "line one\nline two\n",
    "error: expected ';'\n  int x = 1\n          ^\n",
    " leading and trailing spaces ",
    ",",
    "\"",
    "\"\"",
    "ends with a quote\"",
    "tab\there",
    "unicode: µs ≤ 5 — ✓",
    "{\"BLOCK_M\": 128, \"note\": \"a, b\"}",
};

TEST(Csv, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(csv::quote_field("abc"), "abc");
  EXPECT_EQ(csv::quote_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv::quote_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv::quote_field("a\nb"), "\"a\nb\"");
  EXPECT_EQ(csv::quote_field("a\rb"), "\"a\rb\"");
  EXPECT_EQ(csv::format_record({"a", "", "b c"}), "a,,b c\n");
}

TEST(Csv, RoundTripsNastyFields) {
  std::string text;
  for (std::size_t i = 0; i < kNasty.size(); ++i) text += csv::format_record({std::to_string(i), kNasty[i], "end"});
  auto parsed = csv::parse(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_FALSE(parsed->torn_tail);
  EXPECT_EQ(parsed->complete_bytes, text.size());
  ASSERT_EQ(parsed->records.size(), kNasty.size());
  for (std::size_t i = 0; i < kNasty.size(); ++i) {
    ASSERT_EQ(parsed->records[i].fields.size(), 3u) << i;
    EXPECT_EQ(parsed->records[i].fields[1], kNasty[i]) << i;
    EXPECT_EQ(parsed->records[i].fields[2], "end");
  }
}

TEST(Csv, AcceptsCrlfRecords) {
  auto parsed = csv::parse("a,b\r\n\"x\r\ny\",z\r\n");
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->records.size(), 2u);
  EXPECT_EQ(parsed->records[1].fields[0], "x\r\ny");
  EXPECT_EQ(parsed->records[1].fields[1], "z");
}

TEST(Csv, TellsATornTailFromAMalformedFile) {
  auto torn = csv::parse("a,b\n1,2\n3,");
  ASSERT_TRUE(torn.ok());
  EXPECT_TRUE(torn->torn_tail);
  EXPECT_EQ(torn->records.size(), 2u);
  EXPECT_EQ(torn->complete_bytes, 8u);

  auto open_quote = csv::parse("a,b\n1,\"two\nlines and no end");
  ASSERT_TRUE(open_quote.ok());
  EXPECT_TRUE(open_quote->torn_tail);
  EXPECT_EQ(open_quote->records.size(), 1u);

  auto bad = csv::parse("a,b\n1,x\"y\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(csv::parse("a,b\n\"x\"y,2\n").ok());
}

TEST(Csv, SanitizesForEveryReader) {
  EXPECT_EQ(csv::sanitize_text("a\r\nb\rc"), "a\nb\nc");
  EXPECT_EQ(csv::sanitize_text(std::string("a\0b\x01" "c\x7f", 6)), "abc");
  EXPECT_EQ(csv::sanitize_text("bad \xff byte"), "bad \xEF\xBF\xBD byte");
  EXPECT_EQ(csv::sanitize_text("overlong \xC0\xAF"), "overlong \xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(csv::sanitize_text("µs ok"), "µs ok");
  const std::string cut = csv::sanitize_text("ααααα", 7);  // 2 bytes each
  EXPECT_EQ(cut, "αα...");
  EXPECT_LE(cut.size(), 7u);
}

HistoryRow sample_row(int i) {
  HistoryRow r;
  r.run_id = "run-1";
  r.session = 1;
  r.timestamp = "2026-01-02T03:04:05.678Z";
  r.generation = i / 4;
  r.proposer = i % 2 ? "llm" : "evolve";
  r.model = i % 2 ? "gpt-5" : "";
  r.template_name = "gemm_tiled";
  r.template_hash = "0123456789abcdef";
  r.m = r.n = r.k = 4096;
  r.dtype = "fp32";
  r.layout = "NN";
  r.c_layout = "row";
  r.epilogue = "none";
  r.problem_key = "m=4096,n=4096,k=4096,a=fp32";
  r.config = "{\"BLOCK_M\":" + std::to_string(32 * (i + 1)) + "}";
  r.config_hash = "hash" + std::to_string(i);
  r.outcome = i % 3 ? Outcome::kOk : Outcome::kCompileError;
  r.message = kNasty[static_cast<std::size_t>(i) % kNasty.size()];
  r.rationale = "because, \"reasons\"\nand more";
  if (r.ok()) {
    r.median_ms = 5.0 + i / 7.0;
    r.min_ms = 4.9;
    r.p20_ms = 4.95;
    r.p80_ms = 5.05;
    r.cv = 0.003;
    r.samples = 40;
    r.tflops = 27.5;
    r.vendor_ratio = 0.47;
    r.registers = 128;
    r.shared_bytes = 16384;
    if (i % 2) {  // measured with telemetry
      r.sm_clock_mhz = 1980 - i;
      r.mem_clock_mhz = 2619;
      r.power_w = 612.25 + i;
      r.max_temp_c = 71;
      r.throttle_reasons = i % 4 == 1 ? "sw_power_cap+hw_thermal" : "none";
      r.joules_per_launch = 0.4375 * i;
    }
  }
  r.compile_ms = 812.5;
  r.compile_cached = i % 2 == 0;
  r.backend = "cuda";
  r.device_name = "NVIDIA H200, \"SXM\"";
  r.device_arch = "sm_90";
  r.tilesmith_version = "0.1.0";
  return r;
}

TEST(History, HeaderIsTheDocumentedSchema) {
  // docs/history.md documents these columns in this order; a change here is a schema
  // change (bump kHistorySchemaVersion and document it).
  EXPECT_EQ(history_header_line(),
            "schema_version,run_id,session,row,timestamp,generation,stage,proposer,model,template,"
            "template_hash,m,n,k,"
            "dtype,c_dtype,layout,c_layout,alpha,beta,epilogue,problem_key,config,config_hash,"
            "outcome,message,rationale,"
            "compile_ms,compile_cached,registers,shared_bytes,local_bytes,spill_store_bytes,spill_"
            "load_bytes,samples,"
            "median_ms,min_ms,p20_ms,p80_ms,cv,tflops,gbps,roofline_pct,max_abs_error,rel_error_"
            "norm,vendor_ratio,"
            "eval_ms,sm_clock_mhz,mem_clock_mhz,power_w,max_temp_c,throttle_reasons,joules_per_"
            "launch,backend,host,"
            "device,device_name,device_arch,driver_version,runtime_version,tilesmith_version\n");
  EXPECT_EQ(kHistorySchemaVersion, 5);
  // Version 4, still read: the same without the telemetry columns.
  EXPECT_EQ(history_header_line(4),
            "schema_version,run_id,session,row,timestamp,generation,stage,proposer,model,template,"
            "template_hash,m,n,k,"
            "dtype,c_dtype,layout,c_layout,alpha,beta,epilogue,problem_key,config,config_hash,"
            "outcome,message,rationale,"
            "compile_ms,compile_cached,registers,shared_bytes,local_bytes,spill_store_bytes,spill_"
            "load_bytes,samples,"
            "median_ms,min_ms,p20_ms,p80_ms,cv,tflops,gbps,roofline_pct,max_abs_error,rel_error_"
            "norm,vendor_ratio,"
            "eval_ms,backend,host,device,device_name,device_arch,driver_version,runtime_version,"
            "tilesmith_version\n");
  // Version 3, still read: the same without `host`.
  EXPECT_EQ(history_header_line(3),
            "schema_version,run_id,session,row,timestamp,generation,stage,proposer,model,template,template_hash,m,n,k,"
            "dtype,c_dtype,layout,c_layout,alpha,beta,epilogue,problem_key,config,config_hash,outcome,message,rationale,"
            "compile_ms,compile_cached,registers,shared_bytes,local_bytes,spill_store_bytes,spill_load_bytes,samples,"
            "median_ms,min_ms,p20_ms,p80_ms,cv,tflops,gbps,roofline_pct,max_abs_error,rel_error_norm,vendor_ratio,"
            "eval_ms,backend,device,device_name,device_arch,driver_version,runtime_version,tilesmith_version\n");
  // Version 2, still read: version 3 without `c_dtype`.
  EXPECT_EQ(history_header_line(2),
            "schema_version,run_id,session,row,timestamp,generation,stage,proposer,model,template,template_hash,m,n,k,"
            "dtype,layout,c_layout,alpha,beta,epilogue,problem_key,config,config_hash,outcome,message,rationale,"
            "compile_ms,compile_cached,registers,shared_bytes,local_bytes,spill_store_bytes,spill_load_bytes,samples,"
            "median_ms,min_ms,p20_ms,p80_ms,cv,tflops,gbps,roofline_pct,max_abs_error,rel_error_norm,vendor_ratio,"
            "eval_ms,backend,device,device_name,device_arch,driver_version,runtime_version,tilesmith_version\n");
  // Version 1, still read: version 2 without `device`.
  EXPECT_EQ(history_header_line(1),
            "schema_version,run_id,session,row,timestamp,generation,stage,proposer,model,template,template_hash,m,n,k,"
            "dtype,layout,c_layout,alpha,beta,epilogue,problem_key,config,config_hash,outcome,message,rationale,"
            "compile_ms,compile_cached,registers,shared_bytes,local_bytes,spill_store_bytes,spill_load_bytes,samples,"
            "median_ms,min_ms,p20_ms,p80_ms,cv,tflops,gbps,roofline_pct,max_abs_error,rel_error_norm,vendor_ratio,"
            "eval_ms,backend,device_name,device_arch,driver_version,runtime_version,tilesmith_version\n");
}

// After an append to a file written in an older `version`: what was there is unchanged,
// every record (header included) has that version's columns, and the file reads back
// with `rows` rows, the last in that version. Returns the rows read.
std::vector<HistoryRow> expect_appended_in_version(const fs::path& path, const std::string& before, int version,
                                                   std::size_t rows) {
  const std::string after = slurp(path);
  EXPECT_EQ(after.substr(0, before.size()), before) << "nothing written before is changed";
  auto parsed = csv::parse(after);
  EXPECT_TRUE(parsed.ok());
  if (parsed.ok()) {
    for (const auto& rec : parsed->records) EXPECT_EQ(rec.fields.size(), history_columns(version).size());
  }
  auto again = read_history(path);
  EXPECT_TRUE(again.ok()) << again.status().to_string();
  if (!again.ok()) return {};
  EXPECT_EQ(again->rows.size(), rows);
  if (!again->rows.empty()) {
    EXPECT_EQ(again->rows.back().schema_version, version);
  }
  return again->rows;
}

TEST(History, VersionFourFilesAreReadAndAppendedToWithoutTelemetry) {
  const fs::path dir = fresh_dir("history_v4");
  const fs::path path = dir / "history.csv";
  std::string v4 = history_header_line(4);
  for (int i = 0; i < 2; ++i) {
    HistoryRow r = sample_row(2 * i + 1);  // rows with telemetry: a version-4 line drops it
    r.schema_version = 4;
    r.row = i + 1;
    v4 += history_row_line(r);
  }
  std::ofstream(path, std::ios::binary) << v4;
  auto f = HistoryFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->schema_version(), 4);
  EXPECT_FALSE(f->rows()[0].power_w.has_value()) << "a version-4 file holds no telemetry";
  EXPECT_EQ(f->rows()[0].throttle_reasons, "");
  ASSERT_TRUE(f->append(sample_row(3)).ok());
  const auto again = expect_appended_in_version(path, v4, 4, 3);
  ASSERT_EQ(again.size(), 3u);
  EXPECT_EQ(again[2].median_ms, sample_row(3).median_ms);
  EXPECT_FALSE(again[2].joules_per_launch.has_value());
}

TEST(History, ABadThrottleReasonIsAParseErrorNamingTheColumn) {
  HistoryRow r = sample_row(1);
  r.throttle_reasons = "sw_power_cap+sleepy";
  auto parsed = csv::parse(history_header_line() + history_row_line(r));
  ASSERT_TRUE(parsed.ok());
  auto row = history_row_from_fields(parsed->records[1].fields);
  ASSERT_FALSE(row.ok());
  EXPECT_NE(row.status().message().find("throttle_reasons"), std::string::npos)
      << row.status().message();
}

TEST(History, VersionThreeFilesAreReadAndAppendedToWithoutAHost) {
  const fs::path dir = fresh_dir("history_v3");
  const fs::path path = dir / "history.csv";
  std::string v3 = history_header_line(3);
  for (int i = 0; i < 2; ++i) {
    HistoryRow r = sample_row(i);
    r.schema_version = 3;
    r.row = i + 1;
    r.device = "cuda:" + std::to_string(i);
    v3 += history_row_line(r);
  }
  std::ofstream(path, std::ios::binary) << v3;
  auto f = HistoryFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->schema_version(), 3);
  EXPECT_EQ(f->rows()[1].device, "cuda:1");
  EXPECT_EQ(f->rows()[1].host, "") << "a version-3 file names no host";
  HistoryRow more = sample_row(2);
  more.host = "node7";
  more.device = "cuda:0";
  ASSERT_TRUE(f->append(more).ok());
  const auto again = expect_appended_in_version(path, v3, 3, 3);
  ASSERT_EQ(again.size(), 3u);
  EXPECT_EQ(again[2].device, "cuda:0");
  EXPECT_EQ(again[2].host, "");
}

TEST(History, VersionOneFilesAreReadAndAppendedToInTheirOwnFormat) {
  const fs::path dir = fresh_dir("history_v1");
  const fs::path path = dir / "history.csv";
  // A file a version-1 build wrote: its header and rows have no device column.
  std::string v1 = history_header_line(1);
  for (int i = 0; i < 3; ++i) {
    HistoryRow r = sample_row(i);
    r.schema_version = 1;
    r.row = i + 1;
    v1 += history_row_line(r);
  }
  {
    std::ofstream(path, std::ios::binary) << v1;
  }
  auto read = read_history(path);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_EQ(read->schema_version, 1);
  ASSERT_EQ(read->rows.size(), 3u);
  EXPECT_EQ(read->rows[2].device_name, sample_row(2).device_name);
  EXPECT_EQ(read->rows[2].device, "");
  EXPECT_EQ(read->rows[2].c_dtype, read->rows[2].dtype) << "before version 3, C had the input type";

  auto f = HistoryFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->schema_version(), 1);
  HistoryRow more = sample_row(3);
  more.device = "cuda:1";
  ASSERT_TRUE(f->append(more).ok());
  EXPECT_EQ(f->rows().back().schema_version, 1);
  const auto again = expect_appended_in_version(path, v1, 1, 4);
  ASSERT_EQ(again.size(), 4u);
  EXPECT_EQ(again[3].row, 4);

  // A new file is the current version and keeps the host, the device and C's type.
  auto fresh = HistoryFile::open(dir / "new.csv");
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->schema_version(), kHistorySchemaVersion);
  more.dtype = "bf16";
  more.c_dtype = "fp32";
  more.host = "node7/rank2";
  ASSERT_TRUE(fresh->append(more).ok());
  auto back = read_history(dir / "new.csv");
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->rows.size(), 1u);
  EXPECT_EQ(back->rows[0].device, "cuda:1");
  EXPECT_EQ(back->rows[0].c_dtype, "fp32");
  EXPECT_EQ(back->rows[0].host, "node7/rank2");
  EXPECT_EQ(back->rows[0].schema_version, kHistorySchemaVersion);

  // A row claiming another version than its file's header is damage, not a version.
  std::string mixed = history_header_line(2);
  HistoryRow r = sample_row(0);
  r.schema_version = 2;
  std::string line = history_row_line(r);
  line.replace(0, 1, "1");
  std::ofstream(dir / "mixed.csv", std::ios::binary) << mixed << line << history_row_line(sample_row(1));
  auto bad = read_history(dir / "mixed.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("schema_version 1"), std::string::npos) << bad.status().message();
}

TEST(History, RowsRoundTripThroughTheFile) {
  const fs::path dir = fresh_dir("history_roundtrip");
  auto f = HistoryFile::open(dir / "history.csv");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(f->append(sample_row(i)).ok());
  EXPECT_EQ(f->rows().back().row, 30);

  // Parsed back by the RFC 4180 reader: one header, 30 records, every one as wide as it.
  const std::string text = slurp(dir / "history.csv");
  auto parsed = csv::parse(text);
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE(parsed->torn_tail);
  ASSERT_EQ(parsed->records.size(), 31u);
  for (const auto& rec : parsed->records) EXPECT_EQ(rec.fields.size(), history_columns().size());

  auto back = read_history(dir / "history.csv");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  ASSERT_EQ(back->rows.size(), 30u);
  for (int i = 0; i < 30; ++i) {
    const HistoryRow want = sample_row(i);
    const HistoryRow& got = back->rows[static_cast<std::size_t>(i)];
    EXPECT_EQ(got.row, i + 1);
    EXPECT_EQ(got.message, want.message) << i;
    EXPECT_EQ(got.rationale, want.rationale);
    EXPECT_EQ(got.config, want.config);
    EXPECT_EQ(got.device_name, want.device_name);
    EXPECT_EQ(got.outcome, want.outcome);
    EXPECT_EQ(got.median_ms, want.median_ms) << "numbers must read back exactly";
    EXPECT_EQ(got.registers, want.registers);
    EXPECT_EQ(got.compile_cached, want.compile_cached);
    EXPECT_EQ(got.vendor_ratio, want.vendor_ratio);
    EXPECT_FALSE(got.gbps.has_value()) << "missing numbers stay empty";
    EXPECT_EQ(got.sm_clock_mhz, want.sm_clock_mhz);
    EXPECT_EQ(got.mem_clock_mhz, want.mem_clock_mhz);
    EXPECT_EQ(got.power_w, want.power_w);
    EXPECT_EQ(got.max_temp_c, want.max_temp_c);
    EXPECT_EQ(got.throttle_reasons, want.throttle_reasons);
    EXPECT_EQ(got.joules_per_launch, want.joules_per_launch);
  }
  // Reopening for append keeps numbering.
  auto again = HistoryFile::open(dir / "history.csv");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->repaired_bytes(), 0u);
  ASSERT_TRUE(again->append(sample_row(30)).ok());
  EXPECT_EQ(again->rows().back().row, 31);
}

TEST(History, MissingNumbersAreEmptyCells) {
  HistoryRow r = sample_row(0);  // compile_error: no timing
  const std::string line = history_row_line(r);
  auto parsed = csv::parse(line);
  ASSERT_TRUE(parsed.ok());
  const auto& f = parsed->records.at(0).fields;
  const auto& cols = history_columns();
  for (std::size_t i = 0; i < cols.size(); ++i)
    if (cols[i] == "median_ms" || cols[i] == "tflops" || cols[i] == "registers") {
      EXPECT_EQ(f[i], "") << cols[i];
    }
}

TEST(History, InvalidUtf8AndControlsAreCleanedBeforeWriting) {
  HistoryRow r = sample_row(1);
  r.message = std::string("log \xfe\xff with NUL \0 and bell \a", 28);
  auto parsed = csv::parse(history_row_line(r));
  ASSERT_TRUE(parsed.ok());
  auto row = history_row_from_fields(parsed->records.at(0).fields);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->message.find('\0'), std::string::npos);
  EXPECT_EQ(row->message.find('\a'), std::string::npos);
  EXPECT_NE(row->message.find("\xEF\xBF\xBD"), std::string::npos);
}

TEST(History, TornLastRowIsRepairedAndNothingElseLost) {
  const fs::path dir = fresh_dir("history_torn");
  const fs::path path = dir / "history.csv";
  {
    auto f = HistoryFile::open(path);
    ASSERT_TRUE(f.ok());
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(f->append(sample_row(i)).ok());
  }
  const std::string good = slurp(path);
  // A crash in the middle of writing row 6: cut inside its quoted, multi-line message.
  const std::string row6 = history_row_line(sample_row(5));
  const std::size_t cut = row6.find("line one\n") + std::string("line one\n").size();
  ASSERT_NE(cut, std::string::npos);
  ASSERT_TRUE(append_line_durable(path, row6.substr(0, cut)).ok());

  auto reader = read_history(path);  // read-only: reports, does not change the file
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  EXPECT_EQ(reader->rows.size(), 5u);
  EXPECT_EQ(reader->torn_bytes, cut);
  EXPECT_EQ(slurp(path).size(), good.size() + cut);

  auto f = HistoryFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->repaired_bytes(), cut);
  EXPECT_EQ(f->rows().size(), 5u);
  EXPECT_EQ(slurp(path), good) << "the repair truncates exactly the torn bytes";
  ASSERT_TRUE(f->append(sample_row(5)).ok());
  auto back = read_history(path);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->rows.size(), 6u);
  EXPECT_EQ(back->rows[5].row, 6);
  EXPECT_EQ(back->rows[5].message, sample_row(5).message);
}

TEST(History, TornRowWithoutNewlineAndZeroFilledTail) {
  const fs::path dir = fresh_dir("history_torn_zero");
  const fs::path path = dir / "history.csv";
  {
    auto f = HistoryFile::open(path);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(f->append(sample_row(1)).ok());
  }
  const std::size_t good = slurp(path).size();
  // A file system that extended the file but lost the data shows zeros.
  ASSERT_TRUE(append_line_durable(path, std::string(40, '\0') + "\n").ok());
  auto f = HistoryFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->rows().size(), 1u);
  EXPECT_EQ(slurp(path).size(), good);

  ASSERT_TRUE(append_line_durable(path, "1,run-1,1,2,2026").ok());  // no newline
  auto g = HistoryFile::open(path);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->repaired_bytes(), 16u);
  EXPECT_EQ(slurp(path).size(), good);
}

TEST(History, DamageBeforeTheLastRowIsAnErrorNotARepair) {
  const fs::path dir = fresh_dir("history_damaged");
  const fs::path path = dir / "history.csv";
  {
    auto f = HistoryFile::open(path);
    ASSERT_TRUE(f.ok());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(f->append(sample_row(i)).ok());
  }
  std::string text = slurp(path);
  const std::size_t second = text.find("\n" + std::to_string(kHistorySchemaVersion) + ",run-1,1,2,") + 1;
  text.insert(second, "garbage,row\n");
  {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  }
  const auto line = std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(second), '\n') + 1;
  auto f = HistoryFile::open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("line " + std::to_string(line)), std::string::npos) << f.status().message();
  EXPECT_EQ(slurp(path), text) << "nothing is changed";
}

TEST(History, ForeignFileIsRefusedWithAClearMessage) {
  const fs::path dir = fresh_dir("history_foreign");
  const fs::path path = dir / "history.csv";
  {
    std::ofstream(path) << "time,config,ms\n1,{},2\n";
  }
  auto f = HistoryFile::open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("versions 1 to " + std::to_string(kHistorySchemaVersion)), std::string::npos) << f.status().message();
  EXPECT_NE(f.status().message().find("--results"), std::string::npos);
}

TEST(History, NewFileGetsItsHeaderAtomically) {
  const fs::path dir = fresh_dir("history_new");
  auto f = HistoryFile::open(dir / "history.csv");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(slurp(dir / "history.csv"), history_header_line());
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_EQ(entry.path().filename(), "history.csv") << "no temp file left behind";
}

TEST(History, NumbersUseTheShortestExactText) {
  EXPECT_EQ(format_number(5.5), "5.5");
  EXPECT_EQ(format_number(0.1), "0.1");
  EXPECT_EQ(format_number(1e-7), "1e-07");
  EXPECT_EQ(format_number(123456789.0), "123456789");
  HistoryRow r = sample_row(2);
  r.median_ms = 5.657551999999999;
  auto parsed = csv::parse(history_row_line(r));
  ASSERT_TRUE(parsed.ok());
  auto back = history_row_from_fields(parsed->records[0].fields);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back->median_ms, 5.657551999999999);
}

}  // namespace
}  // namespace tilesmith
