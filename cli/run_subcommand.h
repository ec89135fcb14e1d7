#pragma once
// The subcommands that read a run (history, report, export): each takes the run's folder.

#include <memory>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

#include "cli/cli_common.h"

namespace tilesmith::cli {

// Such a subcommand: `name`, its description (with an example) and --results DIR. Its
// flags (a RunFolderFlags) are shared with the callback, which runs after this returns.
template <typename Flags>
std::pair<CLI::App*, std::shared_ptr<Flags>> add_run_subcommand(CLI::App& app,
                                                                const std::string& name,
                                                                const std::string& description) {
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(name, description);
  sub->add_option("--results", flags->results, "the run's results folder")->capture_default_str();
  return {sub, flags};
}

}  // namespace tilesmith::cli
