// The generated code of every template, pinned: each case of scripts/kernel_codegen_cases.txt
// (template | arch | problem flags | config) is compiled by autotune-loop (to PTX only for sm_*:
// --code-hash-only, the PTX being what the hash is of) and its code hash (the one tuned entries
// record, runtime/code_identity.h) compared with tests/kernel_code_hashes.txt.
// Only where its inputs moved: each case is first rendered (`--input-hash-only`, no compiler run),
// and a case whose input hash (the source, headers, options, target, the compiler's version and
// base options, the launch) is the one pinned beside its code hash has the pinned code by
// construction, the compilers being deterministic; the rest are compiled. A fresh clone of a
// consistent tree compiles none (the test took 143 s of CI's 2 cores compiling all 262 cases).
// A change to a shared kernel header that alters another template's code therefore fails here,
// on a machine without a GPU, instead of in that template's GPU test days later (a 3xTF32 helper
// once named its write-only outputs as the instruction's C and every gemm_mma kernel added
// garbage). A change that is meant rewrites the file: scripts/kernel_code_hashes.sh.
//
// The hashes hold for the compilers that wrote them (named in the file's header); a family
// (NVIDIA sm_*, AMD gfx*) whose compiler is missing or another version here is skipped, and the
// test says so.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/process.h"

namespace fs = std::filesystem;
using namespace tilesmith::testing;

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

struct Case {
  std::string text;  // the line of the cases file, trimmed: the key of its hash
  std::string tmpl, arch, flags, config;
  std::string family() const { return arch.rfind("sm_", 0) == 0 ? "sm_" : "gfx"; }
};

std::vector<Case> read_cases(const fs::path& file) {
  std::vector<Case> cases;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    Case c;
    c.text = line;
    std::vector<std::string> parts;
    std::stringstream ss(line);
    for (std::string p; std::getline(ss, p, '|');) parts.push_back(trim(p));
    if (parts.size() != 4) ADD_FAILURE() << file << ": not 'template | arch | flags | config': " << line;
    if (parts.size() != 4) continue;
    c.tmpl = parts[0], c.arch = parts[1], c.flags = parts[2], c.config = parts[3];
    cases.push_back(c);
  }
  return cases;
}

struct Compiled {
  std::string hash;        // the code hash, or "failed"
  std::string input_hash;  // the input hash (empty where the case did not render)
  std::string compiler;    // as autotune-loop names it (empty where it failed)
  std::string why;         // the failure's first words
  bool compiled = false;   // false: the pinned code hash stands for unchanged inputs
};

// autotune-loop compile on the case with `mode` (--code-hash-only or --input-hash-only): its JSON,
// or a discarded value with the reason in `why`.
nlohmann::json run_case(const Case& c, const fs::path& scratch, const char* mode, std::string& why) {
  std::vector<std::string> argv{autotune_loop_exe().string(), "compile", "--template", c.tmpl, "--arch", c.arch, "--json",
                                mode};
  std::stringstream flags(c.flags);
  for (std::string f; flags >> f;) argv.push_back(f);
  if (c.config != "defaults") argv.insert(argv.end(), {"--config", c.config});
  ProcessResult r = Child(argv, scratch).wait(180);
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (r.exit_code != 0 || j.is_discarded()) {
    why = r.err.substr(0, 200);
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  return j;
}

// The case's code hash: compiled, or, where `pinned_input` (the input hash pinned with it) is what
// the case renders to now, the pinned code hash without compiling.
Compiled check_case(const Case& c, const fs::path& scratch, const std::string& pinned_input,
                    const std::string& pinned_code) {
  Compiled out;
  if (!pinned_input.empty()) {
    auto j = run_case(c, scratch, "--input-hash-only", out.why);
    if (!j.is_discarded() && j.value("input_hash", "") == pinned_input) {
      out.hash = pinned_code;
      out.input_hash = pinned_input;
      out.compiler = j.value("compiler", "");
      return out;
    }
  }
  out.compiled = true;
  auto j = run_case(c, scratch, "--code-hash-only", out.why);
  if (j.is_discarded() || !j.contains("code_hash")) {
    out.hash = "failed";
    return out;
  }
  out.hash = j["code_hash"].get<std::string>();
  out.input_hash = j.value("input_hash", "");
  out.compiler = j.value("compiler", "");
  return out;
}

// The compiler each family's hashes were written with ("# compiler sm_: nvrtc 13.0") and the
// hashes ("CODE_HASH INPUT_HASH | case text"; a file from before input hashes has the code hash alone).
struct Pinned {
  std::map<std::string, std::string> compilers;
  std::map<std::string, std::string> hashes, inputs;
};

Pinned read_pinned(const fs::path& file) {
  Pinned p;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    if (line.rfind("# compiler ", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) p.compilers[trim(line.substr(11, colon - 11))] = trim(line.substr(colon + 1));
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const auto bar = line.find('|');
    if (bar == std::string::npos) continue;
    std::stringstream left(line.substr(0, bar));
    std::string code, input;
    left >> code >> input;
    const std::string text = trim(line.substr(bar + 1));
    p.hashes[text] = code;
    if (!input.empty()) p.inputs[text] = input;
  }
  return p;
}

}  // namespace

