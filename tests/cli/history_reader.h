#pragma once
// history.csv as the tests read it: the project's RFC 4180 reader (tuner/records/csv.h) and the
// schema's column names, so each check states which column it looks at.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cli/process.h"
#include "tuner/records/csv.h"
#include "tuner/records/history.h"

namespace tilesmith::testing {

using CsvRow = std::map<std::string, std::string>;

// Every data row of the file as column -> text. Fails the test when the file is not
// RFC 4180, the header is not the schema's, or a record has another number of fields.
inline std::vector<CsvRow> read_csv_rows(const std::filesystem::path& path) {
  std::vector<CsvRow> rows;
  auto parsed = csv::parse(slurp(path));
  EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
  if (!parsed.ok()) return rows;
  EXPECT_FALSE(parsed->torn_tail) << path << " ends in a partial record";
  if (parsed->records.empty()) {
    ADD_FAILURE() << path << " has no header";
    return rows;
  }
  const auto& header = parsed->records.front().fields;
  EXPECT_EQ(header, history_columns());
  for (std::size_t i = 1; i < parsed->records.size(); ++i) {
    const auto& f = parsed->records[i].fields;
    EXPECT_EQ(f.size(), header.size()) << "record " << i;
    CsvRow row;
    for (std::size_t c = 0; c < header.size() && c < f.size(); ++c) row[header[c]] = f[c];
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace tilesmith::testing
