// autotune-loop export on results folders written here: a single problem's folder and a
// problem set's, compiled with NVRTC for the recorded architecture (skipped without it),
// and the folders it must refuse, each with a message that names the problem; where it
// may write (never into, above or below the results folder; --replace only over a package
// it wrote, unchanged: its manifest), with every refused tree left byte-identical; the
// vendor's time and spread carried into tuned.json.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "base/files.h"
#include "base/hash.h"
#include "gemmlib/dispatch.h"
#include "gemmlib/package.h"
#include "package/package_export.h"
#include "package/package_manifest.h"
#include "runtime/backend.h"
#include "runtime/candidate_compiler.h"
#include "tuner/loop/problem_set.h"
#include "tuner/records/journal.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

class PackageExport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tilesmith_export_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto lib = TemplateLibrary::embedded();
    ASSERT_TRUE(lib.ok()) << lib.status().message();
    lib_ = std::make_unique<TemplateLibrary>(std::move(*lib));
  }
  void TearDown() override { fs::remove_all(dir_); }

  Compiler* nvrtc() {
    if (!compiler_) {
      auto b = make_backend("cuda");
      if (!b.ok()) return nullptr;
      auto c = (*b)->compiler();
      if (!c.ok()) return nullptr;
      compiler_ = *c;
    }
    return compiler_.get();
  }

  static GemmProblem half_problem(std::int64_t m, std::int64_t n, std::int64_t k) {
    GemmProblem p;
    p.m = m;
    p.n = n;
    p.k = k;
    p.a_type = p.b_type = p.c_type = DType::kBF16;
    return p;
  }

  // An entry as the loop writes it, for a template of this build with its defaults.
  BestEntry entry(const std::string& tmpl_name, const GemmProblem& p, double median_ms,
                  const std::string& arch = "sm_90") {
    const KernelTemplate* t = lib_->find(tmpl_name);
    EXPECT_NE(t, nullptr) << tmpl_name;
    DeviceFacts d = nominal_facts_for_arch(arch);
    d.name = "NVIDIA H200";
    d.multiprocessors = 132;
    BestEntry e;
    e.device_fingerprint = d.fingerprint();
    to_json(e.device, d);
    e.template_name = tmpl_name;
    e.template_hash = t->source_hash();
    e.problem = p;
    e.config = t->defaults();
    e.metrics = {{"median_ms", median_ms}, {"tflops", p.flops() / median_ms / 1e9}};
    e.vendor_name = "cuBLASLt";
    e.vendor_median_ms = median_ms * 1.2;
    e.vendor_ratio = 1.2;
    e.environment = {{"compiler", nvrtc() ? nvrtc()->version() : "nvrtc"}};
    return e;
  }

  fs::path dir_;
  std::unique_ptr<TemplateLibrary> lib_;
  std::shared_ptr<Compiler> compiler_;
};

// Every entry under `root`: folders, files with a hash of their bytes, links with their
// target. Equal before and after: nothing was deleted, added or changed.
std::map<std::string, std::string> tree(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string rel = it->path().lexically_relative(root).generic_string();
    const fs::file_status st = it->symlink_status();
    if (fs::is_symlink(st)) out[rel] = "link -> " + fs::read_symlink(it->path()).string();
    else if (fs::is_directory(st)) out[rel] = "folder";
    else out[rel] = "file " + hash_hex(*read_file(it->path()));
  }
  return out;
}

#define REQUIRE_NVRTC() \
  if (!nvrtc()) GTEST_SKIP() << "NVRTC unavailable: " << (*make_backend("cuda"))->compiler().status().message()

