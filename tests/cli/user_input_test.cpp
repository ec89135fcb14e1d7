// What a user types that is wrong: numeric flags (every command), --config files, unknown
// flags, and --help of the subcommands. Each mistake ends with exit code 2 and one line on
// stderr naming the input and what is allowed, and leaves nothing on disk. The checks
// themselves (cli/flag_checks.h) are tested directly first.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/flag_checks.h"
#include "cli/run_flags.h"
#include "tests/cli/history_reader.h"
#include "tests/cli/process.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using namespace tilesmith::testing;
using cli::integer_at_least;
using cli::integer_from_to;
using cli::number_above;
using cli::number_at_least;

// The check's complaint about `value` ("" when it passes), and the value as it passes on.
std::string check(const CLI::Validator& v, std::string& value) { return v(value); }
std::string check(const CLI::Validator& v, const std::string& value) {
  std::string copy = value;
  return v(copy);
}

// ---------------------------------------------------------------- the checks

// A --config (compile, bench-best) over the template's defaults: what it leaves out is filled in and
// named; what it gives wins; bad JSON is an error naming it.
TEST(ConfigFlag, LeftOutParametersTakeTheTemplatesDefaultsAndAreNamed) {
  auto lib = TemplateLibrary::embedded();
  ASSERT_TRUE(lib.ok());
  const KernelTemplate& t = *lib->find("gemm_tma_half");
  std::vector<std::string> filled;
  auto c = cli::config_over_defaults(t, R"({"BLOCK_N": 192, "STAGES": 5})", &filled);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->at("BLOCK_N"), 192);
  EXPECT_EQ(c->at("STAGES"), 5);
  EXPECT_EQ(c->size(), t.defaults().size());
  EXPECT_EQ(filled.size(), t.defaults().size() - 2);
  EXPECT_NE(std::find(filled.begin(), filled.end(), "BLOCK_M=128"), filled.end());
  filled.clear();
  auto whole = cli::config_over_defaults(t, "", &filled);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, t.defaults());
  EXPECT_TRUE(filled.empty()) << "no --config: the defaults, nothing to name";
  EXPECT_FALSE(cli::config_over_defaults(t, "{bad", nullptr).ok());
}

// --b-dtype: B of the other FP8 type; any other mix is refused naming the rule.
TEST(ProblemFlags, BDtypeMixesFp8TypesOnly) {
  cli::ProblemFlags f;
  f.m = f.n = f.k = 64;
  f.dtype = "e4m3";
  f.b_dtype = "e5m2";
  f.layout = "NT";
  auto p = cli::to_problem(f);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->a_type, DType::kE4M3);
  EXPECT_EQ(p->b_type, DType::kE5M2);
  EXPECT_EQ(p->c_type, DType::kBF16);
  f.dtype = "bf16";
  auto bad = cli::to_problem(f);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("only the FP8 types"), std::string::npos) << bad.status().message();
}

TEST(FlagChecks, IntegersSayTheValueAndTheRangeInPlainNumbers) {
  const auto at_least_one = integer_at_least<std::int64_t>(1);
  EXPECT_EQ(check(at_least_one, "abc"), "'abc' is not a whole number; give an integer of 1 or more");
  EXPECT_EQ(check(at_least_one, "1.5"), "'1.5' is not a whole number; give an integer of 1 or more");
  EXPECT_EQ(check(at_least_one, ""), "'' is not a whole number; give an integer of 1 or more");
  EXPECT_EQ(check(at_least_one, "0"), "0 is too small; give an integer of 1 or more");
  EXPECT_EQ(check(at_least_one, "-5"), "-5 is too small; give an integer of 1 or more");
  EXPECT_EQ(check(at_least_one, "99999999999999999999"),
            "99999999999999999999 is too large; give an integer from 1 to 9223372036854775807");
  EXPECT_EQ(check(at_least_one, "4096"), "");

  EXPECT_EQ(check(integer_at_least(0), "3000000000"), "3000000000 is too large; give an integer from 0 to 2147483647")
      << "the flag's type limits it";
  EXPECT_EQ(check(integer_from_to(1, 1000), "5000"), "5000 is out of range; give an integer from 1 to 1000");
  EXPECT_EQ(check(integer_from_to(1, 1000), "0"), "0 is out of range; give an integer from 1 to 1000");
  EXPECT_EQ(check(integer_from_to(-1, 64), "-1"), "");
  EXPECT_EQ(check(integer_from_to(-1, 64), "-2"), "-2 is out of range; give an integer from -1 to 64");

  const auto seed = integer_at_least<std::uint64_t>(0);
  EXPECT_EQ(check(seed, "-1"), "-1 is too small; give an integer of 0 or more");
  EXPECT_EQ(check(seed, "18446744073709551615"), "");
  EXPECT_EQ(check(seed, "18446744073709551616"),
            "18446744073709551616 is too large; give an integer from 0 to 18446744073709551615");
}

