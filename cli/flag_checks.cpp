#include "cli/flag_checks.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <system_error>

namespace tilesmith::cli {

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

namespace {

// Plain digits, never an exponent: 0, 0.5, 1000000.
std::string plain(double v) {
  char buf[400];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  if (ec != std::errc()) return std::to_string(v);
  return std::string(buf, end);
}

// The value as the user typed it: numbers bare, anything else quoted.
std::string shown(const std::string& text, bool is_number) { return is_number ? text : "'" + text + "'"; }

}  // namespace

namespace detail {

CLI::Validator integer_check(std::int64_t min, std::uint64_t max, bool open_ended) {
  const std::string min_s = std::to_string(min), max_s = std::to_string(max);
  const std::string range = "give an integer from " + min_s + " to " + max_s;
  const std::string advice = open_ended ? "give an integer of " + min_s + " or more" : range;
  auto check = [=](std::string& value) -> std::string {
    const std::string t = trimmed(value);
    std::size_t i = 0;
    bool negative = false;
    if (!t.empty() && (t[0] == '+' || t[0] == '-')) {
      negative = t[0] == '-';
      i = 1;
    }
    std::string digits = t.substr(i);
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
      return shown(t, false) + " is not a whole number; " + advice;
    digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));  // 0100 is one hundred
    std::uint64_t magnitude = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
    const bool huge = ec == std::errc::result_out_of_range;
    if (magnitude == 0) negative = false;  // -0 is 0
    bool below = false, above = false;
    if (negative) {
      // -magnitude < min
      below = huge || min >= 0 || magnitude > static_cast<std::uint64_t>(-(min + 1)) + 1;
    } else {
      below = !huge && min > 0 && magnitude < static_cast<std::uint64_t>(min);
      above = huge || magnitude > max;
    }
    if (below) return t + (open_ended ? " is too small; " + advice : " is out of range; " + range);
    if (above) return t + (open_ended ? " is too large; " + range : " is out of range; " + range);
    value = (negative ? "-" : "") + digits;
    return std::string();
  };
  return CLI::Validator(check, open_ended ? ">=" + min_s : min_s + ".." + max_s);
}

}  // namespace detail

CLI::Validator integer_from_to(std::int64_t min, std::int64_t max) {
  return detail::integer_check(min, static_cast<std::uint64_t>(max), /*open_ended=*/false);
}

namespace {

enum class Lower { kNone, kIncluded, kExcluded };

CLI::Validator real_check(Lower lower, double min) {
  std::string advice, description;
  switch (lower) {
    case Lower::kNone:
      advice = "give a number, e.g. 0.5";
      break;
    case Lower::kIncluded:
      advice = "give a number of " + plain(min) + " or more";
      description = ">=" + plain(min);
      break;
    case Lower::kExcluded:
      advice = "give a number greater than " + plain(min);
      description = ">" + plain(min);
      break;
  }
  auto check = [=](std::string& value) -> std::string {
    std::string t = trimmed(value);
    const std::string typed = t;
    if (!t.empty() && t[0] == '+') t.erase(0, 1);
    double v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || end != t.data() + t.size() || (ec != std::errc() && ec != std::errc::result_out_of_range))
      return shown(typed, false) + " is not a number; " + advice;
    if (ec == std::errc::result_out_of_range || !std::isfinite(v))
      return shown(typed, false) + " is not a finite number; " + advice;
    if ((lower == Lower::kIncluded && v < min) || (lower == Lower::kExcluded && v <= min))
      return typed + " is too small; " + advice;
    value = t;
    return std::string();
  };
  return CLI::Validator(check, description);
}

// Optimal string alignment distance (edits, with a swap of neighbours as one edit).
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// Case and '_' or '-' aside, without the dashes of a flag.
std::string normalised(std::string s) {
  s.erase(0, s.find_first_not_of('-') == std::string::npos ? 0 : s.find_first_not_of('-'));
  for (char& c : s) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

CLI::Validator number_at_least(double min) { return real_check(Lower::kIncluded, min); }
CLI::Validator number_above(double min) { return real_check(Lower::kExcluded, min); }
CLI::Validator any_number() { return real_check(Lower::kNone, 0); }

std::string nearest_name(const std::string& word, const std::vector<std::string>& names) {
  const std::string w = normalised(word);
  std::optional<std::size_t> best_distance;
  std::string best;
  for (const auto& name : names) {
    const std::size_t d = edit_distance(w, normalised(name));
    if (!best_distance || d < *best_distance) {
      best_distance = d;
      best = name;
    }
  }
  // Close enough to be a slip: a third of the word's length, at most three edits.
  if (!best_distance || *best_distance > 3 || *best_distance * 3 > w.size() + 1) return "";
  return best;
}

}  // namespace tilesmith::cli