TEST_F(PackageExport, SingleProblemFolderBecomesAPackageWithTheFastestEntry) {
  REQUIRE_NVRTC();
  const fs::path results = dir_ / "results";
  GemmProblem p = half_problem(512, 1024, 256);
  fs::create_directories(results);
  ASSERT_TRUE(write_best_config(results / "best_config.json",
                                {entry("gemm_hmma", p, 0.020), entry("gemm_decode", p, 0.050)})
                  .ok());
  ExportOptions o{results, dir_ / "pkg", "", false};
  auto r = export_package(o, *lib_, *nvrtc());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_EQ(r->problems[0].winner.template_name, "gemm_hmma");  // 0.020 ms beats 0.050
  EXPECT_EQ(r->problems[0].name, "m512_n1024_k256_bf16_NN");

  auto text = read_file(dir_ / "pkg" / "tuned.json");
  ASSERT_TRUE(text.ok());
  json t = json::parse(*text);
  EXPECT_EQ(t["schema"], "tilesmith.tuned/1");
  EXPECT_EQ(t["device"]["name"], "NVIDIA H200");
  EXPECT_EQ(t["device"]["arch"], "sm_90");
  EXPECT_EQ(t["device"]["multiprocessors"], 132);
  ASSERT_EQ(t["problems"].size(), 1u);
  const json& prob = t["problems"][0];
  EXPECT_EQ(prob["template"], "gemm_hmma");
  EXPECT_DOUBLE_EQ(prob["median_ms"].get<double>(), 0.020);
  EXPECT_DOUBLE_EQ(prob["vendor"]["median_ms"].get<double>(), 0.024);
  auto back = problem_from_json(prob["problem"]);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->key(), p.key());

  // The kernel's binary is there, its hash matches, its options are the render's.
  ASSERT_EQ(t["kernels"].size(), 1u);
  const json& k = t["kernels"][0];
  EXPECT_EQ(k["id"], prob["kernel"]);
  auto bin = read_file(dir_ / "pkg" / k["binary"].get<std::string>());
  ASSERT_TRUE(bin.ok());
  EXPECT_GT(bin->size(), 1000u);
  EXPECT_EQ(bin->substr(0, 4), std::string("\x7f" "ELF"));
  EXPECT_EQ(k["binary_hash"], short_hash(*bin));
  auto rk = lib_->find("gemm_hmma")->render(p, lib_->find("gemm_hmma")->defaults(),
                                            *device_facts_from_json(r->problems[0].winner.device));
  ASSERT_TRUE(rk.ok());
  EXPECT_EQ(k["options"].get<std::vector<std::string>>(), rk->options);
  EXPECT_EQ(prob["grid"].get<std::vector<std::uint32_t>>(),
            std::vector<std::uint32_t>(rk->grid.begin(), rk->grid.end()));

  // The template ships verbatim: loading it from the package gives the same source hash.
  auto shipped = TemplateLibrary::from_directory(dir_ / "pkg" / "kernels");
  ASSERT_TRUE(shipped.ok()) << shipped.status().message();
  ASSERT_NE(shipped->find("gemm_hmma"), nullptr);
  EXPECT_EQ(shipped->find("gemm_hmma")->source_hash(), t["templates"][0]["source_hash"]);
  EXPECT_FALSE(fs::exists(dir_ / "pkg" / "kernels" / "gemm_decode.hip"));  // only what the winners use
}

TEST_F(PackageExport, ProblemSetKeepsNamesCountsAndSharesOneBinaryPerKernel) {
  REQUIRE_NVRTC();
  const fs::path results = dir_ / "set";
  ProblemSet set;  // written as the set run writes it (problem_set_to_json)
  set.name = "decode";
  const std::vector<std::pair<std::string, GemmProblem>> problems = {
      {"qkv_t16", half_problem(16, 6144, 4096)}, {"o_t16", half_problem(16, 4096, 4096)},
      {"down_t16", half_problem(16, 4096, 14336)}};
  for (const auto& [name, p] : problems) {
    set.entries.push_back({name, 32, p});
    fs::create_directories(results / name);
    ASSERT_TRUE(write_best_config(results / name / "best_config.json", {entry("gemm_decode", p, 0.03)}).ok());
  }
  ASSERT_TRUE(write_file_atomic(results / kProblemSetFileName, problem_set_to_json(set).dump()).ok());
  auto r = export_package({results, dir_ / "pkg", "", false}, *lib_, *nvrtc());
  ASSERT_TRUE(r.ok()) << r.status().message();
  json t = json::parse(*read_file(dir_ / "pkg" / "tuned.json"));
  ASSERT_EQ(t["problems"].size(), 3u);
  for (std::size_t i = 0; i < problems.size(); ++i) {
    EXPECT_EQ(t["problems"][i]["name"], problems[i].first);
    EXPECT_EQ(t["problems"][i]["count"], 32);
  }
  // Same template, config, layout and types: one binary serves all three shapes.
  EXPECT_EQ(t["kernels"].size(), 1u);
  EXPECT_EQ(t["problems"][0]["kernel"], t["problems"][2]["kernel"]);
}