// --race takes a margin as a percentage or a fraction, or off; anything else is refused
// with the value and what a good one looks like.
TEST(FlagChecks, ARaceMarginIsAPercentageAFractionOrOff) {
  EXPECT_DOUBLE_EQ(*cli::parse_race_margin("25%"), 0.25);
  EXPECT_DOUBLE_EQ(*cli::parse_race_margin(" 0.5 "), 0.5);
  EXPECT_EQ(*cli::parse_race_margin("off"), 0.0);
  EXPECT_EQ(*cli::parse_race_margin("0"), 0.0);
  EXPECT_EQ(cli::parse_race_margin("-1").status().message(), "'-1' is not a margin; give one as 25% or 0.25, or off");
  EXPECT_EQ(cli::parse_race_margin("abc").status().message(), "'abc' is not a margin; give one as 25% or 0.25, or off");
  EXPECT_EQ(cli::parse_race_margin("").status().message(), "'' is not a margin; give one as 25% or 0.25, or off");
  EXPECT_EQ(cli::parse_race_margin("2000%").status().message(),
            "'2000%' is too large a margin; give at most 1000% (10), or off");
}

// --retime-within takes a margin the same way, or all (every template re-timed).
TEST(FlagChecks, ARetimeReachIsAPercentageAFractionOrAll) {
  EXPECT_DOUBLE_EQ(**cli::parse_retime_within("25%"), 0.25);
  EXPECT_DOUBLE_EQ(**cli::parse_retime_within(" 0.1 "), 0.1);
  EXPECT_EQ(**cli::parse_retime_within("0"), 0.0);
  EXPECT_FALSE(cli::parse_retime_within("all")->has_value());
  EXPECT_EQ(cli::parse_retime_within("off").status().message(),
            "'off' is not a margin; give one as 25% or 0.25, or all");
  EXPECT_EQ(cli::parse_retime_within("-5%").status().message(),
            "'-5%' is not a margin; give one as 25% or 0.25, or all");
  EXPECT_EQ(cli::parse_retime_within("11").status().message(),
            "'11' is too large a margin; give at most 1000% (10), or all");
}

TEST(FlagChecks, APassingIntegerReachesCli11AsPlainDecimal) {
  // CLI11 reads 0100 as octal (64); the check hands on one hundred.
  std::string value = "0100";
  EXPECT_EQ(check(integer_at_least<std::int64_t>(1), value), "");
  EXPECT_EQ(value, "100");
  value = " +7 ";
  EXPECT_EQ(check(integer_at_least<std::int64_t>(1), value), "");
  EXPECT_EQ(value, "7");
  value = "-0";
  EXPECT_EQ(check(integer_at_least(0), value), "");
  EXPECT_EQ(value, "0");
}

TEST(FlagChecks, RealNumbersSayNumberNotInteger) {
  EXPECT_EQ(check(number_at_least(0), "-1"), "-1 is too small; give a number of 0 or more");
  EXPECT_EQ(check(number_at_least(0), "abc"), "'abc' is not a number; give a number of 0 or more");
  EXPECT_EQ(check(number_at_least(0), "inf"), "'inf' is not a finite number; give a number of 0 or more");
  EXPECT_EQ(check(number_at_least(0), "7.5"), "");
  EXPECT_EQ(check(number_at_least(0), "1e3"), "");
  EXPECT_EQ(check(number_above(0), "0"), "0 is too small; give a number greater than 0");
  EXPECT_EQ(check(number_above(0), "0.25"), "");
  EXPECT_EQ(check(cli::any_number(), "-2.5"), "");
  EXPECT_EQ(check(cli::any_number(), "x"), "'x' is not a number; give a number, e.g. 0.5");
}

