// The read floor without a GPU (runtime/read_floor.h): the sweep's kernels compile with
// NVRTC for sm_90 (every variant, the L2 hints and the bulk copies included) and sm_80,
// and with hipRTC for gfx90a (the portable variants only); the bytes a problem reads,
// the checksum the kernels reproduce, the percentage, the launch geometry and the JSON.
// The measurement itself is in gpu_evaluator_test (label gpu).

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/backend.h"
#include "runtime/read_floor.h"

namespace tilesmith {
namespace {

std::shared_ptr<Compiler> compiler_or_null(const char* backend) {
  auto b = make_backend(backend);
  auto c = (*b)->compiler();
  return c.ok() ? *c : nullptr;
}

// Compiles the sweep for `arch` and checks every entry is in the binary's report.
void expect_sweep_compiles(Compiler& compiler, const std::string& arch) {
  DeviceFacts dev = nominal_facts_for_arch(arch);
  if (arch.rfind("sm_", 0) == 0) dev.shared_per_block_optin = 227 * 1024;  // an H100/H200's opt-in limit
  const auto variants = read_floor_variants(dev);
  ASSERT_FALSE(variants.empty());
  CompileRequest req{"read_floor.hip", read_floor_source(variants), read_floor_compile_options(dev), arch,
                     variants.front().entry(), {}};
  const CompileResult r = compiler.compile(req);
  ASSERT_TRUE(r.ok) << arch << ":\n" << r.log;
  EXPECT_FALSE(r.binary.empty());
  for (const auto& v : variants) {
    // NVRTC's ptxas report names every entry it compiled; hipRTC has no such report.
    if (arch.rfind("sm_", 0) == 0) {
      EXPECT_NE(r.log.find(v.entry()), std::string::npos) << v.entry();
    }
  }
  // The binary holds each entry's name (the loader looks them up by name).
  for (const auto& v : variants) EXPECT_NE(r.binary.find(v.entry()), std::string::npos) << arch << " " << v.entry();
}

TEST(ReadFloor, SweepCompilesWithNvrtcForSm90WithHintsAndBulkCopies) {
  auto nvrtc = compiler_or_null("cuda");
  if (!nvrtc) GTEST_SKIP() << "NVRTC unavailable";
  DeviceFacts dev = nominal_facts_for_arch("sm_90");
  dev.shared_per_block_optin = 227 * 1024;
  const auto variants = read_floor_variants(dev);
  int hints = 0, bulk = 0;
  for (const auto& v : variants) {
    hints += v.hint != 0;
    bulk += v.kind == ReadFloorVariant::Kind::kBulk;
  }
  EXPECT_GE(hints, 4);
  EXPECT_GE(bulk, 3);
  expect_sweep_compiles(*nvrtc, "sm_90");
}

TEST(ReadFloor, SweepCompilesWithNvrtcForSm80WithoutBulkCopies) {
  auto nvrtc = compiler_or_null("cuda");
  if (!nvrtc) GTEST_SKIP() << "NVRTC unavailable";
  for (const auto& v : read_floor_variants(nominal_facts_for_arch("sm_80")))
    EXPECT_NE(v.kind, ReadFloorVariant::Kind::kBulk) << v.name();
  expect_sweep_compiles(*nvrtc, "sm_80");
}

TEST(ReadFloor, SweepCompilesWithHiprtcForGfx90aWithPlainLoadsOnly) {
  auto hiprtc = compiler_or_null("hip");
  if (!hiprtc) GTEST_SKIP() << "hipRTC unavailable";
  DeviceFacts amd = nominal_facts_for_arch("gfx90a");
  for (const auto& v : read_floor_variants(amd)) {
    EXPECT_EQ(v.hint, 0) << v.name();
    EXPECT_NE(v.kind, ReadFloorVariant::Kind::kBulk) << v.name();
  }
  const auto opts = read_floor_compile_options(amd);
  EXPECT_NE(std::find(opts.begin(), opts.end(), "-DTS_VENDOR_AMD=1"), opts.end());
  EXPECT_NE(std::find(opts.begin(), opts.end(), "-DTS_WARP_SIZE=64"), opts.end());
  expect_sweep_compiles(*hiprtc, "gfx90a");
}

TEST(ReadFloor, VariantsHaveUniqueNamesAndBulkStaysWithinSharedMemory) {
  DeviceFacts dev = nominal_facts_for_arch("sm_90");
  dev.shared_per_block_optin = 227 * 1024;
  std::set<std::string> names;
  for (const auto& v : read_floor_variants(dev)) {
    EXPECT_TRUE(names.insert(v.name()).second) << v.name();
    EXPECT_EQ(v.entry(), "ts_read_" + v.name());
    EXPECT_LE(std::int64_t(v.dynamic_shared_bytes()) + 1024, dev.shared_per_block_optin) << v.name();
  }
  // A device with less shared memory gets only the bulk variants that fit.
  dev.shared_per_block_optin = 100 * 1024;
  for (const auto& v : read_floor_variants(dev)) EXPECT_LE(v.dynamic_shared_bytes(), 99u * 1024) << v.name();
  // Names say what they are.
  ReadFloorVariant v;
  v.kind = ReadFloorVariant::Kind::kStrided;
  v.vec_bytes = 16;
  v.unroll = 8;
  v.threads = 256;
  v.blocks_per_sm = 4;
  v.hint = 3;
  EXPECT_EQ(v.name(), "stride16_u8_t256_b4_evict_pf256");
  v.kind = ReadFloorVariant::Kind::kBulk;
  v.stages = 6;
  v.chunk_bytes = 32 * 1024;
  v.blocks_per_sm = 1;
  v.hint = 0;
  EXPECT_EQ(v.name(), "bulk32k_s6_t256_b1");
  EXPECT_EQ(v.dynamic_shared_bytes(), 6u * 32 * 1024);
}

TEST(ReadFloor, BytesAreTheOperandsReadOnce) {
  GemmProblem p;
  p.m = 16;
  p.n = 6144;
  p.k = 4096;
  p.a_type = p.b_type = p.c_type = DType::kBF16;
  ASSERT_TRUE(apply_layout_code("NT", p).ok());
  ReadBytes b = read_floor_bytes(p);
  EXPECT_EQ(b.a, 16u * 4096 * 2);
  EXPECT_EQ(b.b, 4096u * 6144 * 2);  // the layout does not change what is read
  EXPECT_EQ(b.c, 0u);                // C is only written
  EXPECT_EQ(b.total(), 16u * 4096 * 2 + 4096u * 6144 * 2);
  p.beta = 0.5;
  p.c_type = DType::kF32;
  b = read_floor_bytes(p);
  EXPECT_EQ(b.c, 16u * 6144 * 4);  // read when beta != 0, in C's type
  p.a_type = p.b_type = DType::kF32;
  p.m = 1;
  p.n = 4096;
  EXPECT_EQ(read_floor_bytes(p).b, 64ull << 20);  // fp32 1x4096x4096: the 64 MiB of B
}

TEST(ReadFloor, ChecksumIsTheSumOfLittleEndianWordsWithTheLastPadded) {
  const unsigned char bytes[] = {0x01, 0x02, 0x03, 0x04, 0xff, 0xff, 0xff, 0xff, 0x10, 0x20, 0x30};
  // 0x04030201 + 0xffffffff + 0x00302010 (padded), modulo 2^32.
  const std::uint32_t want = std::uint32_t(0x04030201u + 0xffffffffu + 0x00302010u);
  EXPECT_EQ(read_floor_checksum(bytes, sizeof bytes), want);
  EXPECT_EQ(read_floor_checksum(bytes, 0), 0u);
  EXPECT_EQ(read_floor_checksum(bytes, 1), 0x01u);
  // Splitting a buffer at a word boundary adds up (the kernels sum segments apart).
  EXPECT_EQ(read_floor_checksum(bytes, 8) + read_floor_checksum(bytes + 8, 3), want);
  // A skipped or repeated word changes it.
  EXPECT_NE(read_floor_checksum(bytes, 8), want);
  EXPECT_NE(read_floor_checksum(bytes, 8) + read_floor_checksum(bytes + 4, 7), want);
}

TEST(ReadFloor, PercentOfFloorIsFloorOverKernel) {
  EXPECT_DOUBLE_EQ(percent_of_floor(0.0151, 0.0173), 100.0 * 0.0151 / 0.0173);
  EXPECT_DOUBLE_EQ(percent_of_floor(0.02, 0.02), 100.0);
  EXPECT_GT(percent_of_floor(0.0249, 0.0234), 100.0);  // a GEMM faster than the "floor": not a floor
  EXPECT_EQ(percent_of_floor(0, 0.02), 0.0);
  EXPECT_EQ(percent_of_floor(0.02, 0), 0.0);
}

TEST(ReadFloor, GridCoversTheDataOrTheMachine) {
  ReadBytes bytes{8192, 32u << 20, 0};
  ReadFloorVariant chunk;
  chunk.kind = ReadFloorVariant::Kind::kChunked;
  chunk.vec_bytes = 16;
  chunk.unroll = 4;
  chunk.threads = 256;  // 16 KiB per block
  // A: 8192 bytes -> 1 block; B: 32 MiB -> 2048 blocks.
  EXPECT_EQ(chunk.grid(bytes, 132), 1u + 2048u);
  // Segments shorter than a vector still launch one block (for the tails).
  EXPECT_EQ(chunk.grid(ReadBytes{3, 0, 0}, 132), 1u);
  ReadFloorVariant strided;
  strided.kind = ReadFloorVariant::Kind::kStrided;
  strided.blocks_per_sm = 4;
  EXPECT_EQ(strided.grid(bytes, 132), 528u);
  EXPECT_EQ(strided.grid(bytes, 0), 4u);
}

TEST(ReadFloor, JsonRoundTrip) {
  ReadFloor f;
  f.bytes = ReadBytes{131072, 33554432, 0};
  f.variant = "chunk16_u8_t256_pf256";
  f.timing.samples = 400;
  f.timing.median_ms = 0.0151;
  f.timing.min_ms = 0.0149;
  f.timing.p20_ms = 0.0150;
  f.timing.p80_ms = 0.0153;
  f.timing.cv = 0.012;
  f.timing.l2_flushed = true;
  f.gbps = 2230.5;
  f.compile_ms = 812;
  f.variants.push_back({"stride16_u4_t256_b4", Outcome::kOk, "", 0.0162, 0});
  f.variants.push_back({"bulk32k_s6_t256_b1", Outcome::kWrongResult, "the words read sum to ...", 0, 0});
  f.variants.push_back({"chunk16_u8_t256_pf256", Outcome::kOk, "", 0.0152, 0.0151});
  nlohmann::json j;
  to_json(j, f);
  EXPECT_EQ(j["bytes"], 131072 + 33554432);
  EXPECT_EQ(j["median_ms"], 0.0151);
  auto back = read_floor_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->bytes.total(), f.bytes.total());
  EXPECT_EQ(back->bytes.b, f.bytes.b);
  EXPECT_EQ(back->variant, f.variant);
  EXPECT_EQ(back->timing.median_ms, f.timing.median_ms);
  EXPECT_EQ(back->timing.samples, 400);
  EXPECT_TRUE(back->timing.l2_flushed);
  EXPECT_EQ(back->gbps, f.gbps);
  ASSERT_EQ(back->variants.size(), 3u);
  EXPECT_EQ(back->variants[1].outcome, Outcome::kWrongResult);
  EXPECT_EQ(back->variants[1].message, f.variants[1].message);
  EXPECT_EQ(back->variants[2].final_ms, 0.0151);
  // A wrong type is an error, not a silent default.
  j["timing"]["median_ms"] = "fast";
  EXPECT_FALSE(read_floor_from_json(j).ok());
  j = nlohmann::json::object();
  j["variants"] = 3;
  EXPECT_FALSE(read_floor_from_json(j).ok());
}

// The portable kernels (plain loads: every variant but the bulk copies; the L2 hints
// change only the load instruction) compiled as host C++ with a small emulation of the
// GPU's threads (one std::thread per GPU thread, a barrier per block) and run on buffers
// that end at a protected page: every variant's check sum must equal the operands' for
// segment sizes with and without tails, and none may read past a segment's end (that
// would fault here). This is the indexing the GPU runs, checked before it gets there.
TEST(ReadFloor, PortableKernelsReadEveryByteOnceWhenRunOnTheHost) {
#ifndef TILESMITH_HOST_CXX
  GTEST_SKIP() << "no host C++ compiler recorded at build time";
#else
  DeviceFacts dev = nominal_facts_for_arch("gfx90a");
  dev.multiprocessors = 3;
  const auto variants = read_floor_variants(dev);
  ASSERT_FALSE(variants.empty());
  const auto dir = std::filesystem::temp_directory_path() / ("ts_read_floor_host_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream k(dir / "kernels.h");
    k << R"(#pragma once
#include <atomic>
#include <barrier>
struct uint4 { unsigned x, y, z, w; };
struct uint2 { unsigned x, y; };
struct TsDim3 { unsigned x = 0, y = 1, z = 1; };
inline TsDim3 blockIdx, blockDim, gridDim;
inline thread_local TsDim3 threadIdx;
inline std::barrier<>* ts_block_barrier = nullptr;
inline void __syncthreads() { ts_block_barrier->arrive_and_wait(); }
template <class T> T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
template <class T> T atomicOr(T* p, T v) { return std::atomic_ref<T>(*p).fetch_or(v); }
#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
)";
    k << read_floor_source(variants);
  }
  {
    std::ofstream m(dir / "main.cpp");
    m << R"(#include "kernels.h"
#include <sys/mman.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
typedef void (*Kernel)(const unsigned char*, ts_u64, const unsigned char*, ts_u64, const unsigned char*, ts_u64, unsigned*, int, unsigned);
struct Variant { const char* name; Kernel fn; unsigned threads; };
// A buffer of `bytes` that ends where a protected page begins.
const unsigned char* guarded(ts_u64 bytes, unsigned seed) {
  if (bytes == 0) return nullptr;
  const long page = sysconf(_SC_PAGESIZE);
  const ts_u64 span = (bytes + page - 1) / page * page;
  auto* base = static_cast<unsigned char*>(mmap(nullptr, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  mprotect(base + span, page, PROT_NONE);
  unsigned char* p = base + (span - bytes);
  unsigned x = seed;
  for (ts_u64 i = 0; i < bytes; ++i) { x = x * 1664525u + 1013904223u; p[i] = (unsigned char)(x >> 24); }
  return p;
}
unsigned sum_of(const unsigned char* p, ts_u64 n) {
  unsigned s = 0;
  for (ts_u64 i = 0; i < n; ++i) s += unsigned(p[i]) << (8u * unsigned(i & 3u));
  return s;
}
int main(int argc, char** argv) {
  const Variant variants[] = {
)";
    for (const auto& v : variants)
      m << "    {\"" << v.name() << "\", " << v.entry() << ", " << v.threads << "},\n";
    m << R"(  };
  // (A, B, C) sizes: whole vectors; tails of every length; a C segment; tiny segments.
  const ts_u64 sizes[][3] = {{131072, 262144, 0}, {8194, 200006, 0}, {4099, 65541, 20003}, {3, 17, 0}, {0, 40961, 7}};
  int failures = 0;
  for (const auto& sz : sizes) {
    const unsigned char* p[3];
    unsigned want = 0;
    for (int i = 0; i < 3; ++i) { p[i] = guarded(sz[i], 7u + i); want += sum_of(p[i], sz[i]); }
    for (size_t vi = 0; vi < sizeof variants / sizeof variants[0]; ++vi) {
      const Variant& var = variants[vi];
      // The grid, as the host code computes it: argv holds "name=grid" per size set.
      unsigned grid = 0;
      char key[160];
      std::snprintf(key, sizeof key, "%s/%llu/%llu/%llu=", var.name, (unsigned long long)sz[0], (unsigned long long)sz[1], (unsigned long long)sz[2]);
      for (int a = 1; a < argc; ++a)
        if (std::strncmp(argv[a], key, std::strlen(key)) == 0) grid = unsigned(std::atoll(argv[a] + std::strlen(key)));
      if (grid == 0) { std::printf("FAIL %s: no grid for %s\n", var.name, key); ++failures; continue; }
      unsigned out[4] = {0, 0, 0, 0};
      gridDim.x = grid;
      blockDim.x = var.threads;
      // One thread per GPU thread of a block, made once and run through the blocks in turn (a
      // barrier before and after each block): threads made per block cost most of the test's time.
      std::barrier<> bar(var.threads);
      ts_block_barrier = &bar;
      std::barrier<> step(var.threads + 1);
      std::vector<std::thread> threads;
      for (unsigned t = 0; t < var.threads; ++t)
        threads.emplace_back([&, t] {
          threadIdx.x = t;
          for (unsigned b = 0; b < grid; ++b) {
            step.arrive_and_wait();  // blockIdx set
            var.fn(p[0], sz[0], p[1], sz[1], p[2], sz[2], out, 1, 0x9e3779b9u);
            step.arrive_and_wait();  // the block is through
          }
        });
      for (unsigned b = 0; b < grid; ++b) {
        blockIdx.x = b;
        step.arrive_and_wait();
        step.arrive_and_wait();
      }
      for (auto& th : threads) th.join();
      if (out[0] != want || out[2] != 0) {
        std::printf("FAIL %s sizes %llu/%llu/%llu: sum 0x%08x, want 0x%08x, flag %u\n", var.name, (unsigned long long)sz[0], (unsigned long long)sz[1], (unsigned long long)sz[2], out[0], want, out[2]);
        ++failures;
      }
    }
  }
  std::printf("%d failures\n", failures);
  return failures ? 1 : 0;
}
)";
  }
  const std::string exe = (dir / "emulate").string();
  const std::string build = std::string(TILESMITH_HOST_CXX) + " -std=c++20 -O1 -w -pthread -DTS_VENDOR_AMD=1 -I" +
                            dir.string() + " " + (dir / "main.cpp").string() + " -o " + exe + " > " +
                            (dir / "build.log").string() + " 2>&1";
  ASSERT_EQ(std::system(build.c_str()), 0) << [&] {
    std::ifstream in(dir / "build.log");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }();
  // Each variant's grid per size set, from ReadFloorVariant::grid (what the GPU launches).
  const std::uint64_t sizes[][3] = {{131072, 262144, 0}, {8194, 200006, 0}, {4099, 65541, 20003}, {3, 17, 0}, {0, 40961, 7}};
  std::ostringstream run;
  run << exe;
  for (const auto& sz : sizes)
    for (const auto& v : variants)
      run << ' ' << v.name() << '/' << sz[0] << '/' << sz[1] << '/' << sz[2] << '='
          << v.grid(ReadBytes{sz[0], sz[1], sz[2]}, dev.multiprocessors);
  run << " > " << (dir / "run.log").string() << " 2>&1";
  const int rc = std::system(run.str().c_str());
  std::ifstream in(dir / "run.log");
  std::stringstream log;
  log << in.rdbuf();
  EXPECT_EQ(rc, 0) << log.str();
  EXPECT_NE(log.str().find("0 failures"), std::string::npos) << log.str();
  std::filesystem::remove_all(dir);
#endif
}

}  // namespace
}  // namespace tilesmith