// A run stopped before every problem had a winner: refused by default (naming the
// problem), exported without it under skip_unfinished, which names what it left out.
TEST_F(PackageExport, SkipUnfinishedLeavesOutAndNamesTheProblemsWithoutAWinner) {
  REQUIRE_NVRTC();
  const fs::path results = dir_ / "set";
  ProblemSet set;
  set.name = "decode";
  const GemmProblem done = half_problem(16, 4096, 4096), late = half_problem(16, 4096, 14336);
  set.entries.push_back({"o_t16", 32, done});
  set.entries.push_back({"down_t16", 32, late});
  fs::create_directories(results / "o_t16");
  fs::create_directories(results / "down_t16");  // created by the run, never given a winner
  ASSERT_TRUE(write_best_config(results / "o_t16" / "best_config.json", {entry("gemm_decode", done, 0.03)}).ok());
  ASSERT_TRUE(write_file_atomic(results / kProblemSetFileName, problem_set_to_json(set).dump()).ok());

  auto refused = export_package({results, dir_ / "pkg", "", false}, *lib_, *nvrtc());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("down_t16/best_config.json does not exist"), std::string::npos)
      << refused.status().message();
  EXPECT_FALSE(fs::exists(dir_ / "pkg"));

  ExportOptions o{results, dir_ / "pkg", "", false};
  o.skip_unfinished = true;
  auto r = export_package(o, *lib_, *nvrtc());
  ASSERT_TRUE(r.ok()) << r.status().message();
  json t = json::parse(*read_file(dir_ / "pkg" / "tuned.json"));
  ASSERT_EQ(t["problems"].size(), 1u);
  EXPECT_EQ(t["problems"][0]["name"], "o_t16");
  bool named = false;
  for (const auto& n : r->notes) named |= n.find("left out") != std::string::npos && n.find("down_t16") != std::string::npos;
  EXPECT_TRUE(named) << "the notes do not name down_t16";

  // Nothing finished at all: still refused, saying so.
  fs::remove(results / "o_t16" / "best_config.json");
  o.out_dir = dir_ / "pkg2";
  auto none = export_package(o, *lib_, *nvrtc());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no problem of the set has a winner yet"), std::string::npos)
      << none.status().message();
}

