#pragma once
// The checks on numeric flags of every command (autotune-loop, its subcommands, bench-best),
// and the nearest-name suggestion for a flag or config key that does not exist.
//
// Each check is a CLI11 Validator, so it runs on the command line and on a --config file's
// values alike. A failure reads, after CLI11 puts the flag in front:
//   --m: 'abc' is not a whole number; give an integer of 1 or more
//   --m: 0 is too small; give an integer of 1 or more
//   --candidates: 5000 is out of range; give an integer from 1 to 1000
//   --hours: -1 is too small; give a number of 0 or more
// Every bound is written in plain digits. A value that passes is rewritten to the form
// CLI11's conversion reads as meant (plain decimal: CLI11 would read 010 as octal 8), so a
// checked value never fails conversion afterwards ("Could not convert").

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>

namespace tilesmith::cli {

// `s` without the spaces, tabs and line ends around it (flag values, config lines).
std::string trimmed(const std::string& s);

namespace detail {
// An integer from `min` to `max`. `open_ended`: `max` is only the limit of the flag's type,
// so the usual advice is "of MIN or more" and `max` is named only to a value above it.
CLI::Validator integer_check(std::int64_t min, std::uint64_t max, bool open_ended);
}  // namespace detail

// An integer of at least `min`, up to what the flag's type T holds:
// "give an integer of 1 or more".
template <class T>
CLI::Validator integer_at_least(T min) {
  static_assert(std::is_integral_v<T>, "integer_at_least is for integer flags");
  return detail::integer_check(static_cast<std::int64_t>(min),
                               static_cast<std::uint64_t>(std::numeric_limits<T>::max()), /*open_ended=*/true);
}

// An integer from `min` to `max` (both allowed): "give an integer from 1 to 1000".
CLI::Validator integer_from_to(std::int64_t min, std::int64_t max);

// A finite real number of at least `min`: "give a number of 0 or more".
CLI::Validator number_at_least(double min);
// A finite real number greater than `min`: "give a number greater than 0".
CLI::Validator number_above(double min);
// Any finite real number: "give a number, e.g. 0.5".
CLI::Validator any_number();

// The name in `names` nearest to `word` (edit distance; case, a flag's leading dashes and
// '_' against '-' aside), or "" when none is close enough to be what was meant.
std::string nearest_name(const std::string& word, const std::vector<std::string>& names);

}  // namespace tilesmith::cli
