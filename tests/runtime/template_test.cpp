// Templates: loading (embedded and from a folder), problem support, validation with
// reasons, and rendering into compile options and launch geometry.

#include <gtest/gtest.h>

#include <algorithm>

#include "base/hash.h"
#include "tests/problem_maker.h"
#include "registry/template_library.h"
#include "tests/test_paths.h"

namespace tilesmith {
namespace {

GemmProblem problem(std::int64_t m, std::int64_t n, std::int64_t k, const char* layout = "NN") {
  return testing::make_problem(m, n, k, layout);
}

TEST(Templates, EmbeddedLibraryHasGemmTiledWithValidDefaults) {
  auto lib = TemplateLibrary::embedded();
  ASSERT_TRUE(lib.ok()) << lib.status().to_string();
  const KernelTemplate* t = lib->find("gemm_tiled");
  ASSERT_NE(t, nullptr);
  EXPECT_FALSE(t->source_hash().empty());
  DeviceFacts dev = nominal_facts_for_arch("sm_90");
  EXPECT_TRUE(t->space().validate(t->defaults(), t->context(problem(64, 64, 64), &dev)).ok());
  EXPECT_GT(t->space().cartesian_size(), 100u);
}

TEST(Templates, RenderGivesOptionsAndGeometryForOddShapes) {
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_tiled");
  DeviceFacts dev = nominal_facts_for_arch("sm_90");
  Config c{{"BLOCK_M", 128}, {"BLOCK_N", 64}, {"BLOCK_K", 8}, {"THREAD_M", 8}, {"THREAD_N", 4}};
  auto r = t.render(problem(1000, 999, 1001, "TN"), c, dev);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->grid[0], 16u);  // ceil(999 / 64)
  EXPECT_EQ(r->grid[1], 8u);   // ceil(1000 / 128)
  EXPECT_EQ(r->threads(), 256);
  EXPECT_EQ(r->arch, "sm_90");
  auto has = [&](const std::string& o) { return std::find(r->options.begin(), r->options.end(), o) != r->options.end(); };
  EXPECT_TRUE(has("-DBLOCK_M=128"));
  EXPECT_TRUE(has("-DTS_A_ROW_MAJOR=0"));
  EXPECT_TRUE(has("-DTS_B_ROW_MAJOR=1"));
  EXPECT_TRUE(has("-DTS_WARP_SIZE=32"));
  EXPECT_TRUE(has("-DTS_VENDOR_NVIDIA=1"));
}

TEST(Templates, RejectionsNameTheRule) {
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_tiled");
  DeviceFacts dev = nominal_facts_for_arch("sm_90");
  // 16x16 threads of 1x1: 256 threads, fine; 16 / 16 with THREAD 16 gives 1 thread: not a warp multiple.
  Config lonely{{"BLOCK_M", 16}, {"BLOCK_N", 16}, {"BLOCK_K", 8}, {"THREAD_M", 16}, {"THREAD_N", 16}};
  auto r = t.render(problem(64, 64, 64), lonely, dev);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("WARP_SIZE"), std::string::npos) << r.status().message();
  Config off_domain = t.defaults();
  off_domain["BLOCK_M"] = 96;
  r = t.render(problem(64, 64, 64), off_domain, dev);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("BLOCK_M"), std::string::npos) << r.status().message();
  Config extra = t.defaults();
  extra["UNROLL"] = 2;
  EXPECT_FALSE(t.render(problem(64, 64, 64), extra, dev).ok());
}

TEST(Templates, WavefrontSizeComesFromTheDevice) {
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_tiled");
  DeviceFacts amd = nominal_facts_for_arch("gfx90a");
  EXPECT_EQ(amd.warp_size, 64);
  // 32 threads: a whole warp on NVIDIA, half a wavefront on CDNA.
  Config c{{"BLOCK_M", 32}, {"BLOCK_N", 32}, {"BLOCK_K", 8}, {"THREAD_M", 4}, {"THREAD_N", 8}};
  DeviceFacts nv = nominal_facts_for_arch("sm_90");
  EXPECT_TRUE(t.render(problem(64, 64, 64), c, nv).ok());
  auto r = t.render(problem(64, 64, 64), c, amd);
  EXPECT_FALSE(r.ok());
  c["THREAD_N"] = 4;  // 64 threads
  auto ok = t.render(problem(64, 64, 64), c, amd);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_NE(std::find(ok->options.begin(), ok->options.end(), "-DTS_WARP_SIZE=64"), ok->options.end());
  EXPECT_NE(std::find(ok->options.begin(), ok->options.end(), "-DTS_VENDOR_AMD=1"), ok->options.end());
}