TEST(FlagChecks, NearestNameIsOnlyOfferedForASlip) {
  const std::vector<std::string> keys{"max-evals", "candidates", "hours", "m", "n", "k", "llm-url"};
  EXPECT_EQ(cli::nearest_name("max_evals", keys), "max-evals");
  EXPECT_EQ(cli::nearest_name("candidtes", keys), "candidates");
  EXPECT_EQ(cli::nearest_name("llm.url", keys), "llm-url");
  EXPECT_EQ(cli::nearest_name("Hours", keys), "hours");
  EXPECT_EQ(cli::nearest_name("x", keys), "") << "one letter is no slip of another";
  EXPECT_EQ(cli::nearest_name("temperature", keys), "");
}

// ---------------------------------------------------------------- the commands

struct Mistake {
  std::vector<std::string> args;
  std::string message;  // the whole line on stderr, without the newline
};

// Runs each mistake: exit code 2, exactly `message` on stderr, nothing on stdout, and no
// results folder where the run would have written one.
void expect_refused(const std::vector<Mistake>& mistakes, const fs::path& dir, const fs::path& results) {
  for (const auto& m : mistakes) {
    std::string cmd;
    for (const auto& a : m.args) cmd += " " + a;
    auto r = run_process(m.args, dir);
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.out << r.err;
    EXPECT_EQ(r.err, m.message + "\n") << cmd;
    EXPECT_EQ(r.out, "") << cmd;
    EXPECT_FALSE(fs::exists(results)) << cmd << " created " << results;
  }
}

TEST(CliInput, NumericFlagsOfEveryCommandSayTheFlagTheValueAndTheRange) {
  const fs::path dir = fresh_dir("cli_input_numbers");
  const fs::path results = dir / "results";
  const std::string exe = autotune_loop_exe().string(), bench = bench_best_exe().string();
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> a{exe, "--m", "64", "--n", "64", "--k", "64", "--results", results.string()};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  expect_refused(
      {
          {{exe, "--m", "abc", "--n", "64", "--k", "64", "--results", results.string()},
           "autotune-loop: --m: 'abc' is not a whole number; give an integer of 1 or more"},
          {{exe, "--m", "0", "--n", "64", "--k", "64", "--results", results.string()},
           "autotune-loop: --m: 0 is too small; give an integer of 1 or more"},
          {{exe, "--m", "64", "--n", "-64", "--k", "64", "--results", results.string()},
           "autotune-loop: --n: -64 is too small; give an integer of 1 or more"},
          {{exe, "--m", "64", "--n", "64", "--k", "64.5", "--results", results.string()},
           "autotune-loop: --k: '64.5' is not a whole number; give an integer of 1 or more"},
          {run({"--candidates", "5000"}),
           "autotune-loop: --candidates: 5000 is out of range; give an integer from 1 to 1000"},
          {run({"--candidates", "0"}),
           "autotune-loop: --candidates: 0 is out of range; give an integer from 1 to 1000"},
          {run({"--max-evals", "-1"}), "autotune-loop: --max-evals: -1 is too small; give an integer of 0 or more"},
          {run({"--max-evals", "99999999999999999999"}),
           "autotune-loop: --max-evals: 99999999999999999999 is too large; give an integer from 0 to "
           "9223372036854775807"},
          {run({"--patience", "3000000000"}),
           "autotune-loop: --patience: 3000000000 is too large; give an integer from 0 to 2147483647"},
          {run({"--seed", "-1"}), "autotune-loop: --seed: -1 is too small; give an integer of 0 or more"},
          {run({"--hours", "-1"}), "autotune-loop: --hours: -1 is too small; give a number of 0 or more"},
          {run({"--hours", "abc"}), "autotune-loop: --hours: 'abc' is not a number; give a number of 0 or more"},
          {run({"--hours", "1e999"}),
           "autotune-loop: --hours: '1e999' is not a finite number; give a number of 0 or more"},
          {run({"--llm-timeout", "0"}), "autotune-loop: --llm-timeout: 0 is too small; give a number greater than 0"},
          {run({"--alpha", "one"}), "autotune-loop: --alpha: 'one' is not a number; give a number, e.g. 0.5"},
          {run({"--device", "x"}), "autotune-loop: --device: 'x' is not a whole number; give an integer of 0 or more"},
          {run({"--compile-threads", "-2"}),
           "autotune-loop: --compile-threads: -2 is out of range; give an integer from -1 to 64"},
          {{exe, "history", "--results", results.string(), "--top", "0"},
           "autotune-loop history: --top: 0 is out of range; give an integer from 1 to 100000"},
          {{exe, "report", "--results", results.string(), "--top", "many"},
           "autotune-loop report: --top: 'many' is not a whole number; give an integer from 1 to 1000"},
          {{exe, "compile", "--m", "0"}, "autotune-loop compile: --m: 0 is too small; give an integer of 1 or more"},
          {{bench, "--results", results.string(), "--drift-tolerance", "-1"},
           "bench-best: --drift-tolerance: -1 is too small; give a number of 0 or more"},
          {{bench, "--m", "abc"}, "bench-best: --m: 'abc' is not a whole number; give an integer of 1 or more"},
          {{bench, "--seed", "x"}, "bench-best: --seed: 'x' is not a whole number; give an integer of 0 or more"},
      },
      dir, results);
}

