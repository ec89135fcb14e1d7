#pragma once
// Writes tuned packages for the gemmlib tests exactly as docs/package.md describes them:
// gemm_tiled's source, description and the shared headers copied from the repository's
// kernels/, one kernel per distinct rendered option set, tuned.json with every field.
// Binaries are real cubins when a compiler is given, else placeholder bytes (hashed like
// real ones), which is all the reader and the dispatch rule look at.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/files.h"
#include "base/hash.h"
#include "registry/kernel_template.h"
#include "runtime/compiler.h"
#include "tests/test_paths.h"

namespace tilesmith::testing {

struct TunedEntry {
  std::string name;
  GemmProblem problem;
  Config config;
  double median_ms = 0.05;
  // The vendor's median at tuning: 1.2 x median_ms (the tuned kernel clearly faster)
  // unless given; a negative value writes "vendor": {"median_ms": null} (not measured).
  std::optional<double> vendor_ms = std::nullopt;
  // Relative p20-p80 widths written around each median; 0 writes no percentiles.
  double spread = 0, vendor_spread = 0;
};

// The device the test packages were "tuned" on.
inline DeviceFacts package_device() {
  DeviceFacts d = nominal_facts_for_arch("sm_90");
  d.name = "NVIDIA H200";
  d.multiprocessors = 132;
  d.driver_version = "CUDA 13.0";
  d.runtime_version = "nvrtc 13.0";
  return d;
}

inline GemmProblem fp32_problem(std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

inline Config tiled_config(std::int64_t block_m, std::int64_t block_n, std::int64_t thread = 4) {
  return Config{{"BLOCK_M", block_m}, {"BLOCK_N", block_n}, {"BLOCK_K", 8}, {"THREAD_M", thread}, {"THREAD_N", thread}};
}

// A fresh folder under the test's temporary directory.
inline std::filesystem::path fresh_dir(const std::string& name) {
  auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() /
             ("tilesmith_gemmlib_" + std::string(info->name()) + "_" + name + "_" + std::to_string(rd()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// Writes PKG and returns tuned.json as written (tests edit and rewrite it).
inline nlohmann::json write_package(const std::filesystem::path& pkg, const std::vector<TunedEntry>& entries,
                                    const DeviceFacts& device = package_device(), Compiler* compiler = nullptr) {
  namespace fs = std::filesystem;
  const fs::path kernels = source_dir() / "kernels";
  fs::create_directories(pkg / "kernels");
  nlohmann::json headers = nlohmann::json::array();
  auto header_texts = std::make_shared<KernelHeaders>();
  for (const auto& e : fs::directory_iterator(kernels)) {
    if (e.path().extension() != ".h") continue;
    fs::copy_file(e.path(), pkg / "kernels" / e.path().filename(), fs::copy_options::overwrite_existing);
    headers.push_back("kernels/" + e.path().filename().string());
    header_texts->emplace_back(e.path().filename().string(), *read_file(e.path()));
  }
  const std::string json_text = *read_file(kernels / "gemm_tiled.json");
  const std::string source = *read_file(kernels / "gemm_tiled.hip");
  write_text(pkg / "kernels/gemm_tiled.json", json_text);
  write_text(pkg / "kernels/gemm_tiled.hip", source);
  auto tmpl = KernelTemplate::from_text(json_text, source, "gemm_tiled.json", header_texts);
  EXPECT_TRUE(tmpl.ok()) << tmpl.status().message();

  nlohmann::json kernels_json = nlohmann::json::array(), problems = nlohmann::json::array();
  std::map<std::string, bool> written;
  for (const auto& e : entries) {
    auto r = tmpl->render(e.problem, e.config, device);
    if (!r.ok()) {
      ADD_FAILURE() << e.name << ": " << r.status().message();
      continue;
    }
    Hasher h;
    h.add_field(tmpl->source_hash()).add_field(r->arch);
    for (const auto& o : r->options) h.add_field(o);
    const std::string id = h.hex().substr(0, 16);
    if (!written[id]) {
      written[id] = true;
      std::string binary = "placeholder binary for " + id;
      if (compiler) {
        CompileRequest req{"gemm_tiled.hip", source, r->options, r->arch, r->entry,
                           std::vector<std::pair<std::string, std::string>>(header_texts->begin(), header_texts->end())};
        auto c = compiler->compile(req);
        EXPECT_TRUE(c.ok) << c.log;
        binary = c.binary;
      }
      write_text(pkg / "binaries" / (id + ".cubin"), binary);
      kernels_json.push_back({{"id", id}, {"template", "gemm_tiled"}, {"arch", r->arch}, {"entry", r->entry},
                              {"options", r->options}, {"binary", "binaries/" + id + ".cubin"},
                              {"binary_hash", short_hash(binary)}});
    }
    nlohmann::json problem;
    to_json(problem, e.problem);
    const double vendor_ms = e.vendor_ms.value_or(e.median_ms * 1.2);
    nlohmann::json vendor = {{"name", "cuBLASLt 13.1.0"},
                             {"median_ms", vendor_ms < 0 ? nlohmann::json(nullptr) : nlohmann::json(vendor_ms)}};
    nlohmann::json entry = {{"name", e.name}, {"count", 1}, {"problem", problem}, {"template", "gemm_tiled"},
                            {"config", config_to_json(e.config)}, {"kernel", id},
                            {"grid", r->grid}, {"block", r->block}, {"dynamic_shared_bytes", r->dynamic_shared_bytes},
                            {"workspace_bytes", r->workspace_bytes}, {"median_ms", e.median_ms}, {"tflops", 1.5}};
    if (e.spread > 0) {
      entry["p20_ms"] = e.median_ms * (1 - e.spread / 2);
      entry["p80_ms"] = e.median_ms * (1 + e.spread / 2);
    }
    if (e.vendor_spread > 0 && vendor_ms > 0) {
      vendor["p20_ms"] = vendor_ms * (1 - e.vendor_spread / 2);
      vendor["p80_ms"] = vendor_ms * (1 + e.vendor_spread / 2);
    }
    entry["vendor"] = vendor;
    problems.push_back(entry);
  }
  nlohmann::json facts;
  to_json(facts, device);
  nlohmann::json tuned = {
      {"schema", "tilesmith.tuned/1"},
      {"created", "2026-11-25T08:00:00.000Z"},
      {"tilesmith_version", "0.1.0"},
      {"device",
       {{"fingerprint", device.fingerprint()}, {"name", device.name}, {"arch", device.arch},
        {"multiprocessors", device.multiprocessors}, {"backend", device.backend}, {"driver", device.driver_version},
        {"runtime_compiler", device.runtime_version}, {"facts", facts}}},
      {"templates", {{{"name", "gemm_tiled"}, {"source_hash", tmpl->source_hash()},
                      {"source", "kernels/gemm_tiled.hip"}, {"description", "kernels/gemm_tiled.json"}}}},
      {"headers", headers},
      {"kernels", kernels_json},
      {"problems", problems}};
  write_text(pkg / "tuned.json", tuned.dump(2));
  return tuned;
}

inline void rewrite_tuned(const std::filesystem::path& pkg, const nlohmann::json& tuned) {
  write_text(pkg / "tuned.json", tuned.dump(2));
}

}  // namespace tilesmith::testing