TEST(Templates, UnsupportedProblemsAreRefusedWithTheReason) {
  auto lib = TemplateLibrary::from_directory(testing::test_kernels_dir());
  ASSERT_TRUE(lib.ok()) << lib.status().to_string();
  const KernelTemplate* t = lib->find("gemm_faulty");
  ASSERT_NE(t, nullptr);
  Status st = t->supports(problem(8, 8, 8, "TN"));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("layout TN"), std::string::npos) << st.message();
  GemmProblem with_beta = problem(8, 8, 8);
  with_beta.beta = 0.5;
  EXPECT_FALSE(t->supports(with_beta).ok());
  EXPECT_FALSE(TemplateLibrary::from_directory("/nonexistent/kernels").ok());
}

// Input and output types: a template lists what it serves; without c_dtypes C must have
// the input type; the types reach the kernel as TS_AB_DTYPE / TS_C_DTYPE; an unknown type
// name in a template's JSON is a load error naming it.
TEST(Templates, DataTypesAreDeclaredCheckedAndPassedToTheKernel) {
  auto lib = TemplateLibrary::from_directory(testing::test_kernels_dir());
  ASSERT_TRUE(lib.ok()) << lib.status().to_string();
  const KernelTemplate& faulty = *lib->find("gemm_faulty");  // fp32 and bf16, C in the input type
  DeviceFacts dev = nominal_facts_for_arch("sm_90");
  GemmProblem p = problem(64, 64, 64);
  p.a_type = p.b_type = p.c_type = DType::kBF16;
  auto r = faulty.render(p, faulty.defaults(), dev);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  auto has = [&](const std::string& o) { return std::find(r->options.begin(), r->options.end(), o) != r->options.end(); };
  EXPECT_TRUE(has("-DTS_AB_DTYPE=2"));
  EXPECT_TRUE(has("-DTS_C_DTYPE=2"));
  p.c_type = DType::kF32;
  Status c32 = faulty.supports(p);
  ASSERT_FALSE(c32.ok());
  EXPECT_NE(c32.message().find("C of type fp32"), std::string::npos) << c32.message();
  p.a_type = p.b_type = p.c_type = DType::kF16;
  Status f16 = faulty.supports(p);
  ASSERT_FALSE(f16.ok());
  EXPECT_NE(f16.message().find("does not support data type fp16 (supports fp32, bf16)"), std::string::npos) << f16.message();

  const std::string json = R"({"name": "t", "supports": {"dtypes": ["bf16"], "c_dtypes": ["fp32", "bf16"]},
    "space": {"parameters": [{"name": "X", "values": [1], "default": 1}]},
    "launch": {"grid": ["1", "1", "1"], "block": ["32", "1", "1"]}})";
  auto t = KernelTemplate::from_text(json, "// source", "t.json");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  p.a_type = p.b_type = DType::kBF16;
  p.c_type = DType::kF32;
  EXPECT_TRUE(t->supports(p).ok());
  p.c_type = DType::kF16;
  EXPECT_FALSE(t->supports(p).ok());
  std::string bad = json;
  bad.replace(bad.find("\"fp32\""), 6, "\"fp8\"");
  auto b = KernelTemplate::from_text(bad, "// source", "bad.json");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("fp8"), std::string::npos) << b.status().message();
}

