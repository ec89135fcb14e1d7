// The generated code of every template, pinned: each case of scripts/kernel_codegen_cases.txt
// (template | arch | problem flags | config) is compiled by autotune-loop (to PTX only for sm_*:
// --code-hash-only, the PTX being what the hash is of) and its code hash (the one tuned entries
// record, runtime/code_identity.h) compared with tests/kernel_code_hashes.txt.
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
  std::string hash;      // the code hash, or "failed"
  std::string compiler;  // as autotune-loop names it (empty where it failed)
  std::string why;       // the failure's first words
};

Compiled compile_case(const Case& c, const fs::path& scratch) {
  std::vector<std::string> argv{autotune_loop_exe().string(), "compile", "--template", c.tmpl, "--arch", c.arch, "--json",
                                "--code-hash-only"};
  std::stringstream flags(c.flags);
  for (std::string f; flags >> f;) argv.push_back(f);
  if (c.config != "defaults") argv.insert(argv.end(), {"--config", c.config});
  ProcessResult r = Child(argv, scratch).wait(180);
  Compiled out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (r.exit_code != 0 || j.is_discarded() || !j.contains("code_hash")) {
    out.hash = "failed";
    out.why = r.err.substr(0, 200);
    return out;
  }
  out.hash = j["code_hash"].get<std::string>();
  out.compiler = j.value("compiler", "");
  return out;
}

// The compiler each family's hashes were written with ("# compiler sm_: nvrtc 13.0") and the
// hashes ("HASH | case text").
struct Pinned {
  std::map<std::string, std::string> compilers;
  std::map<std::string, std::string> hashes;
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
    if (bar != std::string::npos) p.hashes[trim(line.substr(bar + 1))] = trim(line.substr(0, bar));
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

  // Compile every case, a few at a time (each is its own autotune-loop process).
  const fs::path scratch = fs::temp_directory_path() / ("tilesmith_code_hashes_" + std::to_string(::getpid()));
  std::vector<Compiled> compiled(cases.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  const unsigned workers = std::max(2u, std::thread::hardware_concurrency());
  for (unsigned w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (size_t i = next++; i < cases.size(); i = next++) compiled[i] = compile_case(cases[i], scratch);
    });
  for (auto& t : pool) t.join();
  fs::remove_all(scratch);

  // Which compiler each family has here (the first success names it).
  std::map<std::string, std::string> compiler_here;
  for (size_t i = 0; i < cases.size(); ++i)
    if (!compiled[i].compiler.empty()) compiler_here.emplace(cases[i].family(), compiled[i].compiler);

  if (const char* w = std::getenv("TILESMITH_WRITE_CODE_HASHES"); w && *w == '1') {
    std::ofstream out(pinned_file);
    out << "# The code hash of each case of scripts/kernel_codegen_cases.txt, as autotune-loop compile --json\n"
           "# gives it, checked by tests/cli/kernel_code_hashes_test.cpp; written by scripts/kernel_code_hashes.sh\n"
           "# (rewrite it with a change to kernels/ that is meant to change the generated code).\n";
    for (const auto& [family, compiler] : compiler_here) out << "# compiler " << family << ": " << compiler << "\n";
    for (size_t i = 0; i < cases.size(); ++i) out << compiled[i].hash << " | " << cases[i].text << "\n";
    std::printf("wrote %zu code hashes to %s\n", cases.size(), pinned_file.c_str());
    return;
  }

  const Pinned pinned = read_pinned(pinned_file);
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
  std::printf("%d of %zu cases checked against %s\n", checked, cases.size(), pinned_file.c_str());
  if (!changed_per_template.empty()) {
    std::string list;
    for (const auto& [t, n] : changed_per_template) list += " " + t + " (" + std::to_string(n) + ")";
    ADD_FAILURE() << "generated code changed in:" << list
                  << ". If that is meant, run scripts/kernel_code_hashes.sh and commit tests/kernel_code_hashes.txt with the "
                     "change, saying which templates' tuned entries it makes stale (bench-best --record-code-hashes "
                     "tells, entry by entry); if not, scripts/kernel_codegen_check.sh --only TEMPLATE shows the PTX diff.";
  }
}