// The contract of docs/package.md from both ends: what the exporter writes, the runtime
// library's reader takes whole, and its dispatch rule runs the tuned kernel for the tuned
// shape and the nearest valid one for another.
TEST_F(PackageExport, TheRuntimeLibraryReadsWhatExportWrites) {
  REQUIRE_NVRTC();
  const fs::path results = dir_ / "set";
  json set = {{"problems", json::array()}};
  const std::vector<std::pair<std::string, GemmProblem>> problems = {{"o_t16", half_problem(16, 4096, 4096)},
                                                                      {"big", half_problem(512, 1024, 256)}};
  for (const auto& [name, p] : problems) {
    json pj;
    to_json(pj, p);
    set["problems"].push_back({{"name", name}, {"count", 8}, {"folder", name}, {"problem", pj}});
    fs::create_directories(results / name);
    const std::string tmpl = p.m == 16 ? "gemm_decode" : "gemm_hmma";
    ASSERT_TRUE(write_best_config(results / name / "best_config.json", {entry(tmpl, p, 0.05)}).ok());
  }
  ASSERT_TRUE(write_file_atomic(results / "problem_set.json", set.dump()).ok());
  auto r = export_package({results, dir_ / "pkg", "", false}, *lib_, *nvrtc());
  ASSERT_TRUE(r.ok()) << r.status().message();

  auto pkg = gemmlib::read_package(dir_ / "pkg");
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  EXPECT_TRUE(pkg->notes.empty()) << pkg->notes.front();  // every template hashes as it was tuned
  EXPECT_EQ(pkg->schema, gemmlib::kTunedSchema);
  EXPECT_EQ(pkg->device.name, "NVIDIA H200");
  EXPECT_EQ(pkg->device.multiprocessors, 132);
  ASSERT_EQ(pkg->problems.size(), 2u);
  for (std::size_t i = 0; i < problems.size(); ++i) {
    const gemmlib::PackageProblem& pp = pkg->problems[i];
    EXPECT_EQ(pp.name, problems[i].first);
    EXPECT_EQ(pp.count, 8);
    EXPECT_EQ(pp.problem.key(), problems[i].second.key());
    EXPECT_EQ(pp.config, r->problems[i].winner.config);
    EXPECT_DOUBLE_EQ(pp.median_ms, 0.05);
    ASSERT_TRUE(pp.vendor_median_ms.has_value());
    const gemmlib::PackageKernel* k = pkg->find_kernel(pp.kernel_id);
    ASSERT_NE(k, nullptr);
    auto bin = gemmlib::read_kernel_binary(*pkg, *k);
    ASSERT_TRUE(bin.ok()) << bin.status().message();
  }
  DeviceFacts running = pkg->device.facts;
  auto exact = gemmlib::decide(*pkg, running, problems[1].second, {});
  ASSERT_TRUE(exact.ok()) << exact.status().message();
  EXPECT_EQ(exact->path, gemmlib::Path::kExact) << exact->reason;
  auto nearest = gemmlib::decide(*pkg, running, half_problem(24, 4096, 4096), {});
  ASSERT_TRUE(nearest.ok()) << nearest.status().message();
  EXPECT_EQ(nearest->path, gemmlib::Path::kNearest) << nearest->reason;
  ASSERT_NE(nearest->tuned, nullptr);
  EXPECT_EQ(nearest->tuned->name, "o_t16");
}

