// Bad input, as a new user types it: every case runs the real executable (autotune-loop,
// its subcommands, bench-best, a config file) in a sandbox that holds a finished run and
// damaged files, and must
//   - exit with the code docs/reliability.md's table gives for it,
//   - say so in one message that starts with the program's name and names the input (and,
//     where a case lists it, what to do),
//   - leave every file of the sandbox byte-identical, create nothing and delete nothing
//     (the finished run's rows included).
// The list of cases is docs/reliability.md's "Bad input" table; keep the two together.

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/hash.h"
#include "runtime/replay/compressed_file.h"
#include "tests/cli/process.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using testing::autotune_loop_exe;
using testing::bench_best_exe;
using testing::contains;
using testing::run_process;
using testing::slurp;

struct Case {
  std::string name;
  std::string program;  // "autotune-loop" or "bench-best"
  std::vector<std::string> args;
  int exit_code = 2;
  std::vector<std::string> says;  // each must appear in the message
};

// path -> content hash (folders as "dir"), for everything under `root`.
std::map<std::string, std::string> tree(const fs::path& root) {
  std::map<std::string, std::string> t;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const std::string rel = fs::relative(e.path(), root).string();
    if (e.is_directory()) t[rel] = "dir";
    else t[rel] = hash_hex(slurp(e.path())) + " " + std::to_string(e.file_size());
  }
  return t;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

class BadInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(testing::rtx3090_recording())) return;
    root_ = testing::fresh_dir("bad_input");
    scratch_ = testing::fresh_dir("bad_input_scratch");
    box_ = root_ / "box";
    files_ = box_ / "files";
    run_ = box_ / "run";
    recording_ = testing::rtx3090_recording().string();
    // A finished run whose rows every case must leave alone.
    auto r = run_process({autotune_loop_exe().string(), "--backend", "replay", "--replay-file", recording_,
                          "--max-evals", "24", "--results", run_.string(), "--progress", "none", "-q"},
                         scratch_);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // A folder holding a finished run of another problem (the decode set's recordings).
    const fs::path decode = testing::source_dir() / "data" / "recordings" / "llama3_8b_bf16_decode";
    decode_recording_ = (decode / "gemm_decode_attn_out_t16_H200.json.gz").string();

    write(files_ / "not_json.json", "{\"m\": 64, \"n\":");
    write(files_ / "set_unknown_field.json",
          R"({"name": "s", "problems": [{"name": "a", "m": 64, "n": 64, "k": 64, "bogus": 1}]})");
    write(files_ / "unknown_key.toml", "max_evals = 50\n");
    write(files_ / "typo.toml", "candidtes = 16\n");
    write(files_ / "junk.toml", "max-evals = 50\nthis line is not a setting\n");
    write(files_ / "brackets.toml", "[[[\n");
    write(files_ / "bad_number.toml", "candidates = lots\n");
    const std::string rtx = slurp(recording_);
    write(files_ / "truncated.json.gz", rtx.substr(0, rtx.size() / 3));
    write(files_ / "garbage.json.gz", std::string("\x1f\x8b\x08 this is not deflate data at all", 36));
    write(files_ / "afile", "a file, not a folder\n");
    write(files_ / "not_a_package" / "notes.txt", "someone's notes\n");
    write(files_ / "corrupt_history" / "history.csv", "this,is\nnot,a tilesmith history\n");
    std::string best = slurp(run_ / "best_config.json");
    const auto at = best.find("\"config\"");
    ASSERT_NE(at, std::string::npos);
    std::string no_config = best;
    no_config.replace(at, 8, "\"konfig\"");
    write(files_ / "bc_noconfig.json", no_config);
    write(files_ / "bc_foreign.json", "{\"BLOCK_M\": 64}");
    fs::create_directories(files_ / "empty_dir");
    write(files_ / "set_count_zero.json", R"({"problems": [{"name": "a", "m": 16, "n": 64, "k": 64, "count": 0}]})");
    fs::create_directory_symlink(run_, files_ / "link_to_run");
    write(files_ / "not_a_run" / "notes.txt", "a folder with no results\n");
  }
  static void TearDownTestSuite() {
    if (!root_.empty()) fs::remove_all(root_);
    if (!scratch_.empty()) fs::remove_all(scratch_);
  }

  static std::string expand(std::string s) {
    const std::map<std::string, std::string> vars = {{"{files}", files_.string()},
                                                     {"{run}", run_.string()},
                                                     {"{box}", box_.string()},
                                                     {"{new}", (box_ / "new_results").string()},
                                                     {"{rtx}", recording_},
                                                     {"{decode}", decode_recording_},
                                                     {"{set}", (testing::source_dir() / "data" / "problems" /
                                                                "llama3_8b_bf16_decode.json").string()},
                                                     {"{test_kernels}", testing::test_kernels_dir().string()}};
    for (const auto& [k, v] : vars)
      for (auto p = s.find(k); p != std::string::npos; p = s.find(k)) s.replace(p, k.size(), v);
    return s;
  }

  static inline fs::path root_, scratch_, box_, files_, run_;
  static inline std::string recording_, decode_recording_;
};

