#pragma once
// Flags and helpers shared by the command-line tools: the problem flags, template
// selection, backend/device selection, and device listing.

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "base/status.h"
#include "cli/cli11_fwd.h"
#include "registry/problem.h"
#include "registry/template_library.h"

namespace tilesmith::cli {

struct ProblemFlags {
  std::int64_t m = 0, n = 0, k = 0;
  std::string dtype = "fp32";
  std::string c_dtype;  // empty: dtype
  std::string b_dtype;  // empty: dtype
  std::string layout = "NN";
  std::string c_layout = "row";
  double alpha = 1.0, beta = 0.0;
  std::string epilogue = "none";
  double slope = 0.01;
  std::string scaling = "none";      // FP8 inputs only
  double scale_a = 1.0, scale_b = 1.0;
};

// Parses the command line of `app`, the command `program` ("autotune-loop", "bench-best"),
// with its --config file when it has one. Returns std::nullopt to go on; otherwise the exit
// code to end with: kExitOk after --help or --version (printed), kExitUsage after one line
// on stderr, "<program>[ <subcommand>]: <what was given, what is allowed>", e.g.
//   autotune-loop: --m: 0 is too small; give an integer of 1 or more
//   autotune-loop: unknown flag --max_evals; did you mean --max-evals?
// Nothing else happens on a bad command line: no file is read past the config, none written.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, const std::string& program);

// --m --n --k (required when `required`), --dtype, --b-dtype (FP8 mixes), --c-dtype, --layout, --c-layout, --alpha, --beta,
// --epilogue, --leaky-slope.
void add_problem_flags(CLI::App& app, ProblemFlags& f, bool required);
Result<GemmProblem> to_problem(const ProblemFlags& f);
// A --config's JSON text over the template's defaults: parameters it leaves out take the default
// (each named in `filled` as NAME=VALUE); an unknown name stays in, so validation names it.
Result<Config> config_over_defaults(const KernelTemplate& t, const std::string& json_text,
                                    std::vector<std::string>* filled);
// true when --m/--n/--k were all given.
bool problem_given(const ProblemFlags& f);

// What every subcommand that reads a run (history, report, export) takes: the run's folder.
struct RunFolderFlags {
  std::string results = "results";
};

struct ListDevicesOptions {
  bool as_json = false;
  // Enumerate in this process (loading the GPU runtimes) instead of asking a short-lived
  // worker process per backend (worker::list_devices). For debugging.
  bool in_process = false;
  std::string worker_exe;  // the worker executable; empty: the default search
};

// Prints every backend, its compiler and devices (or why it is unavailable). The devices
// come from a worker process per backend, so this process loads no GPU runtime; the
// compiler line loads only the run-time compiler library (NVRTC, hipRTC), as `compile`
// does. Returns kExitOk when at least one GPU was found, kExitNoDevice otherwise.
int list_devices(std::ostream& out, const ListDevicesOptions& options);

}  // namespace tilesmith::cli
