#pragma once
// `autotune-loop history`: what a run's history.csv says — the top configs, outcome
// counts by proposer and by generation, and the best-so-far over evaluations and time.
// Reads the file without changing it (a torn last row is left for the next run to
// repair).

#include <CLI/CLI.hpp>

namespace tilesmith::cli {

// Registers the subcommand on `app`; when it runs, `exit_code` gets its exit code.
CLI::App* add_history_command(CLI::App& app, int& exit_code);

}  // namespace tilesmith::cli
