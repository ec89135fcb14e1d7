#include <atomic>
#include <functional>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/process.h"
#include "base/files.h"
#include "tuner/records/best_config.h"

namespace tilesmith {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using testing::fresh_dir;

BestEntry entry(const std::string& device, const std::string& tmpl, std::int64_t m, double median) {
  BestEntry e;
  e.device_fingerprint = device + "|sm_90|580|13.0";
  e.device = json{{"name", device}, {"arch", "sm_90"}};
  e.template_name = tmpl;
  e.template_hash = "abcdef0123456789";
  e.problem.m = m;
  e.problem.n = e.problem.k = 1024;
  e.config = {{"BLOCK_M", 64}, {"BLOCK_N", 128}};
  e.metrics = json{{"median_ms", median}, {"source", "retime"}};
  e.vendor_ratio = 0.8;
  e.vendor_median_ms = median * 0.8;
  e.vendor_name = "cuBLAS";
  e.provenance = json{{"run_id", "r"}, {"history_row", 7}};
  e.environment = json{{"tilesmith_version", "0.1.0"}};
  e.retime = json::array({json{{"config_hash", "x"}, {"retime_median_ms", median}}});
  return e;
}

TEST(BestConfig, UpsertReplacesItsKeyAndKeepsOthers) {
  const fs::path path = fresh_dir("best_upsert") / "best_config.json";
  ASSERT_TRUE(upsert_best_config(path, entry("H200", "gemm_tiled", 4096, 5.0)).ok());
  ASSERT_TRUE(upsert_best_config(path, entry("A100", "gemm_tiled", 4096, 9.0)).ok());
  ASSERT_TRUE(upsert_best_config(path, entry("H200", "gemm_tiled", 2048, 1.0)).ok());
  ASSERT_TRUE(upsert_best_config(path, entry("H200", "gemm_tiled", 4096, 4.5)).ok());
  auto read = read_best_config(path);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  ASSERT_EQ(read->size(), 3u);
  EXPECT_EQ((*read)[0].metrics["median_ms"].get<double>(), 4.5);
  EXPECT_EQ((*read)[1].device.value("name", ""), "A100");
  EXPECT_EQ((*read)[2].problem.m, 2048);
  const BestEntry& e = (*read)[0];
  EXPECT_EQ(e.config, entry("H200", "gemm_tiled", 4096, 4.5).config);
  ASSERT_TRUE(e.vendor_median_ms);
  EXPECT_DOUBLE_EQ(*e.vendor_median_ms, 3.6);
  EXPECT_EQ(e.retime.size(), 1u);
  EXPECT_EQ(e.provenance["history_row"], 7);

  json raw = json::parse(std::ifstream(path));
  EXPECT_EQ(raw["schema"], kBestConfigSchema);
  EXPECT_EQ(raw["entries"][0]["key"], e.key());

  ASSERT_TRUE(remove_best_config_entry(path, e.key()).ok());
  read = read_best_config(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->size(), 2u);
  EXPECT_TRUE(remove_best_config_entry(path, "no such key").ok());
  EXPECT_TRUE(remove_best_config_entry(path.parent_path() / "absent.json", "k").ok());
}

// The vendor measurement's spread (for the never-slower-than-the-vendor rule) round-trips,
// and a file written before it was recorded reads with none.
TEST(BestConfig, VendorSpreadRoundTripsAndIsAbsentFromOlderFiles) {
  const fs::path path = fresh_dir("best_vendor_spread") / "best_config.json";
  BestEntry e = entry("H200", "gemm_tiled", 4096, 5.0);
  e.vendor_p20_ms = 3.9;
  e.vendor_p80_ms = 4.1;
  e.vendor_cv = 0.02;
  ASSERT_TRUE(upsert_best_config(path, e).ok());
  json raw = json::parse(std::ifstream(path));
  EXPECT_DOUBLE_EQ(raw["entries"][0]["vendor"]["p20_ms"].get<double>(), 3.9);
  auto read = read_best_config(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ((*read)[0].vendor_p20_ms, 3.9);
  EXPECT_EQ((*read)[0].vendor_p80_ms, 4.1);
  EXPECT_EQ((*read)[0].vendor_cv, 0.02);

  ASSERT_TRUE(upsert_best_config(path, entry("H200", "gemm_tiled", 4096, 5.0)).ok());
  raw = json::parse(std::ifstream(path));
  EXPECT_FALSE(raw["entries"][0]["vendor"].contains("p20_ms"));  // as older files have it
  read = read_best_config(path);
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE((*read)[0].vendor_p20_ms.has_value());
  EXPECT_FALSE((*read)[0].vendor_cv.has_value());
}

// The re-timing's verdict round-trips; a file written before there was one (no
// "certification" key) reads with none, and writing it back adds none.
TEST(BestConfig, CertificationRoundTripsAndIsAbsentFromOlderFiles) {
  const fs::path path = fresh_dir("best_certification") / "best_config.json";
  BestEntry e = entry("H200", "gemm_tiled", 4096, 5.0);
  e.certification =
      json{{"verdict", "tie"}, {"rounds", 16}, {"interval_ms", {4.9, 5.1}}, {"tied_with", {"y"}}};
  ASSERT_TRUE(upsert_best_config(path, e).ok());
  auto read = read_best_config(path);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_EQ((*read)[0].certification, e.certification);

  json raw = json::parse(std::ifstream(path));
  raw["entries"][0].erase("certification");
  ASSERT_TRUE(write_file_atomic(path, raw.dump()).ok());
  read = read_best_config(path);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_TRUE((*read)[0].certification.is_null());
  ASSERT_TRUE(write_best_config(path, *read).ok());
  EXPECT_FALSE(json::parse(std::ifstream(path))["entries"][0].contains("certification"));
}

// The kernel's code hash (runtime/code_identity.h) goes with the template's name and source
// hash; files written before it have none, and a code hash that is not a string is named.
TEST(BestConfig, CodeHashRoundTripsIsAbsentFromOlderFilesAndMustBeAString) {
  const fs::path path = fresh_dir("best_code_hash") / "best_config.json";
  BestEntry e = entry("H200", "gemm_tma_half", 4096, 5.0);
  e.code_hash = "0123456789abcdef";
  ASSERT_TRUE(upsert_best_config(path, e).ok());
  json raw = json::parse(std::ifstream(path));
  EXPECT_EQ(raw["entries"][0]["template"]["code_hash"], "0123456789abcdef");
  auto read = read_best_config(path);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_EQ((*read)[0].code_hash, e.code_hash);
  EXPECT_EQ((*read)[0].key(), e.key()) << "the key is the template's source hash, as before";

  raw["entries"][0]["template"].erase("code_hash");
  ASSERT_TRUE(write_file_atomic(path, raw.dump()).ok());
  read = read_best_config(path);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_TRUE((*read)[0].code_hash.empty());
  ASSERT_TRUE(write_best_config(path, *read).ok());
  EXPECT_FALSE(json::parse(std::ifstream(path))["entries"][0]["template"].contains("code_hash"));

  raw["entries"][0]["template"]["code_hash"] = 12;
  ASSERT_TRUE(write_file_atomic(path, raw.dump()).ok());
  read = read_best_config(path);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("\"code_hash\" is not a string"), std::string::npos) << read.status().message();
}

TEST(BestConfig, ReadersNeverSeeAHalfWrittenFile) {
  const fs::path dir = fresh_dir("best_atomic");
  const fs::path path = dir / "best_config.json";
  ASSERT_TRUE(upsert_best_config(path, entry("H200", "gemm_tiled", 4096, 100.0)).ok());
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, bad{0};
  std::thread reader([&] {
    while (!done.load()) {
      auto r = read_best_config(path);
      if (!r.ok() || r->size() != 1) ++bad;
      ++reads;
    }
  });
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(upsert_best_config(path, entry("H200", "gemm_tiled", 4096, 100.0 - i)).ok());
  done = true;
  reader.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(bad.load(), 0) << "a reader saw a partial or missing file";
  auto last = read_best_config(path);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ((*last)[0].metrics["median_ms"].get<double>(), 1.0);
  for (const auto& f : fs::directory_iterator(dir)) EXPECT_EQ(f.path().filename(), "best_config.json");
}

TEST(BestConfig, ForeignFilesAreRefused) {
  const fs::path path = fresh_dir("best_foreign") / "best_config.json";
  {
    std::ofstream(path) << "{\"BLOCK_M\": 64}";
  }
  auto r = read_best_config(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(kBestConfigSchema), std::string::npos);
  EXPECT_FALSE(upsert_best_config(path, entry("H200", "t", 1, 1)).ok()) << "never overwrite what we cannot read";
}

// An entry cut down by hand is refused in the file's terms (which entry, which field,
// what to do), never in the JSON library's; one without its "device" object still names
// the GPU through its fingerprint.
TEST(BestConfig, DamagedEntriesAreNamedPlainly) {
  const fs::path dir = fresh_dir("best_damaged");
  const fs::path path = dir / "best_config.json";
  ASSERT_TRUE(write_best_config(path, {entry("H200", "gemm_tiled", 4096, 5.0)}).ok());
  const json good = json::parse(*read_file(path));
  auto damaged = [&](const std::function<void(json&)>& edit) {
    json j = good;
    edit(j["entries"][0]);
    const fs::path p = dir / "edited.json";
    std::ofstream(p) << j.dump();
    auto r = read_best_config(p);
    return r.ok() ? std::string("ok") : r.status().message();
  };
  for (const char* field : {"config", "problem", "device_fingerprint", "template"}) {
    const std::string m = damaged([&](json& e) { e.erase(field); });
    EXPECT_NE(m.find(std::string("entry 0 has no \"") + field + "\""), std::string::npos) << m;
    EXPECT_EQ(m.find("json.exception"), std::string::npos) << m;
  }
  std::string m = damaged([](json& e) { e["config"] = "BLOCK_M=64"; });
  EXPECT_NE(m.find("\"config\" is not"), std::string::npos) << m;
  m = damaged([](json& e) { e["config"]["BLOCK_M"] = "sixty-four"; });
  EXPECT_NE(m.find("BLOCK_M"), std::string::npos) << m;
  EXPECT_EQ(m.find("json.exception"), std::string::npos) << m;
  m = damaged([](json& e) { e["metrics"] = 5; });
  EXPECT_EQ(m.find("json.exception"), std::string::npos) << m;

  json j = good;
  j["entries"][0].erase("device");
  std::ofstream(dir / "no_device.json") << j.dump();
  auto r = read_best_config(dir / "no_device.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->front().device.value("name", ""), "H200");
  EXPECT_EQ(r->front().device.value("arch", ""), "sm_90");
}

}  // namespace
}  // namespace tilesmith