std::vector<Case> cases() {
  const std::vector<std::string> replay = {"--backend", "replay", "--replay-file", "{rtx}"};
  auto with_replay = [&](std::vector<std::string> more) {
    std::vector<std::string> a = replay;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const std::string A = "autotune-loop", B = "bench-best";
  return {
      // The run's flags.
      {"m not a number", A, {"--m", "abc", "--n", "64", "--k", "64", "--results", "{new}"}, 2, {"--m", "abc"}},
      {"m zero", A, {"--m", "0", "--n", "64", "--k", "64", "--results", "{new}"}, 2, {"--m", "1"}},
      {"m negative", A, {"--m", "-5", "--n", "64", "--k", "64", "--results", "{new}"}, 2, {"--m", "-5"}},
      {"k missing", A, {"--m", "64", "--n", "64", "--results", "{new}"}, 2, {"--k"}},
      {"no problem", A, {"--results", "{new}"}, 2, {"give the problem"}},
      {"c-dtype unknown", A, {"--m", "64", "--n", "64", "--k", "64", "--c-dtype", "int8", "--results", "{new}"}, 2, {"--c-dtype", "int8"}},
      {"llm proposer without a model", A, {"--m", "64", "--n", "64", "--k", "64", "--proposer", "llm", "--results", "{new}"}, 2, {"--llm-model"}},
      {"replay file without the replay backend", A, {"--m", "64", "--n", "64", "--k", "64", "--replay-file", "{rtx}", "--results", "{new}"}, 2, {"--backend replay"}},
      {"problem set and a problem", A, {"--problems", "{set}", "--m", "16", "--n", "16", "--k", "16", "--results", "{new}"}, 2, {"leave out --m/--n/--k"}},
      {"problem set and generations", A, {"--problems", "{set}", "--generations", "3", "--results", "{new}"}, 2, {"--generations does not go with --problems"}},
      {"problem set with a count of 0", A, {"--problems", "{files}/set_count_zero.json", "--results", "{new}"}, 2, {"\"count\" must be a whole number of at least 1"}},
      {"problem set on replay with a kernels folder", A, {"--problems", "{set}", "--backend", "replay", "--replay-file", "{rtx}", "--kernels-dir", "{files}", "--results", "{new}"}, 2, {"--kernels-dir does not go with --backend replay"}},
      {"candidates too many", A, with_replay({"--candidates", "5000", "--results", "{new}"}), 2, {"--candidates", "5000", "1000"}},
      {"hours negative", A, with_replay({"--hours", "-1", "--results", "{new}"}), 2, {"--hours", "-1"}},
      {"max-evals not a number", A, with_replay({"--max-evals", "ten", "--results", "{new}"}), 2, {"--max-evals", "ten"}},
      {"dtype unknown", A, {"--m", "64", "--n", "64", "--k", "64", "--dtype", "fp64", "--results", "{new}"}, 2, {"--dtype", "fp64"}},
      {"layout unknown", A, {"--m", "64", "--n", "64", "--k", "64", "--layout", "XY", "--results", "{new}"}, 2, {"--layout", "XY"}},
      {"epilogue unknown", A, {"--m", "64", "--n", "64", "--k", "64", "--epilogue", "swish", "--results", "{new}"}, 2, {"--epilogue", "swish"}},
      {"flag misspelt", A, with_replay({"--max-eval", "5", "--results", "{new}"}), 2, {"--max-eval"}},
      {"problem file missing", A, {"--problem-file", "{files}/missing.json", "--results", "{new}"}, 2, {"missing.json"}},
      {"problem file not JSON", A, {"--problem-file", "{files}/not_json.json", "--results", "{new}"}, 2, {"not_json.json"}},
      {"problem set missing", A, {"--problems", "{files}/missing_set.json", "--results", "{new}"}, 2, {"missing_set.json"}},
      {"problem set unknown field", A, {"--problems", "{files}/set_unknown_field.json", "--results", "{new}"}, 2, {"bogus"}},
      {"config file missing", A, {"--config", "{files}/missing.toml", "--results", "{new}"}, 2, {"missing.toml"}},
      {"config key with underscores", A, with_replay({"--config", "{files}/unknown_key.toml", "--max-evals", "4", "--results", "{new}"}), 2, {"max_evals", "max-evals"}},
      {"config key misspelt", A, with_replay({"--config", "{files}/typo.toml", "--max-evals", "4", "--results", "{new}"}), 2, {"candidtes", "candidates"}},
      {"config junk line", A, with_replay({"--config", "{files}/junk.toml", "--max-evals", "4", "--results", "{new}"}), 2, {"junk.toml", "line 2"}},
      {"config brackets", A, with_replay({"--config", "{files}/brackets.toml", "--max-evals", "4", "--results", "{new}"}), 2, {"brackets.toml"}},
      {"config bad number", A, with_replay({"--config", "{files}/bad_number.toml", "--max-evals", "4", "--results", "{new}"}), 2, {"candidates", "lots"}},
      {"replay without a file", A, {"--backend", "replay", "--results", "{new}"}, 2, {"--replay-file"}},
      {"replay file missing", A, {"--backend", "replay", "--replay-file", "{files}/missing.json.gz", "--results", "{new}"}, 2, {"missing.json.gz"}},
      {"replay file truncated", A, {"--backend", "replay", "--replay-file", "{files}/truncated.json.gz", "--results", "{new}"}, 2, {"truncated.json.gz", "damaged"}},
      {"replay file garbage", A, {"--backend", "replay", "--replay-file", "{files}/garbage.json.gz", "--results", "{new}"}, 2, {"garbage.json.gz"}},
      {"replay folder empty", A, {"--backend", "replay", "--replay-file", "{files}/empty_dir", "--results", "{new}"}, 2, {"empty_dir", "no recording"}},
      {"problem the recording lacks", A, with_replay({"--m", "128", "--n", "128", "--k", "128", "--results", "{new}"}), 2, {"128x128x128"}},
      {"results is a file", A, with_replay({"--results", "{files}/afile"}), 2, {"afile", "is a file"}},
      {"results below a file", A, with_replay({"--results", "{files}/afile/sub"}), 2, {"afile"}},
      {"results of another problem", A, {"--backend", "replay", "--replay-file", "{decode}", "--max-evals", "4", "--results", "{run}"}, 2, {"{run}"}},
      {"results with a foreign history", A, with_replay({"--results", "{files}/corrupt_history"}), 2, {"history.csv"}},
      {"template unknown", A, with_replay({"--template", "gemm_nosuch", "--results", "{new}"}), 2, {"gemm_nosuch"}},
      {"proposer unknown", A, with_replay({"--proposer", "oracle", "--results", "{new}"}), 2, {"oracle"}},
      {"warm start missing", A, with_replay({"--warm-start", "{files}/missing_run", "--results", "{new}"}), 2, {"--warm-start", "missing_run"}},
      {"convergence probability over 1", A, with_replay({"--stop-when-converged", "5%/2", "--results", "{new}"}), 2, {"--stop-when-converged"}},
      {"device and devices", A, {"--m", "64", "--n", "64", "--k", "64", "--device", "0", "--devices", "0,1", "--results", "{new}"}, 2, {"--devices"}},
      {"devices not numbers", A, {"--m", "64", "--n", "64", "--k", "64", "--devices", "x,y", "--results", "{new}"}, 2, {"--devices"}},
      {"kernels folder missing", A, {"--m", "64", "--n", "64", "--k", "64", "--kernels-dir", "{files}/missing_dir", "--results", "{new}"}, 2, {"missing_dir"}},
      {"replay workers in process", A, with_replay({"--replay-workers", "2", "--in-process", "--results", "{new}"}), 2, {"--in-process"}},
      {"no GPU here", A, {"--m", "64", "--n", "64", "--k", "64", "--results", "{new}"}, 3, {"no GPU"}},
      // history, report, export, compile.
      {"history of a missing folder", A, {"history", "--results", "{files}/missing_dir"}, 2, {"missing_dir"}},
      {"history not ours", A, {"history", "--results", "{files}/corrupt_history"}, 2, {"history.csv"}},
      {"history top zero", A, {"history", "--results", "{run}", "--top", "0"}, 2, {"--top", "0"}},
      {"history cache below a file", A, {"history", "--results", "{run}", "--kernel-tuner-cache", "{files}/afile/x.json.gz"}, 2, {"afile"}},
      {"report of a missing folder", A, {"report", "--results", "{files}/missing_dir"}, 2, {"missing_dir"}},
      {"report not ours", A, {"report", "--results", "{files}/corrupt_history"}, 2, {"history.csv"}},
      {"export over the results", A, {"export", "--results", "{run}", "--out", "{run}", "--replace"}, 2, {"{run}"}},
      {"export over a parent of the results", A, {"export", "--results", "{run}", "--out", "{box}", "--replace"}, 2, {"{box}", "contains the results folder"}},
      {"export over a link to the results", A, {"export", "--results", "{run}", "--out", "{files}/link_to_run", "--replace"}, 2, {"is the results folder", "choose another --out"}},
      {"export without --out", A, {"export", "--results", "{run}"}, 2, {"--out"}},
      {"export of a folder with no results", A, {"export", "--results", "{files}/not_a_run", "--out", "{new}"}, 2, {"not_a_run", "holds neither problem_set.json"}},
      {"export into the results", A, {"export", "--results", "{run}", "--out", "{run}/pkg"}, 2, {"{run}"}},
      {"export over a folder that is no package", A, {"export", "--results", "{run}", "--out", "{files}/not_a_package", "--replace"}, 2, {"not_a_package"}},
      {"export of a missing folder", A, {"export", "--results", "{files}/missing_dir", "--out", "{new}"}, 2, {"missing_dir"}},
      {"export of replayed winners", A, {"export", "--results", "{run}", "--out", "{new}"}, 2, {"replay"}},
      {"compile for an unknown arch", A, {"compile", "--arch", "sm_12345"}, 2, {"sm_12345"}},
      {"compile an unknown template", A, {"compile", "--template", "gemm_nosuch", "--arch", "sm_90"}, 2, {"gemm_nosuch"}},
      {"compile a config that is not JSON", A, {"compile", "--config", "{bad", "--arch", "sm_90"}, 2, {"--config"}},
      {"compile a type the template lacks", A, {"compile", "--template", "gemm_tiled", "--dtype", "bf16", "--arch", "sm_90", "--m", "64", "--n", "64", "--k", "64"}, 2, {"gemm_tiled does not support data type bf16"}},
      {"compile a C type the template lacks", A, {"compile", "--kernels-dir", "{test_kernels}", "--template", "gemm_faulty", "--dtype", "bf16", "--c-dtype", "fp32", "--arch", "sm_90", "--m", "64", "--n", "64", "--k", "64"}, 2, {"gemm_faulty does not support C of type fp32"}},
      {"compile PTX for AMD", A, {"compile", "--arch", "gfx90a", "--ptx", "{files}/k.ptx"}, 2, {"only NVRTC"}},
      {"compile PTX without compiling", A, {"compile", "--arch", "gfx90a", "--input-hash-only", "--ptx", "{files}/k.ptx"},
       2, {"--input-hash-only"}},
      {"compile a rule on NUM_SMS without --sms", A, {"compile", "--template", "gemm_tma_half", "--arch", "sm_90", "--m", "512", "--n", "1280", "--k", "8192", "--dtype", "bf16", "--layout", "NT", "--config", R"({"BLOCK_N":80,"EPILOGUE_SMEM":0})"}, 2, {"NUM_SMS=0", "give --sms"}},
      // bench-best.
      {"bench-best with nothing to measure", B, {}, 2, {"give a config"}},
      {"bench-best missing folder", B, {"--results", "{files}/missing_dir"}, 2, {"missing_dir"}},
      {"bench-best entry without config", B, {"--best-config", "{files}/bc_noconfig.json"}, 2, {"bc_noconfig.json", "\"config\""}},
      {"bench-best foreign file", B, {"--best-config", "{files}/bc_foreign.json"}, 2, {"bc_foreign.json"}},
      {"bench-best config not JSON", B, {"--m", "64", "--n", "64", "--k", "64", "--config", "{bad"}, 2, {"--config"}},
      {"bench-best negative drift tolerance", B, {"--results", "{run}", "--drift-tolerance", "-1"}, 2, {"--drift-tolerance"}},
      {"bench-best m not a number", B, {"--m", "x", "--n", "64", "--k", "64", "--config", "{}"}, 2, {"--m", "x"}},
      {"bench-best config and results", B, {"--results", "{run}", "--config", "{}"}, 2, {"--config"}},
      {"bench-best epilogue cost without config", B, {"--results", "{run}", "--epilogue-cost"}, 2, {"--epilogue-cost"}},
      {"bench-best epilogue cost, no epilogue", B, {"--m", "64", "--n", "64", "--k", "64", "--config", "{}", "--epilogue-cost"}, 2,
       {"--epilogue-cost", "--epilogue"}},
      {"bench-best without a GPU", B, {"--results", "{run}"}, 3, {"--backend replay", "--replay-file"}},
  };
}

TEST_F(BadInput, EachExitsAsDocumentedSaysWhyAndChangesNothing) {
  REQUIRE_RECORDING();
  ASSERT_TRUE(fs::exists(run_ / "history.csv"));
  const auto rows_before = slurp(run_ / "history.csv");
  const auto all = cases();
  ASSERT_GE(all.size(), 40u);
  int failures = 0;
  for (const Case& c : all) {
    const auto before = tree(box_);
    std::vector<std::string> argv = {(c.program == "bench-best" ? bench_best_exe() : autotune_loop_exe()).string()};
    for (const auto& a : c.args) argv.push_back(expand(a));
    const testing::ProcessResult r = run_process(argv, scratch_, {}, 120);
    const auto after = tree(box_);
    std::vector<std::string> problems;
    if (r.exit_code != c.exit_code)
      problems.push_back("exit " + std::to_string(r.exit_code) + " (signal " + std::to_string(r.signal) + "), expected " +
                         std::to_string(c.exit_code));
    // One message from the program: its first line starts with the program's name (and
    // the subcommand's), and no other line does (a second error, a usage dump).
    const std::string prefix = c.program + (c.args.empty() || c.args[0].rfind("--", 0) == 0 ? "" : " " + c.args[0]) + ": ";
    std::size_t prefixed = 0;
    for (std::size_t p = 0; p < r.err.size();) {
      const std::size_t end = std::min(r.err.find('\n', p), r.err.size());
      if (r.err.compare(p, c.program.size(), c.program) == 0) ++prefixed;
      p = end + 1;
    }
    if (r.err.rfind(prefix, 0) != 0) problems.push_back("the message does not start with '" + prefix + "'");
    if (prefixed != 1) problems.push_back(std::to_string(prefixed) + " messages, expected one");
    for (const char* raw : {"json.exception", "terminate called", "what():", "1797693"})
      if (contains(r.err, raw)) problems.push_back(std::string("raw library text: ") + raw);
    for (const auto& s : c.says)
      if (!contains(r.err, expand(s))) problems.push_back("does not say '" + expand(s) + "'");
    if (before != after) {
      std::string diff;
      for (const auto& [k, v] : before)
        if (!after.count(k) || after.at(k) != v) diff += " changed/removed:" + k;
      for (const auto& [k, v] : after)
        if (!before.count(k)) diff += " created:" + k;
      problems.push_back("the files changed:" + diff);
    }
    if (!problems.empty()) {
      ++failures;
      std::string all_problems;
      for (const auto& p : problems) all_problems += "\n    - " + p;
      ADD_FAILURE() << "case '" << c.name << "':" << all_problems << "\n  stderr: " << r.err.substr(0, 1200);
    }
  }
  EXPECT_EQ(slurp(run_ / "history.csv"), rows_before);
  std::printf("%zu bad inputs, %d not as documented\n", all.size(), failures);
}

}  // namespace
}  // namespace tilesmith
