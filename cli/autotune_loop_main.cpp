// autotune-loop: the tuner's command line. This file wires the run (the top level) and
// the subcommands; each lives in its own file.

#include <iostream>

#include "cli/cli_common.h"
#include "cli/compile_command.h"
#include "cli/exit_codes.h"
#include "cli/export_command.h"
#include "cli/history_command.h"
#include "cli/report_command.h"
#include "cli/run_command.h"
#include "tuner/assembly/scale_out.h"

namespace {
// The subcommands (history, report, export, compile) are not tuning runs: under mpirun or
// srun only rank 0 runs them (one export into --out, one report, one table), the other ranks
// exit 0 at once. A launcher that sets no rank variable gets a clear refusal instead of
// several copies writing the same files.
void once_under_a_launcher(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    sub->preparse_callback([name = sub->get_name()](std::size_t) {
      const tilesmith::LaunchInfo launch = tilesmith::launched_ranks();
      if (launch.ranks <= 1) return;
      if (launch.rank < 0)
        throw CLI::ValidationError("launched as " + std::to_string(launch.ranks) + " ranks (" + launch.launcher +
                                   ") but no rank variable says which this is; `autotune-loop " + name +
                                   "` is not a tuning run: run it once, without mpirun or srun");
      if (launch.rank > 0) throw CLI::Success();
      std::cerr << "autotune-loop " << name << ": launched as " << launch.ranks << " ranks (" << launch.launcher
                << "); this is not a tuning run, so rank 0 alone runs it\n";
    });
}
}  // namespace

int main(int argc, char** argv) {
  using namespace tilesmith::cli;
  CLI::App app{
      "autotune-loop: tune GPU GEMM kernels overnight with an LLM (or built-in search) in the loop. Every candidate "
      "goes to <results>/history.csv, the fastest to <results>/best_config.json; run the same command again to "
      "resume after a stop, a crash or kill -9."};
  app.footer(
      "Examples:\n"
      "  autotune-loop --m 4096 --n 4096 --k 4096 --hours 8                    built-in search on the first GPU\n"
      "  autotune-loop --m 4096 --n 4096 --k 4096 --devices all --hours 8      every GPU, one worker process each\n"
      "  autotune-loop --m 4096 --n 4096 --k 4096 --llm-url http://127.0.0.1:8000/v1 \\\n"
      "      --llm-model Qwen/Qwen2.5-Coder-32B-Instruct --max-evals 400          an LLM proposes (vLLM server)\n"
      "  OPENAI_API_KEY=... autotune-loop --m 8192 --n 1024 --k 4096 --layout NT --proposer llm --llm-model gpt-5\n"
      "  autotune-loop --backend replay --replay-file gemm_RTX_3090.json.gz --max-evals 200   no GPU: recorded data\n"
      "  autotune-loop --m 8192 --n 8192 --k 8192 --max-evals 100 --results r8192 --warm-start r4096\n"
      "                                                         start from an earlier run's winners (r4096/best_config.json)\n"
      "  autotune-loop --m 4096 --n 4096 --k 4096 --max-evals 150 --prior results-h100\n"
      "                                                         start from a few of the fastest configs another GPU's\n"
      "                                                         search found (its history.csv)\n"
      "  mpirun -n 4 --map-by ppr:1:node autotune-loop --problems set.json --devices all --hours 8\n"
      "                                                         several hosts: rank 0 writes the results, every rank\n"
      "                                                         measures on its GPUs (a build with MPI; docs/scale-out.md)\n"
      "  autotune-loop --config tune.toml                                       settings from a file\n"
      "  autotune-loop history --results results                               what the run found\n"
      "  autotune-loop export --results results --out pkg                      the winners as a package a program\n"
      "                                                         links (libtilesmith_gemm, docs/package.md)\n"
      "  autotune-loop compile --arch sm_90                                     compile one config, no GPU\n"
      "  autotune-loop --list-devices\n"
      "Candidates are compiled and measured in worker processes (tilesmith-worker): a kernel that faults or hangs,\n"
      "or a compiler that crashes, costs one candidate (crash, timeout) and the run goes on.\n"
      "Stop with Ctrl-C (or SIGTERM): the candidates being measured are finished and recorded, the summary printed; a\n"
      "second Ctrl-C exits at once. Nothing recorded is lost either way.\n"
      "Exit codes: 0 ok, 1 failed (or no config passed validation), 2 bad usage or input files, 3 no GPU found,\n"
      "130 interrupted (SIGINT), 143 terminated (SIGTERM).");
  app.set_version_flag("--version", std::string("tilesmith ") + TILESMITH_VERSION);
  bool list = false, json = false;
  app.add_flag("--list-devices", list,
               "list GPU backends, their compilers and devices, as a worker process sees them (exit 3 when no GPU "
               "is found; with --in-process: as this process sees them)");
  app.add_flag("--json", json, "with --list-devices: print JSON");
  RunFlags run;
  add_run_flags(app, run);
  int exit_code = kExitOk;
  add_compile_command(app, exit_code);
  add_history_command(app, exit_code);
  add_report_command(app, exit_code);
  add_export_command(app, exit_code);
  once_under_a_launcher(app);
  // The examples above are the tuning run's; a subcommand's help shows its own (in its
  // description), not these (CLI11 copies the footer into each subcommand).
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    sub->footer("The tuning run's flags and examples: autotune-loop --help.");
  app.require_subcommand(0, 1);
  if (argc <= 1) {
    std::cout << app.help();
    return kExitUsage;
  }
  if (auto done = parse_command_line(app, argc, argv, "autotune-loop")) return *done;
  if (list) {
    ListDevicesOptions lo;
    lo.as_json = json;
    lo.in_process = run.evaluator.in_process;
    lo.worker_exe = run.evaluator.worker_exe;
    return list_devices(std::cout, lo);
  }
  if (!app.get_subcommands().empty()) return exit_code;
  return run_tuning(run);
}
