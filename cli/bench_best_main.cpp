// bench-best: reproduce a tuned config (--config) or the entries of best_config.json on
// this GPU next to the vendor library, timed the same way in the same process.
// The work is in cli/bench_best.h; this file holds the flags.

#include "cli/bench_best.h"
#include "cli/exit_codes.h"
#include "cli/flag_checks.h"

int main(int argc, char** argv) {
  using namespace tilesmith::cli;
  CLI::App app{
      "bench-best: evaluate tuned kernel configs on this GPU (validated against the CPU reference, timed with warm-up, "
      "L2 flush and median) next to the vendor library, and compare with what was recorded."};
  app.footer(
      "Examples:\n"
      "  bench-best --results results                          every entry of results/best_config.json for this GPU\n"
      "  bench-best --best-config best_config.json --m 4096 --n 4096 --k 4096 --drift-tolerance 5\n"
      "  bench-best --m 4096 --n 4096 --k 4096 --config "
      "'{\"BLOCK_M\":128,\"BLOCK_N\":128,\"BLOCK_K\":8,\"THREAD_M\":8,\"THREAD_N\":8}'\n"
      "  bench-best --backend replay --replay-file gemm_RTX_3090.json.gz --results results   no GPU: recorded data\n"
      "  bench-best --results r/qkv_m16 --results r/down_m16 --fastest-only --json   several folders, one process\n"
      "  bench-best --m 4096 --n 4096 --k 4096 --dtype fp16 --epilogue gelu --epilogue-cost --template gemm_tma_half "
      "--config '{...}'\n"
      "  bench-best --vendor-only --m 4096 --n 4096 --k 4096 --dtype e4m3 --layout NT --scaling per_tensor "
      "--scale-a 0.5 --scale-b 2   the vendor alone\n"
      "Measured in a worker process (tilesmith-worker; --in-process for debugging), the vendor library and each\n"
      "problem's read floor (the fastest way found to read its operands once) in the same process and timed the same\n"
      "way; '% of floor' = floor / kernel time (above 100%: the floor was beaten, so it is no floor: flagged).\n"
      "An entry recorded before its template gained a parameter runs with the template's default (a note says so);\n"
      "one naming a parameter the template no longer has runs without it and is a mismatch.\n"
      "Exit codes: 0 ok; 1 an entry failed validation or evaluation (or drifted, with --fail-on-drift); 2 bad usage;\n"
      "3 no GPU; 4 no entry for this device, or an entry's template is missing, changed since it was recorded (and its\n"
      "config's kernel with it, or the entry has no code hash to tell) or lost a parameter the entry names.");
  app.set_version_flag("--version", std::string("tilesmith ") + TILESMITH_VERSION);
  BenchBestOptions o;
  add_problem_flags(app, o.problem, /*required=*/false);
  add_evaluator_flags(app, o.evaluator, /*several_devices=*/false);
  app.add_option("--template", o.template_name,
                 "template (with --config: default the only one that supports the problem; with --best-config: only "
                 "this template's entries)");
  auto* cfg = app.add_option("--config", o.config_json, "config as a JSON object of integers (needs --m --n --k); parameters it leaves out take the "
                                                   "template's defaults");
  auto* best = app.add_option("--best-config", o.best_configs,
                              "reproduce the entries of this best_config.json (docs/best_config.md; repeatable); "
                              "--m/--n/--k then select a problem")
                   ->take_all()
                   ->allow_extra_args(false);
  auto* results = app.add_option("--results", o.results,
                                 "a results folder: its best_config.json; a problem set's folder: each problem's "
                                 "(repeatable: every figure of all of them measured in this one process)")
                      ->allow_extra_args(false);
  cfg->excludes(best);
  cfg->excludes(results);
  app.add_flag("--fastest-only", o.fastest_only,
               "one entry per problem: the best recorded one by the objective its run was tuned for (the fastest "
               "median for --objective time; the others are left out)");
  app.add_flag("!--no-read-floor", o.read_floor,
               "skip the read floor (the fastest read of the operands found, runtime/read_floor.h) measured per problem");
  app.add_option("--read-floor-max-m", o.read_floor_max_m,
                 "measure the read floor only for problems with M at most this (default: every problem)");
  app.add_option("--kernels-dir", o.kernels_dir, "load templates from this folder instead of the built-in ones");
  app.add_option("--versus-kernels-dir", o.versus_kernels_dir,
                 "with --config: also measure the config compiled from the template of the same name in this folder "
                 "(e.g. a kernel change against the one before it), in the same process and the same alternating "
                 "rounds, and give their ratio with its interval (the versus line)");
  app.add_option("--seed", o.seed, "input data seed")->check(integer_at_least<std::uint64_t>(0))->capture_default_str();
  app.add_option("--drift-tolerance", o.drift_tolerance_pct,
                 "flag an entry whose median moved by more than this many percent from the recorded one")
      ->check(number_at_least(0))
      ->capture_default_str();
  app.add_flag("--fail-on-drift", o.fail_on_drift, "exit 1 when an entry drifts beyond the tolerance");
  app.add_flag("--epilogue-cost", o.epilogue_cost,
               "with --config and a fused --epilogue: also time the same config and the vendor library without it, "
               "in this process, in --rounds alternating rounds, and print what the epilogue costs each (the median "
               "of the rounds' fused / plain ratios, with its interval)");
  app.add_flag("--no-vendor", o.no_vendor, "skip the vendor library");
  app.add_flag("--vendor-only", o.vendor_only,
               "no config of ours: the vendor library (and the read floor) on the problem the flags give (--m --n --k, "
               "--dtype, ...), measured --rounds times more for its spread; e.g. a type no template serves yet (on replay: "
               "the recording's vendor time)");
  app.add_option("--rounds", o.rounds,
                 "then measure ours and the vendor again in this many alternating rounds and give their ratio round "
                 "by round, with its 95% interval: a clock that moves between measurements does not bias it "
                 "(0: skip; 6 or more for an interval)")
      ->check(integer_at_least<int>(0))
      ->capture_default_str();
  app.add_option("--rounds-max", o.rounds_max,
                 "after --rounds, measure two more rounds at a time while a ratio's 95% interval is wider than "
                 "--ratio-width, up to this many rounds (0: exactly --rounds). A GPU at its power cap gave 8-round "
                 "intervals 0.2 wide at M = 4096")
      ->check(integer_at_least<int>(0))
      ->capture_default_str();
  app.add_option("--ratio-width", o.ratio_width,
                 "the width (upper less lower bound) of the ratio's interval that --rounds-max measures towards")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--json", o.json, "print one JSON object instead of the tables");
  app.add_flag("--record-code-hashes", o.record_code_hashes,
               "no GPU needed: compile each entry of the --best-config/--results files for the device it was "
               "recorded on and compare the kernel with the one it measured (its code hash, docs/best_config.md); "
               "where the entry's template is still the one it was tuned with and it has no code hash yet, write "
               "the hash into its file, so that a later change to the template that leaves this kernel as it was "
               "keeps the entry current (the problem flags, --template and --fastest-only narrow the entries as for a "
               "measurement). One line per entry: recorded, same kernel, CHANGED, UNKNOWN or FAILED; exit 4 when "
               "a kernel changed or cannot be told");
  if (auto done = parse_command_line(app, argc, argv, "bench-best")) return *done;
  return bench_best(o);
}