// gemm_tma_half's FP8 seeds (two slices a promotion: FP8's measured winners; promotions overlapped
// with the next slice) are valid for FP8 at M = 16 and 4096 (the plain GEMM), never for 16-bit
// inputs, so they cost a bf16 search nothing.
TEST(Templates, TmaHalfFp8SeedsServeFp8Only) {
  auto lib = TemplateLibrary::embedded();
  ASSERT_TRUE(lib.ok()) << lib.status().to_string();
  const KernelTemplate& t = *lib->find("gemm_tma_half");
  DeviceFacts dev = nominal_facts_for_arch("sm_90");
  dev.multiprocessors = 132;
  auto valid_fp8_seeds = [&](const GemmProblem& p) {
    int n = 0;
    for (const Config& s : t.seeds()) n += (s.at("PROMOTE_SLICES") == 2 || s.at("PROMOTE_OVERLAP") == 1) && t.space().validate(s, t.context(p, &dev)).ok();
    return n;
  };
  for (std::int64_t m : {16, 4096}) {
    GemmProblem p = problem(m, 4096, 4096);
    ASSERT_TRUE(apply_layout_code("NT", p).ok());
    p.a_type = p.b_type = DType::kBF16;
    p.c_type = DType::kBF16;
    EXPECT_EQ(valid_fp8_seeds(p), 0) << m;
    p.a_type = p.b_type = DType::kE4M3;
    EXPECT_GE(valid_fp8_seeds(p), 2) << m;
  }
}

// FP8 problems: every embedded template but gemm_tma_half and gemm_stream refuses them through
// supports() with a reason, and those two serve them only K-major (NT) on sm_90 (not sm_80); a template may claim FP8 inputs
// only with its C types listed, never FP8 as C, and takes scaled problems only where it lists the
// scaling.
TEST(Templates, Fp8ProblemsAreRefusedWithAReasonUnlessClaimed) {
  auto lib = TemplateLibrary::embedded();
  ASSERT_TRUE(lib.ok()) << lib.status().to_string();
  DeviceFacts dev = nominal_facts_for_arch("sm_90");
  GemmProblem p = problem(256, 256, 256);
  p.a_type = p.b_type = DType::kE4M3;
  p.c_type = DType::kBF16;
  p.scaling = Scaling::kPerTensor;
  p.scale_a = p.scale_b = 0.5;
  ASSERT_TRUE(p.validate().ok()) << p.validate().message();
  GemmProblem nt = p;
  ASSERT_TRUE(apply_layout_code("NT", nt).ok());
  for (const KernelTemplate& t : lib->templates()) {
    Status s = t.can_serve(p, dev);
    ASSERT_FALSE(s.ok()) << t.name();
    if (t.name() == "gemm_tma_half" || t.name() == "gemm_stream") {
      GemmProblem served = nt;
      if (t.name() == "gemm_stream") served.m = 16;  // decode shapes only
      EXPECT_TRUE(t.can_serve(served, dev).ok()) << t.can_serve(served, dev).message();
      EXPECT_FALSE(t.can_serve(served, nominal_facts_for_arch("sm_80")).ok()) << "sm_89+ only";
      GemmProblem block = served;  // both take block scales too
      block.scaling = Scaling::kBlock;
      block.scale_a = block.scale_b = 1.0;
      EXPECT_TRUE(t.can_serve(block, dev).ok()) << t.name() << ": " << t.can_serve(block, dev).message();
      continue;
    }
    EXPECT_NE(s.message().find("e4m3"), std::string::npos) << s.message();
  }

  const std::string json = R"({"name": "t8", "supports": {"dtypes": ["e4m3", "e5m2"], "c_dtypes": ["bf16", "fp32"]},
    "space": {"parameters": [{"name": "X", "values": [1], "default": 1}]},
    "launch": {"grid": ["1", "1", "1"], "block": ["32", "1", "1"]}})";
  auto t = KernelTemplate::from_text(json, "// source", "t8.json");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  Status scaled = t->supports(p);
  ASSERT_FALSE(scaled.ok());
  EXPECT_NE(scaled.message().find("does not support per_tensor scaling (supports none)"), std::string::npos)
      << scaled.message();
  p.scaling = Scaling::kNone;
  p.scale_a = p.scale_b = 1;
  EXPECT_TRUE(t->supports(p).ok());
  auto r = t->render(p, t->defaults(), dev);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_NE(std::find(r->options.begin(), r->options.end(), "-DTS_AB_DTYPE=3"), r->options.end());

  std::string with_scalings = json;
  with_scalings.replace(with_scalings.find(R"("c_dtypes")"), 0, R"("scalings": ["none", "block"], )");
  auto tb = KernelTemplate::from_text(with_scalings, "// source", "t8.json");
  ASSERT_TRUE(tb.ok()) << tb.status().to_string();
  p.scaling = Scaling::kBlock;
  EXPECT_TRUE(tb->supports(p).ok());

  std::string c8 = json;
  c8.replace(c8.find(R"("bf16")"), 6, R"("e4m3")");
  auto b = KernelTemplate::from_text(c8, "// source", "bad.json");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("input type only"), std::string::npos) << b.status().message();
  std::string no_c = json;
  no_c.replace(no_c.find(R"(, "c_dtypes": ["bf16", "fp32"])"), 30, "");
  auto n = KernelTemplate::from_text(no_c, "// source", "bad.json");
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("supports.c_dtypes"), std::string::npos) << n.status().message();
}