TEST_F(PackageExport, RefusesWhatItCannotShipAndLeavesNothingHalfWritten) {
  const fs::path results = dir_ / "results";
  GemmProblem p = half_problem(256, 256, 256);
  Compiler* c = nvrtc();
  REQUIRE_NVRTC();
  auto expect_refused = [&](const std::string& what, ExportOptions o = {}) {
    if (o.results_dir.empty()) o = {results, dir_ / "pkg", "", false};
    auto r = export_package(o, *lib_, *c);
    EXPECT_FALSE(r.ok());
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
    }
    EXPECT_FALSE(fs::exists(dir_ / "pkg" / "tuned.json"));
    for (const auto& f : fs::directory_iterator(dir_))
      EXPECT_EQ(f.path().filename().string().find(".partial"), std::string::npos) << f.path();
  };
  expect_refused("does not exist");  // no results folder
  fs::create_directories(results);
  expect_refused("neither problem_set.json");

  BestEntry changed = entry("gemm_hmma", p, 0.01);
  changed.template_hash = "0123456789abcdef";
  ASSERT_TRUE(write_best_config(results / "best_config.json", {changed}).ok());
  expect_refused("changed since it was recorded (source hash 0123456789abcdef then");
  // With a code hash: one that is not the kernel's today is refused, naming both.
  changed.code_hash = "fedcba9876543210";
  ASSERT_TRUE(write_best_config(results / "best_config.json", {changed}).ok());
  expect_refused("and so did this config's kernel (code hash fedcba9876543210 then");
  // The kernel's own (the source changed, the kernel did not): exported, with a note.
  {
    auto facts = device_facts_from_json(changed.device);
    ASSERT_TRUE(facts.ok());
    const KernelTemplate& t = *lib_->find("gemm_hmma");
    changed.code_hash = compile_candidate(*c, t, p, t.defaults(), *facts).evaluation.code_hash;
    ASSERT_FALSE(changed.code_hash.empty());
    ASSERT_TRUE(write_best_config(results / "best_config.json", {changed}).ok());
    auto r = export_package({results, dir_ / "pkg", "", false}, *lib_, *c);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const bool noted = std::any_of(r->notes.begin(), r->notes.end(), [](const std::string& n) {
      return n.find("but this config compiles to the same kernel") != std::string::npos;
    });
    EXPECT_TRUE(noted);
    fs::remove_all(dir_ / "pkg");
  }

  BestEntry replay = entry("gemm_hmma", p, 0.01);
  replay.device["backend"] = "replay";
  ASSERT_TRUE(write_best_config(results / "best_config.json", {replay}).ok());
  expect_refused("replay backend");

  // FP8 winners: the library's API has no FP8 types, so alone they are refused with the reason.
  GemmProblem f8 = p;
  f8.a_type = f8.b_type = DType::kE4M3;
  f8.c_type = DType::kBF16;
  ASSERT_TRUE(apply_layout_code("NT", f8).ok());
  BestEntry fp8 = entry("gemm_tma_half", f8, 0.01);
  ASSERT_TRUE(write_best_config(results / "best_config.json", {fp8}).ok());
  expect_refused("libtilesmith_gemm's API has no FP8 types");
  // Beside a problem the library can run, they are left out and named.
  ASSERT_TRUE(write_best_config(results / "best_config.json", {fp8, entry("gemm_hmma", p, 0.01)}).ok());
  {
    auto mixed = export_package({results, dir_ / "pkg", "", false}, *lib_, *c);
    ASSERT_TRUE(mixed.ok()) << mixed.status().message();
    ASSERT_EQ(mixed->problems.size(), 1u);
    EXPECT_EQ(mixed->problems[0].winner.problem.a_type, DType::kBF16);
    EXPECT_TRUE(std::any_of(mixed->notes.begin(), mixed->notes.end(),
                            [](const std::string& n) { return n.find("is an FP8 problem") != std::string::npos; }));
    fs::remove_all(dir_ / "pkg");
  }

  BestEntry a = entry("gemm_hmma", p, 0.01), b = entry("gemm_hmma", p, 0.02, "sm_80");
  ASSERT_TRUE(write_best_config(results / "best_config.json", {a, b}).ok());
  expect_refused("several devices");
  // A filter picks one of them.
  auto r = export_package({results, dir_ / "pkg", "sm_80", false}, *lib_, *c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(json::parse(*read_file(dir_ / "pkg" / "tuned.json"))["device"]["arch"], "sm_80");
  // An existing package is kept unless --replace.
  auto again = export_package({results, dir_ / "pkg", "sm_90", false}, *lib_, *c);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("--replace"), std::string::npos);
  EXPECT_EQ(json::parse(*read_file(dir_ / "pkg" / "tuned.json"))["device"]["arch"], "sm_80");
  auto replaced = export_package({results, dir_ / "pkg", "sm_90", true}, *lib_, *c);
  ASSERT_TRUE(replaced.ok()) << replaced.status().message();
  EXPECT_EQ(json::parse(*read_file(dir_ / "pkg" / "tuned.json"))["device"]["arch"], "sm_90");

  // A set whose problem has no winner yet names it.
  fs::remove_all(results);
  fs::create_directories(results);
  json pj;
  to_json(pj, p);
  ASSERT_TRUE(write_file_atomic(results / "problem_set.json",
                                json{{"problems", {{{"name", "late"}, {"folder", "late"}, {"problem", pj}}}}}.dump())
                  .ok());
  fs::remove_all(dir_ / "pkg");
  expect_refused("late/best_config.json does not exist");
}