TEST(CliInput, UnknownFlagsAndSubcommandsAreNamedWithTheNearestOne) {
  const fs::path dir = fresh_dir("cli_input_flags");
  const fs::path results = dir / "results";
  const std::string exe = autotune_loop_exe().string();
  expect_refused(
      {
          {{exe, "--m", "64", "--n", "64", "--k", "64", "--max_evals", "50", "--results", results.string()},
           "autotune-loop: unknown flag --max_evals; did you mean --max-evals?"},
          {{exe, "--m", "64", "--n", "64", "--k", "64", "--frobnicate", "--results", results.string()},
           "autotune-loop: unknown flag --frobnicate (autotune-loop --help lists the flags)"},
          {{exe, "histroy", "--results", results.string()},
           "autotune-loop: unexpected argument 'histroy'; did you mean history?"},
          {{exe, "history", "--results", results.string(), "--tpo", "3"},
           "autotune-loop history: unknown flag --tpo; did you mean --top?"},
          {{bench_best_exe().string(), "--drift-tolerence", "5"},
           "bench-best: unknown flag --drift-tolerence; did you mean --drift-tolerance?"},
      },
      dir, results);
}

TEST(CliInput, FlagsThatDoNotFitTogetherLeaveNothingOnDisk) {
  const fs::path dir = fresh_dir("cli_input_combinations");
  const fs::path results = dir / "results";
  const std::string exe = autotune_loop_exe().string();
  expect_refused(
      {
          {{exe, "--m", "64", "--n", "64", "--k", "64", "--device", "0", "--devices", "0,1", "--results",
            results.string()},
           "autotune-loop: give --device N or --devices LIST, not both"},
          {{exe, "--m", "64", "--n", "64", "--k", "64", "--devices", "0,x", "--results", results.string()},
           "autotune-loop: --devices '0,x': 'x' is not a GPU ordinal (give ordinals separated by commas, e.g. 0,1, "
           "or 'all')"},
          {{exe, "--m", "64", "--n", "64", "--k", "64", "--replay-workers", "2", "--results", results.string()},
           "autotune-loop: --replay-workers goes with --backend replay"},
          {{bench_best_exe().string(), "--config", "{}", "--results", results.string()},
           "bench-best: give --config or --results, not both"},
          {{exe, "--m", "64", "--m", "128", "--results", results.string()},
           "autotune-loop: --m: given 2 times; give it once"},
      },
      dir, results);
}

// A config file for the run: `lines`, then a results folder that must not appear.
fs::path write_config(const fs::path& dir, const std::string& name, const std::string& lines, const fs::path& results) {
  const fs::path file = dir / name;
  std::ofstream(file) << "# settings a user repeats\n"
                      << "results = \"" << results.string() << "\"\n"
                      << lines;
  return file;
}

