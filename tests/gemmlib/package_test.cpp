// Reading a tuned package: a round trip of a package written to docs/package.md, the
// rejections (each with a message that names the problem), and where a kernel's binary
// comes from when the package's is missing or corrupt.

#include <gtest/gtest.h>

#include "gemmlib/kernel_binary.h"
#include "gemmlib/package.h"
#include "runtime/backend.h"
#include "tests/gemmlib/package_fixture.h"

namespace tilesmith::gemmlib {
namespace {

using testing::fp32_problem;
using testing::fresh_dir;
using testing::tiled_config;
using testing::TunedEntry;

std::vector<TunedEntry> two_entries() {
  return {{"square", fp32_problem(256, 256, 256), tiled_config(64, 64), 0.02},
          {"tall", fp32_problem(1024, 64, 128), tiled_config(128, 32), 0.03}};
}

// A compiler that records its requests and returns fixed bytes: the fallback's logic
// without NVRTC.
class FakeCompiler final : public Compiler {
 public:
  std::string version() const override { return "fake 1.0"; }
  Status check_target(const std::string&) const override { return {}; }
  std::vector<std::string> base_options(const std::string&) const override { return {}; }
  CompileResult compile(const CompileRequest& r) override {
    requests.push_back(r);
    CompileResult out;
    out.ok = true;
    out.binary = "compiled " + r.entry;
    return out;
  }
  std::vector<CompileRequest> requests;
};

TEST(GemmlibPackage, RoundTripOfAWrittenPackage) {
  auto dir = fresh_dir("pkg");
  testing::write_package(dir, two_entries());
  auto pkg = read_package(dir);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  EXPECT_EQ(pkg->schema, "tilesmith.tuned/1");
  EXPECT_EQ(pkg->device.name, "NVIDIA H200");
  EXPECT_EQ(pkg->device.arch, "sm_90");
  EXPECT_EQ(pkg->device.multiprocessors, 132);
  EXPECT_EQ(pkg->device.facts.multiprocessors, 132);
  EXPECT_EQ(pkg->device.facts.backend, "cuda");
  ASSERT_EQ(pkg->templates.size(), 1u);
  EXPECT_EQ(pkg->templates[0].tmpl.name(), "gemm_tiled");
  EXPECT_FALSE(pkg->templates[0].tmpl.source().empty());
  EXPECT_TRUE(pkg->notes.empty()) << pkg->notes.front();  // the shipped files hash as tuned.json says
  ASSERT_TRUE(pkg->headers);
  EXPECT_GE(pkg->headers->size(), 1u);
  ASSERT_EQ(pkg->kernels.size(), 2u);
  ASSERT_EQ(pkg->problems.size(), 2u);
  const PackageProblem& tall = pkg->problems[1];
  EXPECT_EQ(tall.name, "tall");
  EXPECT_EQ(tall.problem.key(), fp32_problem(1024, 64, 128).key());
  EXPECT_EQ(tall.config, tiled_config(128, 32));
  EXPECT_EQ(tall.grid[0], 2u);   // ceil_div(N=64, BLOCK_N=32)
  EXPECT_EQ(tall.grid[1], 8u);   // ceil_div(M=1024, BLOCK_M=128)
  EXPECT_EQ(tall.block[0], 256u);
  EXPECT_DOUBLE_EQ(tall.median_ms, 0.03);
  ASSERT_TRUE(tall.vendor_median_ms.has_value());
  EXPECT_DOUBLE_EQ(*tall.vendor_median_ms, 0.036);
  EXPECT_EQ(tall.vendor_name, "cuBLASLt 13.1.0");
  const PackageKernel* k = pkg->find_kernel(tall.kernel_id);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->entry, "gemm_tiled");
  EXPECT_NE(std::find(k->options.begin(), k->options.end(), "-DBLOCK_M=128"), k->options.end());
  auto bytes = read_kernel_binary(*pkg, *k);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(*bytes, "placeholder binary for " + k->id);
}

TEST(GemmlibPackage, UnknownFieldsAreIgnoredAndNullVendorIsAccepted) {
  auto dir = fresh_dir("pkg");
  auto tuned = testing::write_package(dir, two_entries());
  tuned["future_field"] = {{"x", 1}};
  tuned["problems"][0]["vendor"] = nullptr;
  testing::rewrite_tuned(dir, tuned);
  auto pkg = read_package(dir);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  EXPECT_FALSE(pkg->problems[0].vendor_median_ms.has_value());
}

TEST(GemmlibPackage, MissingTunedJsonIsRefusedWithWhatToDo) {
  auto dir = fresh_dir("empty");
  auto pkg = read_package(dir);
  ASSERT_FALSE(pkg.ok());
  EXPECT_EQ(pkg.status().code(), StatusCode::kNotFound);
  EXPECT_NE(pkg.status().message().find("has no tuned.json"), std::string::npos) << pkg.status().message();
  EXPECT_NE(pkg.status().message().find("autotune-loop export"), std::string::npos);
  EXPECT_EQ(read_package(dir / "missing").status().code(), StatusCode::kNotFound);
}

TEST(GemmlibPackage, WrongSchemaIsNamed) {
  auto dir = fresh_dir("pkg");
  auto tuned = testing::write_package(dir, two_entries());
  tuned["schema"] = "tilesmith.tuned/2";
  testing::rewrite_tuned(dir, tuned);
  auto pkg = read_package(dir);
  ASSERT_FALSE(pkg.ok());
  EXPECT_EQ(pkg.status().code(), StatusCode::kParseError);
  EXPECT_NE(pkg.status().message().find("'tilesmith.tuned/2'"), std::string::npos) << pkg.status().message();
  EXPECT_NE(pkg.status().message().find("tilesmith.tuned/1"), std::string::npos);
}

TEST(GemmlibPackage, MalformedJsonAndMissingFieldsAreNamed) {
  auto dir = fresh_dir("pkg");
  auto tuned = testing::write_package(dir, two_entries());
  testing::write_text(dir / "tuned.json", "{\"schema\": ");
  EXPECT_EQ(read_package(dir).status().code(), StatusCode::kParseError);
  tuned["problems"][1].erase("grid");
  testing::rewrite_tuned(dir, tuned);
  auto pkg = read_package(dir);
  ASSERT_FALSE(pkg.ok());
  EXPECT_NE(pkg.status().message().find("problems[1] has no \"grid\""), std::string::npos) << pkg.status().message();
}

TEST(GemmlibPackage, PathsLeavingThePackageAreRefused) {
  auto dir = fresh_dir("pkg");
  auto tuned = testing::write_package(dir, two_entries());
  auto edited = tuned;
  edited["kernels"][0]["binary"] = "binaries/../../outside.cubin";
  testing::rewrite_tuned(dir, edited);
  auto pkg = read_package(dir);
  ASSERT_FALSE(pkg.ok());
  EXPECT_EQ(pkg.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(pkg.status().message().find("'..'"), std::string::npos) << pkg.status().message();
  EXPECT_NE(pkg.status().message().find("kernels[0].binary"), std::string::npos);

  edited = tuned;
  edited["templates"][0]["source"] = "/etc/passwd";
  testing::rewrite_tuned(dir, edited);
  pkg = read_package(dir);
  ASSERT_FALSE(pkg.ok());
  EXPECT_NE(pkg.status().message().find("absolute path"), std::string::npos) << pkg.status().message();

  // A symbolic link inside the package that points outside it.
  auto outside = fresh_dir("outside");
  testing::write_text(outside / "x.h", "// outside\n");
  std::filesystem::create_symlink(outside / "x.h", dir / "kernels" / "link.h");
  edited = tuned;
  edited["headers"].push_back("kernels/link.h");
  testing::rewrite_tuned(dir, edited);
  pkg = read_package(dir);
  ASSERT_FALSE(pkg.ok());
  EXPECT_NE(pkg.status().message().find("outside the package"), std::string::npos) << pkg.status().message();
}

TEST(GemmlibPackage, MissingTemplateSourceIsRefused) {
  auto dir = fresh_dir("pkg");
  testing::write_package(dir, two_entries());
  std::filesystem::remove(dir / "kernels/gemm_tiled.hip");
  auto pkg = read_package(dir);
  ASSERT_FALSE(pkg.ok());
  EXPECT_EQ(pkg.status().code(), StatusCode::kNotFound);
  EXPECT_NE(pkg.status().message().find("kernels/gemm_tiled.hip"), std::string::npos) << pkg.status().message();
  EXPECT_NE(pkg.status().message().find("templates[0].source"), std::string::npos);
}

TEST(GemmlibPackage, ChangedTemplateFilesAreNotedNotRefused) {
  auto dir = fresh_dir("pkg");
  testing::write_package(dir, two_entries());
  std::ofstream(dir / "kernels/gemm_tiled.hip", std::ios::app) << "\n// edited after export\n";
  auto pkg = read_package(dir);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  ASSERT_EQ(pkg->notes.size(), 1u);
  EXPECT_NE(pkg->notes[0].find("changed after export"), std::string::npos) << pkg->notes[0];
}

TEST(GemmlibPackage, InconsistentReferencesAreRefused) {
  auto dir = fresh_dir("pkg");
  auto tuned = testing::write_package(dir, two_entries());
  tuned["problems"][0]["kernel"] = "0000000000000000";
  testing::rewrite_tuned(dir, tuned);
  auto pkg = read_package(dir);
  ASSERT_FALSE(pkg.ok());
  EXPECT_NE(pkg.status().message().find("which kernels[] does not list"), std::string::npos) << pkg.status().message();
}

// The launch of a package kernel as dispatch makes it for an exact problem.
Launch launch_of(const Package& pkg, std::size_t problem) {
  const PackageProblem& p = pkg.problems[problem];
  Launch l;
  l.tmpl = pkg.find_template(p.template_name);
  l.package_kernel = pkg.find_kernel(p.kernel_id);
  l.options = l.package_kernel->options;
  l.entry = l.package_kernel->entry;
  l.arch = "sm_90";
  l.kernel_key = p.kernel_id;
  return l;
}

TEST(GemmlibKernelBinary, ThePackageBinaryLoadsWhenItsHashMatches) {
  auto dir = fresh_dir("pkg");
  testing::write_package(dir, two_entries());
  auto pkg = read_package(dir);
  ASSERT_TRUE(pkg.ok());
  FakeCompiler fake;
  std::string loaded;
  std::vector<std::string> notes;
  auto origin = load_launch_kernel(
      *pkg, launch_of(*pkg, 0), [&]() -> Result<Compiler*> { return &fake; },
      [&](const std::string& b) { loaded = b; return Status(); }, notes);
  ASSERT_TRUE(origin.ok()) << origin.status().message();
  EXPECT_EQ(*origin, "package " + pkg->kernels[0].binary_path);
  EXPECT_TRUE(notes.empty());
  EXPECT_TRUE(fake.requests.empty());
  EXPECT_EQ(loaded, "placeholder binary for " + pkg->kernels[0].id);
}

TEST(GemmlibKernelBinary, CorruptBinaryFallsBackToTheShippedSource) {
  auto dir = fresh_dir("pkg");
  testing::write_package(dir, two_entries());
  auto pkg = read_package(dir);
  ASSERT_TRUE(pkg.ok());
  testing::write_text(dir / pkg->kernels[0].binary_path, "flipped bytes");
  auto direct = read_kernel_binary(*pkg, pkg->kernels[0]);
  ASSERT_FALSE(direct.ok());
  EXPECT_NE(direct.status().message().find("corrupt or was replaced"), std::string::npos) << direct.status().message();

  FakeCompiler fake;
  std::string loaded;
  std::vector<std::string> notes;
  auto origin = load_launch_kernel(
      *pkg, launch_of(*pkg, 0), [&]() -> Result<Compiler*> { return &fake; },
      [&](const std::string& b) { loaded = b; return Status(); }, notes);
  ASSERT_TRUE(origin.ok()) << origin.status().message();
  EXPECT_NE(origin->find("compiled from kernels/gemm_tiled.hip for sm_90 by fake 1.0"), std::string::npos) << *origin;
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("hashes to"), std::string::npos) << notes[0];
  ASSERT_EQ(fake.requests.size(), 1u);
  EXPECT_EQ(fake.requests[0].options, pkg->kernels[0].options);
  EXPECT_EQ(fake.requests[0].arch, "sm_90");
  EXPECT_EQ(fake.requests[0].headers.size(), pkg->headers->size());
  EXPECT_EQ(loaded, "compiled gemm_tiled");
}

TEST(GemmlibKernelBinary, MissingBinaryOrFailedLoadFallsBackAndNoCompilerIsAnError) {
  auto dir = fresh_dir("pkg");
  testing::write_package(dir, two_entries());
  auto pkg = read_package(dir);
  ASSERT_TRUE(pkg.ok());
  std::filesystem::remove(dir / pkg->kernels[1].binary_path);
  std::vector<std::string> notes;
  auto no_compiler = []() -> Result<Compiler*> { return Status::unavailable("libnvrtc.so: not found"); };
  auto origin = load_launch_kernel(*pkg, launch_of(*pkg, 1), no_compiler, [](const std::string&) { return Status(); },
                                   notes);
  ASSERT_FALSE(origin.ok());
  EXPECT_EQ(origin.status().code(), StatusCode::kFailedPrecondition);
  const std::string& m = origin.status().message();
  EXPECT_NE(m.find("the package has no file " + pkg->kernels[1].binary_path), std::string::npos) << m;
  EXPECT_NE(m.find("libnvrtc.so: not found"), std::string::npos) << m;
  EXPECT_NE(m.find("Re-export the package"), std::string::npos) << m;

  // The device refuses the package binary (an arch mismatch): compiled instead.
  FakeCompiler fake;
  notes.clear();
  int loads = 0;
  origin = load_launch_kernel(
      *pkg, launch_of(*pkg, 0), [&]() -> Result<Compiler*> { return &fake; },
      [&](const std::string&) {
        return ++loads == 1 ? Status::internal("cuModuleLoadData failed: CUDA_ERROR_NO_BINARY_FOR_GPU") : Status();
      },
      notes);
  ASSERT_TRUE(origin.ok()) << origin.status().message();
  EXPECT_EQ(loads, 2);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("CUDA_ERROR_NO_BINARY_FOR_GPU"), std::string::npos) << notes[0];
}

TEST(GemmlibKernelBinary, RealCubinsFromNvrtcVerifyAndRecompile) {
  auto backend = make_backend("cuda");
  auto nvrtc = (*backend)->compiler();
  if (!nvrtc.ok()) GTEST_SKIP() << "NVRTC unavailable: " << nvrtc.status().message();
  auto dir = fresh_dir("pkg");
  testing::write_package(dir, two_entries(), testing::package_device(), nvrtc->get());
  auto pkg = read_package(dir);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  auto bytes = read_kernel_binary(*pkg, pkg->kernels[0]);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  ASSERT_GE(bytes->size(), 4u);
  EXPECT_EQ(bytes->substr(0, 4), "\x7f" "ELF");
  // The fallback compiles the shipped source with the package's headers to the same cubin.
  auto again = compile_launch(*pkg, launch_of(*pkg, 0), **nvrtc);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(short_hash(*again), pkg->kernels[0].binary_hash);
}

}  // namespace
}  // namespace tilesmith::gemmlib