// --out is checked before anything is compiled: the results folder, a folder holding it,
// one inside it and a link to it are refused with or without --replace, and so is a
// folder export did not write; nothing in any of them changes.
TEST_F(PackageExport, RefusesToWriteIntoAboveOrBelowTheResultsFolderOrOverFoldersItDidNotWrite) {
  const fs::path results = dir_ / "runs" / "results";
  GemmProblem p = half_problem(256, 256, 256);
  fs::create_directories(results / "sub");
  ASSERT_TRUE(write_best_config(results / "best_config.json", {entry("gemm_hmma", p, 0.01)}).ok());
  ASSERT_TRUE(write_file_atomic(results / "history.csv", "row,config\n1,{}\n").ok());
  ASSERT_TRUE(write_file_atomic(results / "sub" / "notes.txt", "keep me").ok());
  ASSERT_TRUE(write_file_atomic(dir_ / "runs" / "other.txt", "beside the results").ok());
  fs::create_directories(dir_ / "mine");
  ASSERT_TRUE(write_file_atomic(dir_ / "mine" / "thesis.tex", "unrelated").ok());
  fs::create_directory_symlink(results, dir_ / "link_to_results");
  const auto before = tree(dir_);

  struct Case {
    fs::path out;
    bool replace;
    std::string says;
  };
  const std::vector<Case> cases = {
      {results, true, "is the results folder"},
      {results, false, "is the results folder"},
      {dir_ / "runs", true, "contains the results folder " + results.string()},
      {dir_, true, "contains the results folder"},
      {results / "sub", true, "is inside the results folder"},
      {results / "pkg", false, "is inside the results folder"},
      {dir_ / "link_to_results", true, "(" + results.string() + ") is the results folder"},
      {dir_ / "link_to_results" / "pkg", false, "is inside the results folder"},
      {dir_ / "mine", true, "is a folder that is not a package (it has no manifest.json and no tuned.json)"},
      {dir_ / "mine", false, "is a folder that is not a package"},
      {dir_ / "mine" / "thesis.tex", true, "exists and is not a folder"},
  };
  for (const auto& c : cases) {
    ExportOptions o{results, c.out, "", c.replace};
    Status st = check_export_destination(o);
    ASSERT_FALSE(st.ok()) << c.out;
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(st.message().find(c.says), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("--out " + c.out.string()), std::string::npos) << "names the folder: " << st.message();
    EXPECT_TRUE(st.message().find("choose another --out") != std::string::npos) << st.message();
    if (Compiler* comp = nvrtc()) {
      auto r = export_package(o, *lib_, *comp);
      ASSERT_FALSE(r.ok()) << c.out;
      EXPECT_EQ(r.status().message(), st.message());
    }
  }
  // Relative spellings resolve the same way.
  const fs::path cwd = fs::current_path();
  fs::current_path(results);
  EXPECT_FALSE(check_export_destination({".", ".", "", true}).ok());
  EXPECT_FALSE(check_export_destination({".", "..", "", true}).ok());
  EXPECT_FALSE(check_export_destination({".", "./", "", true}).ok());
  EXPECT_TRUE(check_export_destination({".", "../pkg", "", true}).ok());
  fs::current_path(cwd);
  EXPECT_EQ(tree(dir_), before) << "a refused export changed something";
}

