#pragma once
// `autotune-loop export`: a results folder -> a tuned package (package/package_export.h,
// docs/package.md) that libtilesmith_gemm loads. Reads the folder without changing it.

#include <CLI/CLI.hpp>

namespace tilesmith::cli {

// Registers the subcommand on `app`; when it runs, `exit_code` gets its exit code.
CLI::App* add_export_command(CLI::App& app, int& exit_code);

}  // namespace tilesmith::cli