TEST(CliInput, ConfigFilesAreHeldToTheRulesOfTheFlags) {
  const fs::path dir = fresh_dir("cli_input_config");
  const fs::path results = dir / "results";
  const std::string exe = autotune_loop_exe().string();
  const std::string problem = "m = 64\nn = 64\nk = 64\n";  // lines 3-5
  std::vector<Mistake> mistakes;
  auto add = [&](const std::string& name, const std::string& lines, const std::string& says) {
    const fs::path file = write_config(dir, name, problem + lines, results);
    std::string message = says;
    for (std::size_t at; (at = message.find("FILE")) != std::string::npos;) message.replace(at, 4, file.string());
    mistakes.push_back({{exe, "--config", file.string()}, "autotune-loop: " + message});
  };
  add("underscore.toml", "max_evals = 50\n", "unknown key 'max_evals' in FILE line 6; did you mean 'max-evals'?");
  add("typo.toml", "candidtes = 16\n", "unknown key 'candidtes' in FILE line 6; did you mean 'candidates'?");
  add("far.toml", "temperature = 0.5\n",
      "unknown key 'temperature' in FILE line 6; the keys are the long flag names without the dashes (--help lists "
      "them)");
  add("junk.toml", "\nthis is not a setting\n",
      "'this is not a setting' in FILE line 7 is not a setting; write key = value (the keys are the long flag names "
      "without the dashes) or a # comment");
  add("brackets.toml", "[[[\n",
      "'[[[' in FILE line 6 is not a [section] header; write key = value (the keys are the long flag names without "
      "the dashes) or a # comment");
  add("section.toml", "[search]\ncandidates = 4\n",
      "unknown section [search] in FILE line 6; settings go at the top of the file, without a section (or under "
      "[default])");
  add("bare.toml", "quiet\n", "'quiet' in FILE line 6 is not a setting; write quiet = true");
  add("twice.toml", "candidates = 4\ncandidates = 16\n",
      "'candidates' is set twice in FILE, lines 6 and 7; give it once");
  add("number.toml", "candidates = lots\n",
      "--candidates: 'lots' is not a whole number; give an integer from 1 to 1000 (FILE line 6)");
  add("range.toml", "hours = -1\n", "--hours: -1 is too small; give a number of 0 or more (FILE line 6)");
  add("flag.toml", "no-vendor = maybe\n", "--no-vendor: 'maybe' is not true or false (FILE line 6)");
  add("member.toml", "dtype = fp64\n", "--dtype: fp64 not in {fp32,fp16,bf16,e4m3,e5m2} (FILE line 6)");
  add("empty.toml", "candidates =\n", "'candidates' in FILE line 6 has no value; write candidates = VALUE");
  add("list.toml", "template = [\"gemm_tiled\",\n", "the list of 'template' in FILE line 6 is not closed with ]");
  add("config.toml", "config = \"other.toml\"\n",
      "'config' in FILE line 6 cannot be set in a config file, only on the command line");
  mistakes.push_back({{exe, "--config", (dir / "absent.toml").string()},
                      "autotune-loop: --config: " + (dir / "absent.toml").string() + " does not exist"});
  expect_refused(mistakes, dir, results);

  // A flag on the command line wins over the file, but a bad value in the file is still
  // refused: the file is wrong either way.
  const fs::path file = write_config(dir, "overridden.toml", problem + "candidates = 0\n", results);
  auto r = run_process({exe, "--config", file.string(), "--candidates", "4"}, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "autotune-loop: --candidates: 0 is out of range; give an integer from 1 to 1000 (" + file.string() +
                       " line 6)\n");
  EXPECT_FALSE(fs::exists(results));
}

TEST(CliInput, AConfigFileInEveryAcceptedFormRuns) {
  REQUIRE_RECORDING();
  const fs::path dir = fresh_dir("cli_input_config_ok");
  const fs::path results = dir / "results";
  const fs::path file = dir / "tune.ini";
  std::ofstream(file) << "\xEF\xBB\xBF; an INI comment after a byte order mark\n"
                      << "# a TOML comment\n"
                      << "[default]\n"
                      << "backend = replay\n"
                      << "results = '" << results.string() << "'\n"
                      << "candidates = 4   # per generation\n"
                      << "generations = 0x10\n"
                      << "max-evals = 6\n"
                      << "retime = 0\n"
                      << "quiet = true\n"
                      << "replay-file = [  # a list over several lines\n"
                      << "  \"" << rtx3090_recording().string() << "\",\n"
                      << "]\n";
  auto r = run_process({autotune_loop_exe().string(), "--config", file.string(), "--progress", "none"}, dir);
  // 0x10 is no whole number in the flags' rules either.
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "autotune-loop: --generations: '0x10' is not a whole number; give an integer of 0 or more (" +
                       file.string() + " line 7)\n");
  std::string text = slurp(file);
  text.replace(text.find("0x10"), 4, "2");
  std::ofstream(file) << text;
  r = run_process({autotune_loop_exe().string(), "--config", file.string(), "--progress", "none"}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(read_csv_rows(results / "history.csv").size(), 6u) << "max-evals = 6 of 2 generations of 4";
}

