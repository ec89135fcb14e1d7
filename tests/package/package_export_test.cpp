// autotune-loop export on results folders written here: a single problem's folder and a
// problem set's, compiled with NVRTC for the recorded architecture (skipped without it),
// and the folders it must refuse, each with a message that names the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "base/files.h"
#include "base/hash.h"
#include "gemmlib/dispatch.h"
#include "gemmlib/package.h"
#include "package/package_export.h"
#include "runtime/backend.h"
#include "tuner/loop/problem_set.h"

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
  expect_refused("changed since it was tuned (source hash 0123456789abcdef then");

  BestEntry replay = entry("gemm_hmma", p, 0.01);
  replay.device["backend"] = "replay";
  ASSERT_TRUE(write_best_config(results / "best_config.json", {replay}).ok());
  expect_refused("replay backend");

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

}  // namespace
}  // namespace tilesmith
