#pragma once
// `autotune-loop report`: one self-contained HTML page from a run's results folder
// (report/report_page.h). Reads the folder without changing it.

#include <CLI/CLI.hpp>

namespace tilesmith::cli {

// Registers the subcommand on `app`; when it runs, `exit_code` gets its exit code.
CLI::App* add_report_command(CLI::App& app, int& exit_code);

}  // namespace tilesmith::cli
