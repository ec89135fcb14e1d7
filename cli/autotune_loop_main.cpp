// autotune-loop: the tuner's command line. This file wires subcommands; each lives in
// its own file.

#include <iostream>

#include "cli/cli_common.h"
#include "cli/compile_command.h"
#include "cli/exit_codes.h"

int main(int argc, char** argv) {
  using namespace tilesmith::cli;
  CLI::App app{
      "autotune-loop: tune GPU GEMM kernels with an LLM (or built-in search) in the loop.\n"
      "Exit codes: 0 ok, 1 failed, 2 bad usage, 3 no GPU found, 130/143 interrupted."};
  app.set_version_flag("--version", std::string("tilesmith ") + TILESMITH_VERSION);
  bool list = false, json = false;
  app.add_flag("--list-devices", list, "list GPU backends, their compilers and devices (exit 3 when no GPU is found)");
  app.add_flag("--json", json, "with --list-devices: print JSON");
  int exit_code = kExitOk;
  add_compile_command(app, exit_code);
  app.require_subcommand(0, 1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (list) return list_devices(std::cout, json);
  if (app.get_subcommands().empty()) {
    std::cout << app.help();
    return kExitUsage;
  }
  return exit_code;
}