TEST(KernelCodeHashes, EveryTemplatesCodeIsWhatWasPinned) {
  const fs::path cases_file = source_dir() / "scripts" / "kernel_codegen_cases.txt";
  const fs::path pinned_file = source_dir() / "tests" / "kernel_code_hashes.txt";
  ASSERT_TRUE(fs::exists(autotune_loop_exe())) << autotune_loop_exe();
  const std::vector<Case> cases = read_cases(cases_file);
  ASSERT_FALSE(cases.empty()) << cases_file;

  // Writing compiles every case; checking, those whose inputs moved. A few at a time (each is its
  // own autotune-loop process).
  const char* write = std::getenv("TILESMITH_WRITE_CODE_HASHES");
  const bool writing = write && *write == '1';
  const Pinned pinned = writing ? Pinned{} : read_pinned(pinned_file);
  const fs::path scratch = fs::temp_directory_path() / ("tilesmith_code_hashes_" + std::to_string(::getpid()));
  std::vector<Compiled> compiled(cases.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  const unsigned workers = std::max(2u, std::thread::hardware_concurrency());
  auto pinned_of = [](const std::map<std::string, std::string>& m, const std::string& text) {
    auto it = m.find(text);
    return it == m.end() ? std::string() : it->second;
  };
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (size_t i = next++; i < cases.size(); i = next++)
        compiled[i] = check_case(cases[i], scratch, pinned_of(pinned.inputs, cases[i].text),
                                 pinned_of(pinned.hashes, cases[i].text));
    });
  for (auto& t : pool) t.join();
  fs::remove_all(scratch);

  // Which compiler each family has here (the first success names it).
  std::map<std::string, std::string> compiler_here;
  for (size_t i = 0; i < cases.size(); ++i)
    if (!compiled[i].compiler.empty()) compiler_here.emplace(cases[i].family(), compiled[i].compiler);

  if (writing) {
    std::ofstream out(pinned_file);
    out << "# The code hash and the input hash of each case of scripts/kernel_codegen_cases.txt, as autotune-loop\n"
           "# compile --json gives them, checked by tests/cli/kernel_code_hashes_test.cpp; written by\n"
           "# scripts/kernel_code_hashes.sh (rewrite it with a change to kernels/ that is meant to change the\n"
           "# generated code, and with one that changes only the inputs, so that the test compiles none again).\n";
    for (const auto& [family, compiler] : compiler_here) out << "# compiler " << family << ": " << compiler << "\n";
    for (size_t i = 0; i < cases.size(); ++i)
      out << compiled[i].hash << " " << (compiled[i].input_hash.empty() ? "-" : compiled[i].input_hash) << " | "
          << cases[i].text << "\n";
    std::printf("wrote %zu code hashes to %s\n", cases.size(), pinned_file.c_str());
    return;
  }

  ASSERT_FALSE(pinned.hashes.empty()) << pinned_file << " holds no hashes: run scripts/kernel_code_hashes.sh";
  std::map<std::string, std::string> skipped;  // family -> why
  for (const auto& [family, compiler] : pinned.compilers) {
    auto here = compiler_here.find(family);
    if (here == compiler_here.end())
      skipped[family] = "no " + compiler + " here";
    else if (here->second != compiler)
      skipped[family] = "pinned with " + compiler + ", this is " + here->second;
  }
  std::map<std::string, int> changed_per_template;
  int checked = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    if (skipped.count(c.family())) continue;
    auto p = pinned.hashes.find(c.text);
    if (p == pinned.hashes.end()) {
      ADD_FAILURE() << "no pinned hash for the case '" << c.text << "': run scripts/kernel_code_hashes.sh";
      continue;
    }
    ++checked;
    if (p->second != compiled[i].hash) {
      ++changed_per_template[c.tmpl];
      ADD_FAILURE() << c.tmpl << "'s code changed (" << p->second << " pinned, " << compiled[i].hash
                    << " now" << (compiled[i].why.empty() ? "" : ": " + compiled[i].why) << ") for the case\n  "
                    << c.text;
    }
  }
  for (const auto& [family, why] : skipped) std::printf("%s cases not checked: %s\n", family.c_str(), why.c_str());
  const auto recompiled = std::count_if(compiled.begin(), compiled.end(), [](const Compiled& c) { return c.compiled; });
  std::printf("%d of %zu cases checked against %s (%ld compiled, the rest with their pinned inputs)\n", checked,
              cases.size(), pinned_file.c_str(), static_cast<long>(recompiled));
  for (size_t i = 0, shown = 0; i < cases.size() && shown < 10; ++i)
    if (compiled[i].compiled && !skipped.count(cases[i].family())) {
      std::printf("  compiled: %s\n", cases[i].text.c_str());
      ++shown;
    }
  // Inputs that moved while the code stayed: still right, but compiled again on every run until rewritten.
  int stale_inputs = 0;
  for (size_t i = 0; i < cases.size(); ++i)
    stale_inputs += compiled[i].compiled && !skipped.count(cases[i].family()) &&
                    compiled[i].hash == pinned_of(pinned.hashes, cases[i].text);
  if (stale_inputs > 0)
    std::printf("%d cases compiled to their pinned code from other inputs: scripts/kernel_code_hashes.sh records the "
                "new inputs, so that the next run need not compile them\n", stale_inputs);
  if (!changed_per_template.empty()) {
    std::string list;
    for (const auto& [t, n] : changed_per_template) list += " " + t + " (" + std::to_string(n) + ")";
    ADD_FAILURE() << "generated code changed in:" << list
                  << ". If that is meant, run scripts/kernel_code_hashes.sh and commit tests/kernel_code_hashes.txt with the "
                     "change, saying which templates' tuned entries it makes stale (bench-best --record-code-hashes "
                     "tells, entry by entry); if not, scripts/kernel_codegen_check.sh --only TEMPLATE shows the PTX diff.";
  }
}
