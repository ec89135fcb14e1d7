#pragma once
// Ctrl-C and SIGTERM for a long run: the first sets a flag the loop polls between
// candidates (the candidates being measured are finished and recorded, then the run ends
// with its summary); the second ends the process at once. Every row and journal line is
// fsync'd as it is written, so even that loses nothing recorded; the worker processes
// (their own process groups, so a terminal's Ctrl-C does not reach them) exit when
// their request pipe closes.

#include <atomic>

namespace tilesmith::cli {

// Installs the handlers for SIGINT and SIGTERM (once per process).
void install_stop_handlers();
// Set by the first signal.
const std::atomic<bool>& stop_requested();
// The signal that set it (SIGINT or SIGTERM), 0 when none came.
int stop_signal();
// 130 for SIGINT, 143 for SIGTERM, `otherwise` when no signal came.
int exit_code_for_signal(int otherwise);

}  // namespace tilesmith::cli
