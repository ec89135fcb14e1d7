#pragma once
// CLI11's App declared, not included: its header costs ~6 s of compile a translation unit here,
// and most files that include the cli headers only pass an App along. The .cpp files that build
// flags, and cli/run_subcommand.h, include <CLI/CLI.hpp> themselves.

namespace CLI {
class App;
}
