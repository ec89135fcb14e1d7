#pragma once
// --config FILE: settings from a TOML or INI file, read by CLI11's own reader, held to the
// same rules as the command line. CLI11 drops what it does not understand (an unknown
// key, a key in a section it cannot place, a line that is not a setting); this reader
// refuses each with a CLI::ConfigError that names the file, the line and, for a key, the
// nearest known one:
//   unknown key 'max_evals' in tune.toml line 3; did you mean 'max-evals'?
//   'junk' in tune.toml line 4 is not a setting: write key = value (the keys are the long flag names), ...
// A value goes through the flag's own checks (cli/flag_checks.h) before CLI11 sees it, so
// a bad number reads as it does on the command line, with its place:
//   --candidates: 'lots' is not a whole number; give an integer from 1 to 1000 (tune.toml line 2)
//
// The accepted form: `key = value` lines whose key is a long flag name without the dashes
// (exactly: max-evals, not max_evals), `# comment` or `; comment` lines, blank lines, and
// `[default]` (CLI11's name for the top level). A value is a number, true/false, a string
// ("quoted" or bare), or a list ["a", "b"] for a repeatable flag; a setting given twice is
// refused. Flags given on the command line win over the file.

#include <string>

#include <CLI/CLI.hpp>

namespace tilesmith::cli {

// Adds --config FILE to `app` (the top-level app; its options are the keys) with this
// reader. `help` is the flag's description. Call after the app's other options exist or
// before: the keys are looked up when the file is read.
CLI::Option* add_config_flag(CLI::App& app, const std::string& help);

}  // namespace tilesmith::cli