// A template's seeds are partial configs over its defaults; one that names an unknown parameter,
// leaves a domain or is not a list of objects keeps the template from loading, naming the seed.
// The built-in gemm_tma_half lists seeds, each a whole config of its space.
// A template's source hash covers the headers it includes (through other headers too), not
// the library's others: a new or edited header leaves the folders tuned with other
// templates current. Hashes recorded by versions that hashed every header still match
// while no header has changed.
TEST(Templates, TheSourceHashCoversTheIncludedHeadersAndStillMatchesTheOlderAllHeadersHash) {
  const std::string json = R"({"name": "t", "supports": {"dtypes": ["fp32"]},
    "space": {"parameters": [{"name": "X", "values": [1], "default": 1}]},
    "launch": {"grid": ["1", "1", "1"], "block": ["32", "1", "1"]}})";
  const std::string source = "#include \"a.h\"\n#if X > 1\n#include \"dir/d.h\"\n#endif\n#include <cuda.h>\n";
  auto headers = [](const std::string& c_text, const std::string& b_text) {
    return std::make_shared<KernelHeaders>(KernelHeaders{{"a.h", "#pragma once\n#include \"b.h\"\n"},
                                                          {"b.h", b_text},
                                                          {"c.h", c_text},
                                                          {"d.h", "// d\n"}});
  };
  auto t = KernelTemplate::from_text(json, source, "t.json", headers("// c\n", "// b\n"));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->included_headers(), (std::vector<std::string>{"a.h", "b.h", "d.h"}));
  // c.h is not included: editing it (or adding a header) keeps the hash; editing b.h does not.
  auto other_c = KernelTemplate::from_text(json, source, "t.json", headers("// c, edited\n", "// b\n"));
  ASSERT_TRUE(other_c.ok());
  EXPECT_EQ(other_c->source_hash(), t->source_hash());
  auto other_b = KernelTemplate::from_text(json, source, "t.json", headers("// c\n", "// b, edited\n"));
  ASSERT_TRUE(other_b.ok());
  EXPECT_NE(other_b->source_hash(), t->source_hash());
  // The hash earlier versions recorded: the source, the JSON and every header in the library's order.
  Hasher all;
  all.add_field(source).add_field(json);
  const auto library_headers = headers("// c\n", "// b\n");
  for (const auto& [name, text] : *library_headers) all.add_field(name).add_field(text);
  const std::string recorded = all.hex().substr(0, 16);
  EXPECT_NE(recorded, t->source_hash());
  EXPECT_TRUE(t->matches_source_hash(recorded));
  EXPECT_TRUE(t->matches_source_hash(t->source_hash()));
  EXPECT_FALSE(other_c->matches_source_hash(recorded)) << "c.h changed since: the old all-headers hash no longer holds";
  EXPECT_FALSE(t->matches_source_hash("0123456789abcdef"));
}