// A package export wrote is replaced only while it holds exactly what its manifest lists,
// unchanged; anything else there is refused and left as it is.
TEST_F(PackageExport, ReplaceOnlyReplacesAnUnchangedPackageItWrote) {
  REQUIRE_NVRTC();
  const fs::path results = dir_ / "results", pkg = dir_ / "pkg";
  GemmProblem p = half_problem(256, 256, 256);
  fs::create_directories(results);
  ASSERT_TRUE(write_best_config(results / "best_config.json", {entry("gemm_hmma", p, 0.01)}).ok());
  auto first = export_package({results, pkg, "", false}, *lib_, *nvrtc());
  ASSERT_TRUE(first.ok()) << first.status().message();

  // The manifest lists every file with its size and CRC-32, and nothing else is there.
  json m = json::parse(*read_file(pkg / kManifestFileName));
  EXPECT_EQ(m["schema"], kManifestSchema);
  std::set<std::string> listed;
  for (const auto& f : m["files"]) {
    const std::string rel = f["path"];
    listed.insert(rel);
    auto bytes = read_file(pkg / rel);
    ASSERT_TRUE(bytes.ok()) << rel;
    EXPECT_EQ(f["bytes"].get<std::uint64_t>(), bytes->size()) << rel;
    EXPECT_EQ(f["crc32"], crc32_hex(*bytes)) << rel;
  }
  std::set<std::string> present;
  for (const auto& e : fs::recursive_directory_iterator(pkg))
    if (e.is_regular_file()) present.insert(e.path().lexically_relative(pkg).generic_string());
  present.erase(kManifestFileName);
  EXPECT_EQ(present, listed);
  EXPECT_TRUE(listed.count("tuned.json"));
  EXPECT_EQ(crc32_hex("123456789"), "cbf43926");  // the CRC-32 check value
  EXPECT_EQ(check_package_folder(pkg).kind, PackageFolderCheck::Kind::kIntact);

  // Without --replace an intact package is kept; with it, replaced.
  auto again = export_package({results, pkg, "", false}, *lib_, *nvrtc());
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("holds a package exported"), std::string::npos) << again.status().message();
  EXPECT_NE(again.status().message().find("give --replace"), std::string::npos);
  auto replaced = export_package({results, pkg, "", true}, *lib_, *nvrtc());
  ASSERT_TRUE(replaced.ok()) << replaced.status().message();
  EXPECT_TRUE(replaced->notes.empty() || replaced->notes.front().find("left") == std::string::npos);
  EXPECT_EQ(check_package_folder(pkg).kind, PackageFolderCheck::Kind::kIntact);
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".old-"), std::string::npos) << e.path();
    EXPECT_EQ(e.path().filename().string().find(".partial-"), std::string::npos) << e.path();
  }
  const std::string binary = json::parse(*read_file(pkg / "tuned.json"))["kernels"][0]["binary"];

  // Each tampering is refused with --replace, naming what is wrong, and changes nothing.
  auto expect_refused = [&](const std::string& says) {
    const auto before = tree(dir_);
    auto r = export_package({results, pkg, "", true}, *lib_, *nvrtc());
    ASSERT_FALSE(r.ok()) << says;
    EXPECT_NE(r.status().message().find("--out " + pkg.string()), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("remove it yourself"), std::string::npos) << r.status().message();
    EXPECT_EQ(tree(dir_), before) << says;
  };
  const std::string tuned_text = *read_file(pkg / "tuned.json");
  ASSERT_TRUE(write_file_atomic(pkg / "notes.txt", "mine").ok());
  expect_refused("extra file notes.txt");
  fs::remove(pkg / "notes.txt");
  fs::create_directories(pkg / "kernels" / "extra");
  expect_refused("extra folder kernels/extra");
  fs::remove(pkg / "kernels" / "extra");
  fs::create_symlink(results / "best_config.json", pkg / "kernels" / "link.json");
  expect_refused("extra entry kernels/link.json (a symbolic link");
  fs::remove(pkg / "kernels" / "link.json");
  std::string edited = tuned_text;
  edited[edited.size() / 2] = edited[edited.size() / 2] == 'x' ? 'y' : 'x';  // same size, other bytes
  ASSERT_TRUE(write_file_atomic(pkg / "tuned.json", edited).ok());
  expect_refused("tuned.json changed since export");
  ASSERT_TRUE(write_file_atomic(pkg / "tuned.json", tuned_text).ok());
  const std::string binary_bytes = *read_file(pkg / binary);
  fs::remove(pkg / binary);
  expect_refused(binary + " is missing");
  ASSERT_TRUE(write_file_atomic(pkg / binary, binary_bytes).ok());
  EXPECT_EQ(check_package_folder(pkg).kind, PackageFolderCheck::Kind::kIntact);  // restored

  // A package of the previous version (no manifest) is not one this version can verify.
  const std::string manifest = *read_file(pkg / kManifestFileName);
  fs::remove(pkg / kManifestFileName);
  expect_refused("not a package this version can verify");
  ASSERT_TRUE(write_file_atomic(pkg / kManifestFileName, "{not json").ok());
  expect_refused("manifest.json cannot be used");
  ASSERT_TRUE(write_file_atomic(pkg / kManifestFileName, manifest).ok());

  // And the library reads the package with its manifest as without one.
  ASSERT_TRUE(gemmlib::read_package(pkg).ok());
}

