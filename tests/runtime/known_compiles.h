// Compiles the sweep tests of compile_test.cpp have already seen succeed, by input hash
// (candidate_input_hash: source, headers, options, target, the compiler's version and base
// options, and the launch): tests/known_compiles.txt. Under one compiler the same inputs compile
// the same way, so a test that asks only whether a candidate compiles renders every candidate
// (its rules and rendering are still checked) and compiles those whose inputs are not listed.
// A kernel edit or another compiler leaves lines stale, which costs time, never a wrong verdict;
// scripts/known_compiles.sh rewrites the file (TILESMITH_WRITE_KNOWN_COMPILES=1: every candidate
// compiled, this test's lines replaced by the successes).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "runtime/candidate_compiler.h"
#include "tests/test_paths.h"

namespace tilesmith::compile_test {

class KnownCompiles {
 public:
  // The file's lines for `test` (the gtest name); writing where TILESMITH_WRITE_KNOWN_COMPILES is 1.
  explicit KnownCompiles(std::string test) : test_(std::move(test)) {
    const char* w = std::getenv("TILESMITH_WRITE_KNOWN_COMPILES");
    writing_ = w && std::string(w) == "1";
    for (const auto& [hash, name] : entries())
      if (name == test_) known_.insert(hash);
  }
  KnownCompiles(const KnownCompiles&) = delete;
  KnownCompiles& operator=(const KnownCompiles&) = delete;

  // compile_candidate's result, or, for inputs listed as compiled before, the render with
  // outcome ok and nothing compiled (`skipped` says which).
  CompiledCandidate compile(Compiler& compiler, const KernelTemplate& t, const GemmProblem& p, const Config& c,
                            const DeviceFacts& dev, bool* skipped = nullptr) {
    if (skipped) *skipped = false;
    CompiledCandidate r = render_candidate(t, p, c, dev);
    if (r.evaluation.outcome != Outcome::kOk) return r;
    const std::string hash = candidate_input_hash(compiler, t, r.rendered);
    if (!writing_ && known_.count(hash)) {
      ++skipped_;
      if (skipped) *skipped = true;
      return r;
    }
    ++compiled_;
    r = compile_rendered(compiler, t, std::move(r));
    if (r.evaluation.outcome == Outcome::kOk) succeeded_.insert(hash);
    return r;
  }

  // Writing: this test's lines replaced by the inputs that compiled, the other tests' kept.
  ~KnownCompiles() {
    std::printf("%s: %d compiled, %d known to compile (tests/known_compiles.txt)\n", test_.c_str(), compiled_,
                skipped_);
    if (!writing_ || ::testing::Test::HasFailure()) return;
    std::vector<std::pair<std::string, std::string>> kept;
    for (auto& e : entries())
      if (e.second != test_) kept.push_back(std::move(e));
    for (const std::string& h : succeeded_) kept.emplace_back(h, test_);
    std::ofstream out(path());
    out << "# Input hashes of candidates the compile sweeps (tests/runtime/compile_test.cpp) saw compile, and\n"
           "# the test: a listed candidate is rendered, not compiled again (tests/runtime/known_compiles.h).\n"
           "# Written by scripts/known_compiles.sh; stale lines cost time only.\n";
    for (const auto& [hash, name] : kept) out << hash << " " << name << "\n";
  }

 private:
  static std::filesystem::path path() { return testing::source_dir() / "tests" / "known_compiles.txt"; }
  // The file's (input hash, test) lines, comments skipped.
  static std::vector<std::pair<std::string, std::string>> entries() {
    std::vector<std::pair<std::string, std::string>> e;
    std::ifstream in(path());
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream fields(line);
      std::string hash, name;
      fields >> hash >> name;
      e.emplace_back(hash, name);
    }
    return e;
  }

  std::string test_;
  bool writing_ = false;
  std::set<std::string> known_, succeeded_;
  int compiled_ = 0, skipped_ = 0;
};

}  // namespace tilesmith::compile_test