// The built-in decode template does not include the Hopper headers: changing those leaves
// its tuned folders current.
TEST(Templates, TheBuiltInTemplatesHashOnlyWhatTheyInclude) {
  auto lib = TemplateLibrary::embedded();
  ASSERT_TRUE(lib.ok());
  const auto stream = (*lib).find("gemm_stream")->included_headers();
  EXPECT_NE(std::find(stream.begin(), stream.end(), "ts_dtype.h"), stream.end());
  EXPECT_EQ(std::find(stream.begin(), stream.end(), "ts_tma.h"), stream.end());
  const auto tma = (*lib).find("gemm_tma_half")->included_headers();
  EXPECT_NE(std::find(tma.begin(), tma.end(), "ts_tma.h"), tma.end());
  EXPECT_NE(std::find(tma.begin(), tma.end(), "ts_dtype.h"), tma.end()) << "through ts_gemm_common.h";
}

TEST(Templates, SeedsAreWholeConfigsAndBadOnesNameTheSeed) {
  const std::string head = R"({"name": "t", "space": {"parameters": [
      {"name": "X", "values": [1, 2, 4], "default": 1}, {"name": "Y", "values": [8, 16], "default": 8}]},
    "launch": {"grid": ["1", "1", "1"], "block": ["32", "1", "1"]}, "seeds": )";
  auto t = KernelTemplate::from_text(head + R"([{"X": 4}, {"Y": 16, "X": 2}]})", "// source", "t.json");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  ASSERT_EQ(t->seeds().size(), 2u);
  EXPECT_EQ(t->seeds()[0], (Config{{"X", 4}, {"Y", 8}}));
  EXPECT_EQ(t->seeds()[1], (Config{{"X", 2}, {"Y", 16}}));
  const std::pair<const char*, const char*> bad[] = {
      {R"([{"X": 4}, {"Z": 1}]})", "seed 2: Z is not a parameter"},
      {R"([{"X": 3}]})", "seed 1"},
      {R"([{"X": "4"}]})", "seed 1: X must be an integer"},
      {R"([[4]]})", "seed 1 must be an object"},
      {R"({"X": 4}})", "'seeds' must be a list"}};
  for (auto [seeds, why] : bad) {
    auto b = KernelTemplate::from_text(head + seeds, "// source", "bad.json");
    ASSERT_FALSE(b.ok()) << seeds;
    EXPECT_NE(b.status().message().find(why), std::string::npos) << b.status().message();
    EXPECT_NE(b.status().message().find("bad.json"), std::string::npos) << b.status().message();
  }
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& tma = *lib->find("gemm_tma_half");
  EXPECT_GE(tma.seeds().size(), 4u);
  for (const Config& c : tma.seeds()) {
    EXPECT_EQ(c.size(), tma.defaults().size());
    EXPECT_TRUE(tma.space().from_config(c).ok()) << config_to_json_text(c);
  }
}

// "math": "fma" says a template runs on the FP32 FMA pipe, which bounds its speed: at fp32
// 4096^3 on an H200 (132 SMs x 128 lanes x 2 x 1.98 GHz = 66.9 TFLOP/s) no such kernel can
// take less than 2.054 ms. The SIMT templates say so; the matrix-unit ones have no bound.
TEST(Templates, TheFmaPipeBoundsATemplatesSpeed) {
  auto lib = TemplateLibrary::embedded();
  ASSERT_TRUE(lib.ok());
  DeviceFacts h200;
  h200.arch = "sm_90";
  h200.multiprocessors = 132;
  h200.clock_khz = 1980000;
  const GemmProblem p = problem(4096, 4096, 4096);
  for (const char* simt : {"gemm_tiled", "gemm_async", "gemm_warp"}) {
    EXPECT_EQ(lib->find(simt)->math(), "fma") << simt;
    EXPECT_NEAR(lib->find(simt)->fastest_possible_ms(p, h200), 2.054, 0.001) << simt;
  }
  for (const char* mma : {"gemm_mma", "gemm_wgmma", "gemm_tma_tf32", "gemm_tma_half"})
    EXPECT_EQ(lib->find(mma)->fastest_possible_ms(p, h200), 0) << mma;
  // A device that does not say its clock gives no bound.
  DeviceFacts unknown;
  unknown.arch = "sm_90";
  EXPECT_EQ(lib->find("gemm_tiled")->fastest_possible_ms(p, unknown), 0);
  const std::string head = R"({"name": "t", "space": {"parameters": [{"name": "X", "values": [1], "default": 1}]},
    "launch": {"grid": ["1", "1", "1"], "block": ["32", "1", "1"]}, "math": )";
  auto bad = KernelTemplate::from_text(head + R"("tensor"})", "// source", "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.json: math 'tensor' is not known"), std::string::npos)
      << bad.status().message();
}