// What the vendor measured travels into tuned.json (median and spread, from best_config.json
// or, for an older one, from the journal's vendor event), and a winner that did not beat
// the vendor is one the library sends to the vendor.
TEST_F(PackageExport, RecordsTheVendorTimeAndSpreadAndTheLibraryAppliesTheRule) {
  REQUIRE_NVRTC();
  const fs::path results = dir_ / "set";
  json set = {{"problems", json::array()}};
  const std::vector<std::pair<std::string, GemmProblem>> problems = {{"wins", half_problem(512, 1024, 256)},
                                                                      {"loses", half_problem(256, 512, 256)},
                                                                      {"old_folder", half_problem(1024, 512, 256)}};
  for (const auto& [name, p] : problems) {
    json pj;
    to_json(pj, p);
    set["problems"].push_back({{"name", name}, {"count", 4}, {"folder", name}, {"problem", pj}});
    fs::create_directories(results / name);
    BestEntry e = entry("gemm_hmma", p, 0.05);
    e.metrics["p20_ms"] = 0.0495;
    e.metrics["p80_ms"] = 0.0505;
    e.metrics["cv"] = 0.01;
    if (name == "loses") e.vendor_median_ms = 0.048;
    if (name != "old_folder") {
      e.vendor_p20_ms = *e.vendor_median_ms * 0.99;
      e.vendor_p80_ms = *e.vendor_median_ms * 1.01;
      e.vendor_cv = 0.008;
    } else {
      // best_config.json from before the spread was recorded; the journal has the event.
      Evaluation v;
      v.outcome = Outcome::kOk;
      v.timing.median_ms = *e.vendor_median_ms;
      v.timing.p20_ms = 0.0597;
      v.timing.p80_ms = 0.0603;
      v.timing.cv = 0.004;
      json ev{{"event", "vendor"}, {"session", 1}, {"name", "cuBLASLt"}};
      to_json(ev["evaluation"], v);
      ASSERT_TRUE(write_file_atomic(results / name / kJournalFileName,
                                    json{{"event", "session"}, {"session", 1}}.dump() + "\n" + ev.dump() + "\n")
                      .ok());
    }
    ASSERT_TRUE(write_best_config(results / name / "best_config.json", {e}).ok());
  }
  ASSERT_TRUE(write_file_atomic(results / "problem_set.json", set.dump()).ok());
  auto r = export_package({results, dir_ / "pkg", "", false}, *lib_, *nvrtc());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->problems[0].vs_vendor.runs_tuned());
  EXPECT_EQ(r->problems[1].vs_vendor.verdict, analysis::VendorVerdict::kVendorFaster);
  EXPECT_TRUE(r->problems[2].vs_vendor.runs_tuned());

  json t = json::parse(*read_file(dir_ / "pkg" / "tuned.json"));
  EXPECT_EQ(t["schema"], "tilesmith.tuned/1");
  const json& wins = t["problems"][0];
  EXPECT_DOUBLE_EQ(wins["p20_ms"].get<double>(), 0.0495);
  EXPECT_DOUBLE_EQ(wins["p80_ms"].get<double>(), 0.0505);
  EXPECT_DOUBLE_EQ(wins["cv"].get<double>(), 0.01);
  EXPECT_DOUBLE_EQ(wins["vendor"]["median_ms"].get<double>(), 0.06);
  EXPECT_DOUBLE_EQ(wins["vendor"]["p20_ms"].get<double>(), 0.06 * 0.99);
  EXPECT_DOUBLE_EQ(wins["vendor"]["cv"].get<double>(), 0.008);
  const json& old = t["problems"][2];
  EXPECT_DOUBLE_EQ(old["vendor"]["p20_ms"].get<double>(), 0.0597);
  EXPECT_DOUBLE_EQ(old["vendor"]["p80_ms"].get<double>(), 0.0603);

  auto pkg = gemmlib::read_package(dir_ / "pkg");
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  auto d = gemmlib::decide(*pkg, pkg->device.facts, problems[1].second, {});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->path, gemmlib::Path::kVendor) << d->reason;
  EXPECT_NE(d->reason.find("tuned kernel 0.0500 ms vs vendor 0.0480 ms at tuning: vendor faster"), std::string::npos)
      << d->reason;
  d = gemmlib::decide(*pkg, pkg->device.facts, problems[0].second, {});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->path, gemmlib::Path::kExact) << d->reason;
}

}  // namespace
}  // namespace tilesmith
