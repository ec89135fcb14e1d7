#pragma once
// Numbers and times as text, for files and messages.

#include <string>

namespace tilesmith {

// The shortest decimal text that reads back to the same double ("5.5", "1e-07"; "nan",
// "inf", "-inf"): for history.csv and anything read back.
std::string format_number(double v);

// A finite number with an optional trailing '%' ("5%", "0.05", "25%"): the value as a
// fraction (a percentage divided by 100), and in *percent whether it had the sign. False
// when the text is not wholly such a number. For flags that take margins.
bool parse_fraction(const std::string& text, double* value, bool* percent);

// Whole numbers exactly ("4096"), anything else to 6 significant digits ("0.333333"):
// for messages a person reads (validation reasons).
std::string format_number_brief(double v);

// UTC now as 2026-01-02T03:04:05.678Z (history.csv's timestamp column, the journal).
std::string utc_timestamp_now();

}  // namespace tilesmith