// The wgmma template is compiled for sm_90a (wgmma exists only there), is refused with the
// rule's text on other NVIDIA parts and where the copy width does not match the leading
// dimensions (16-byte copies where both are multiples of 4, else 4-byte ones), and keeps a
// 64-wide wavefront path for AMD CDNA.
TEST(Templates, WgmmaTargetsSm90aAndNamesWhatItCannotServe) {
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate& t = *lib->find("gemm_wgmma");
  auto hopper = t.render(problem(1024, 1024, 1024), t.defaults(), nominal_facts_for_arch("sm_90"));
  ASSERT_TRUE(hopper.ok()) << hopper.status().to_string();
  EXPECT_EQ(hopper->arch, "sm_90a");
  EXPECT_EQ(hopper->threads(), 128 * t.defaults().at("WARPGROUPS"));
  auto ampere = t.render(problem(1024, 1024, 1024), t.defaults(), nominal_facts_for_arch("sm_80"));
  ASSERT_FALSE(ampere.ok());
  EXPECT_NE(ampere.status().message().find("NVIDIA_SM == 90"), std::string::npos) << ampere.status().message();
  ASSERT_EQ(t.defaults().at("VEC"), 4);
  auto odd_lda = t.render(problem(1024, 1024, 1023), t.defaults(), nominal_facts_for_arch("sm_90"));
  ASSERT_FALSE(odd_lda.ok());
  EXPECT_NE(odd_lda.status().message().find("LDA % VEC == 0"), std::string::npos) << odd_lda.status().message();
  Config narrow = t.defaults();
  narrow["VEC"] = 1;
  EXPECT_TRUE(t.render(problem(1024, 1024, 1023), narrow, nominal_facts_for_arch("sm_90")).ok());
  // 4-byte copies where 16-byte ones fit are slower, never a candidate.
  auto needless = t.render(problem(1024, 1024, 1024), narrow, nominal_facts_for_arch("sm_90"));
  ASSERT_FALSE(needless.ok());
  EXPECT_NE(needless.status().message().find("VEC == 4 or LDA % 4 != 0 or LDB % 4 != 0"), std::string::npos)
      << needless.status().message();
  // Whole problems and devices: served where some config is valid, else the reason.
  EXPECT_TRUE(t.can_serve(problem(128, 4096, 4096), nominal_facts_for_arch("sm_90")).ok());
  EXPECT_TRUE(t.can_serve(problem(1000, 999, 1001), nominal_facts_for_arch("sm_90")).ok());
  Status elsewhere = t.can_serve(problem(1024, 1024, 1024), nominal_facts_for_arch("sm_80"));
  EXPECT_NE(elsewhere.message().find("no valid configuration for"), std::string::npos) << elsewhere.message();
  EXPECT_NE(elsewhere.message().find("NVIDIA_SM == 90"), std::string::npos) << elsewhere.message();
  EXPECT_TRUE(t.can_serve(problem(1024, 1024, 1024, "TT"), nominal_facts_for_arch("sm_90")).ok());
  auto amd = t.render(problem(1024, 1024, 1024), t.defaults(), nominal_facts_for_arch("gfx90a"));
  ASSERT_TRUE(amd.ok()) << amd.status().to_string();
  EXPECT_EQ(amd->arch, "gfx90a");
  EXPECT_EQ(amd->threads(), 256 * t.defaults().at("WARPGROUPS"));
}

}  // namespace
}  // namespace tilesmith