// compile --config may give only some parameters: the others take the template's defaults, and
// the output says which; a name the template does not have is refused, named.
TEST(CliInput, CompileFillsWhatAPartialConfigLeavesOut) {
  const fs::path dir = fresh_dir("cli_input_compile_partial");
  const std::string exe = autotune_loop_exe().string();
  auto r = run_process({exe, "compile", "--arch", "gfx90a", "--template", "gemm_tiled", "--config", R"({"BLOCK_M": 32})",
                        "--m", "256", "--n", "256", "--k", "256", "--json"},
                       dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["config"]["BLOCK_M"], 32);
  EXPECT_EQ(j["config"].size(), j["defaults_filled"].size() + 1) << r.out;
  EXPECT_EQ(j["outcome"], "ok") << r.out;
  auto bad = run_process({exe, "compile", "--arch", "gfx90a", "--template", "gemm_tiled", "--config", R"({"BLOCK_Q": 32})"},
                         dir);
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_TRUE(contains(bad.err, "BLOCK_Q")) << bad.err;
}

// compile --input-hash-only renders and compiles nothing: its input hash is the one a compile of the
// same case reports, and it moves with the config and with the problem (the launch grid).
TEST(CliInput, InputHashOnlyCompilesNothingAndHashesWhatACompileIsGiven) {
  const fs::path dir = fresh_dir("cli_input_compile_input_hash");
  const std::string exe = autotune_loop_exe().string();
  auto run = [&](const char* config, const char* m, bool hash_only) {
    std::vector<std::string> argv{exe,  "compile", "--arch", "gfx90a", "--template", "gemm_tiled", "--config", config,
                                  "--m", m,         "--n",    "256",    "--k",        "256",        "--json"};
    if (hash_only) argv.push_back("--input-hash-only");
    auto r = run_process(argv, dir);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
  };
  const auto compiled = run(R"({"BLOCK_M": 32})", "256", false);
  const auto rendered = run(R"({"BLOCK_M": 32})", "256", true);
  ASSERT_FALSE(compiled.is_discarded() || rendered.is_discarded());
  EXPECT_FALSE(compiled.value("code_hash", "").empty()) << compiled.dump();
  EXPECT_EQ(rendered.value("code_hash", ""), "") << "nothing compiled: " << rendered.dump();
  EXPECT_EQ(rendered.value("compile_ms", -1.0), 0.0) << rendered.dump();
  EXPECT_EQ(rendered.value("input_hash", ""), compiled.value("input_hash", "x")) << rendered.dump();
  EXPECT_NE(run(R"({"BLOCK_M": 64})", "256", true).value("input_hash", ""), rendered.value("input_hash", ""));
  EXPECT_NE(run(R"({"BLOCK_M": 32})", "512", true).value("input_hash", ""), rendered.value("input_hash", ""));
}

TEST(CliInput, EachSubcommandsHelpIsItsOwn) {
  const fs::path dir = fresh_dir("cli_input_help");
  const std::string exe = autotune_loop_exe().string();
  auto top = run_process({exe, "--help"}, dir);
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_TRUE(contains(top.out, "Examples:")) << top.out;
  for (const char* sub : {"history", "report", "export", "compile"}) {
    auto r = run_process({exe, sub, "--help"}, dir);
    EXPECT_EQ(r.exit_code, 0) << sub << r.err;
    EXPECT_FALSE(contains(r.out, "Examples:")) << sub << " repeats the run's examples:\n" << r.out;
    EXPECT_FALSE(contains(r.out, "--list-devices")) << sub << ":\n" << r.out;
    EXPECT_TRUE(contains(r.out, std::string("Example: autotune-loop ") + sub)) << sub << ":\n" << r.out;
    // Its own flags only: a third of the run's help (154 lines) at most.
    EXPECT_LT(std::count(r.out.begin(), r.out.end(), '\n'), 50) << sub << ":\n" << r.out;
  }
  auto b = run_process({bench_best_exe().string(), "--help"}, dir);
  EXPECT_EQ(b.exit_code, 0);
  EXPECT_TRUE(contains(b.out, "bench-best --results results")) << b.out;
  EXPECT_FALSE(contains(b.out, "autotune-loop --m")) << b.out;
}

}  // namespace
}  // namespace tilesmith
