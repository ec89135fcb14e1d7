#pragma once
// RFC 4180 CSV: writing records and reading them back, for history.csv. Fields that
// hold a comma, a double quote, CR or LF are quoted, with quotes doubled; records end
// in LF (RFC 4180 readers, pandas, polars and duckdb among them, accept LF or CRLF).
// The reader tells a torn last record (no terminating newline, or an open quote: what a
// crash in the middle of a write leaves) apart from a malformed file.
// Pure functions; thread-safe.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tilesmith::csv {

// The field as it must appear in a record: unchanged, or quoted with quotes doubled.
std::string quote_field(std::string_view field);
// The fields joined by commas, quoted as needed, ending in "\n".
std::string format_record(const std::vector<std::string>& fields);

struct Record {
  std::vector<std::string> fields;
  std::size_t offset = 0;  // byte offset of the record's first character
  std::size_t line = 0;    // 1-based line number where it starts
};

struct Parsed {
  std::vector<Record> records;  // complete records, in order
  // Bytes up to and including the last complete record's newline: what survives a repair.
  std::size_t complete_bytes = 0;
  // Set when bytes follow the last complete record (a record without its newline, or one
  // whose quote never closes): a torn write.
  bool torn_tail = false;
};

// Parses the whole text. parse_error (naming the line) when a complete record is
// malformed: a quote inside an unquoted field, or text after a closing quote. A record
// is complete once its newline outside quotes is read; whatever follows the last one is
// reported as torn_tail, not parsed.
Result<Parsed> parse(std::string_view text);

// Text every CSV reader takes as-is: valid UTF-8 (each invalid byte becomes U+FFFD), CR LF
// and lone CR turned into LF, NUL and other control characters except tab and LF
// dropped. Then cut to at most `max_bytes` (on a character boundary, with "..." marking
// the cut); 0 means no limit.
std::string sanitize_text(std::string_view text, std::size_t max_bytes = 0);

}  // namespace tilesmith::csv
