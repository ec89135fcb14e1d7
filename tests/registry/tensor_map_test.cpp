// Tensor maps as templates declare them: parsing, what each layout's map describes, what
// TMA cannot take (refused with the reason), and how gemm_tma_half renders them.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "registry/template_library.h"
#include "registry/tensor_map.h"

namespace tilesmith {
namespace {

using nlohmann::json;

GemmProblem bf16(std::int64_t m, std::int64_t n, std::int64_t k, const char* layout = "NN") {
  GemmProblem p;
  p.m = m, p.n = n, p.k = k;
  p.a_type = p.b_type = p.c_type = DType::kBF16;
  EXPECT_TRUE(apply_layout_code(layout, p).ok());
  return p;
}

TensorMapDecl decl(char op, int swizzle = 128) {
  TensorMapDecl d;
  d.operand = op;
  d.box = {"64", "64"};
  d.swizzle_bytes = swizzle;
  return d;
}

TEST(TensorMap, EachOperandIsDescribedAsStoredContiguousDimensionFirst) {
  // NN: A row-major M x K (K contiguous), B row-major K x N (N contiguous).
  GemmProblem nn = bf16(300, 200, 136);
  auto a = resolve_tensor_map(decl('A'), nn, {64, 64});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->dims, (std::array<std::uint64_t, 2>{136, 300}));
  EXPECT_EQ(a->row_stride_bytes, 136u * 2);
  EXPECT_EQ(a->dtype, DType::kBF16);
  auto b = resolve_tensor_map(decl('B'), nn, {64, 64});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->dims, (std::array<std::uint64_t, 2>{200, 136}));
  EXPECT_EQ(b->row_stride_bytes, 200u * 2);
  // TT: A column-major (M contiguous), B column-major (K contiguous).
  GemmProblem tt = bf16(304, 200, 136, "TT");
  EXPECT_EQ(resolve_tensor_map(decl('A'), tt, {64, 64})->dims, (std::array<std::uint64_t, 2>{304, 136}));
  EXPECT_EQ(resolve_tensor_map(decl('B'), tt, {64, 64})->dims, (std::array<std::uint64_t, 2>{136, 200}));
  // C in its own type.
  GemmProblem c = nn;
  c.c_type = DType::kF32;
  auto cm = resolve_tensor_map(decl('C'), c, {32, 8});
  ASSERT_TRUE(cm.ok());
  EXPECT_EQ(cm->dtype, DType::kF32);
  EXPECT_EQ(cm->row_stride_bytes, 200u * 4);
  EXPECT_EQ(cm->box, (std::array<std::uint32_t, 2>{32, 8}));
}

TEST(TensorMap, WhatTheAcceleratorCannotTakeIsRefusedWithTheReason) {
  // K = 1001: A's rows are 2002 bytes apart, not a multiple of 16.
  auto odd = resolve_tensor_map(decl('A'), bf16(1000, 999, 1001), {64, 64});
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("multiple of 16 bytes"), std::string::npos) << odd.status().message();
  EXPECT_NE(odd.status().message().find("1001"), std::string::npos);
  // 128 contiguous bf16 values are 256 bytes: wider than the 128-byte swizzle.
  auto wide = resolve_tensor_map(decl('A'), bf16(256, 256, 256), {128, 64});
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("swizzle"), std::string::npos);
  // Without a swizzle the same box is fine; a box over 256 is not.
  EXPECT_TRUE(resolve_tensor_map(decl('A', 0), bf16(256, 256, 256), {128, 64}).ok());
  EXPECT_FALSE(resolve_tensor_map(decl('A', 0), bf16(256, 256, 512), {512, 64}).ok());
  EXPECT_FALSE(resolve_tensor_map(decl('A'), bf16(256, 256, 256), {64, 0.5}).ok());
}

TEST(TensorMap, DeclarationsParseAndBadOnesNameTheirEntry) {
  auto ok = parse_tensor_map_decls(json::parse(R"([{"operand":"B","box":[64,"BLOCK_K"],"swizzle":64}])"));
  ASSERT_TRUE(ok.ok());
  ASSERT_EQ(ok->size(), 1u);
  EXPECT_EQ((*ok)[0].operand, 'B');
  EXPECT_EQ((*ok)[0].box[1], "BLOCK_K");
  EXPECT_EQ((*ok)[0].swizzle_bytes, 64);
  for (const char* bad : {R"([{"operand":"D","box":[64,64]}])", R"([{"operand":"A","box":[64]}])",
                          R"([{"operand":"A","box":[64,64],"swizzle":96}])", R"({"operand":"A"})"}) {
    auto r = parse_tensor_map_decls(json::parse(bad));
    EXPECT_FALSE(r.ok()) << bad;
  }
  auto when = parse_tensor_map_decls(json::parse(R"([{"operand":"C","box":[64,64],"when":"EPILOGUE_SMEM // 2"}])"));
  ASSERT_TRUE(when.ok());
  EXPECT_EQ((*when)[0].when, "EPILOGUE_SMEM // 2");
  EXPECT_TRUE((*ok)[0].when.empty()) << "always, without it";
  EXPECT_FALSE(parse_tensor_map_decls(json::parse(R"([{"operand":"C","box":[64,64],"when":1}])")).ok());
  auto second = parse_tensor_map_decls(json::parse(R"([{"operand":"A","box":[64,64]},{"operand":"A","box":[1]}])"));
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("tensor_maps[1]"), std::string::npos);
}

TEST(TensorMap, SpecsRoundTripThroughJson) {
  TensorMapSpec s = *resolve_tensor_map(decl('B'), bf16(128, 4096, 4096, "NT"), {64, 64});
  auto back = tensor_map_spec_from_json(to_json(s));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, s);
  EXPECT_FALSE(tensor_map_spec_from_json(json::parse(R"({"operand":"A"})")).ok());
  // An unused map says so; a used one's JSON is as before (no "unused" key).
  EXPECT_FALSE(to_json(s).contains("unused"));
  TensorMapSpec unused;
  unused.operand = 'C';
  unused.unused = true;
  auto u = tensor_map_spec_from_json(to_json(unused));
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_EQ(*u, unused);
}

TEST(TensorMap, GemmTmaHalfRendersItsMapsOnHopperAndIsRefusedElsewhere) {
  auto lib = TemplateLibrary::embedded();
  const KernelTemplate* t = lib->find("gemm_tma_half");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->tensor_maps().size(), 3u);
  DeviceFacts h100 = nominal_facts_for_arch("sm_90");
  h100.multiprocessors = 132;
  auto r = t->render(bf16(4096, 4096, 4096, "NT"), t->defaults(), h100);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->tensor_maps.size(), 3u);
  EXPECT_EQ(r->tensor_maps[0].operand, 'A');
  EXPECT_EQ(r->tensor_maps[1].operand, 'B');
  EXPECT_EQ(r->tensor_maps[1].dims, (std::array<std::uint64_t, 2>{4096, 4096}));
  // C's map only for the TMA-store epilogue (EPILOGUE_SMEM 2): otherwise passed unused.
  EXPECT_EQ(r->tensor_maps[2].operand, 'C');
  EXPECT_TRUE(r->tensor_maps[2].unused);
  Config tma_store = t->defaults();
  tma_store["EPILOGUE_SMEM"] = 2;
  auto s = t->render(bf16(4096, 4096, 4096, "NT"), tma_store, h100);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_FALSE(s->tensor_maps[2].unused);
  EXPECT_EQ(s->tensor_maps[2].box, (std::array<std::uint32_t, 2>{64, 64}));
  EXPECT_EQ(s->tensor_maps[2].dims, (std::array<std::uint64_t, 2>{4096, 4096}));
  // C rows TMA cannot address (1001 x 2 bytes apart) stop only the TMA store, not the template.
  GemmProblem odd_c = bf16(1000, 1001, 1024, "NT");
  EXPECT_TRUE(t->render(odd_c, t->defaults(), h100).ok());
  EXPECT_FALSE(t->space().validate(tma_store, t->context(odd_c, &h100)).ok());
  EXPECT_EQ(r->arch, "sm_90a");
  // Persistent by default: one block per SM.
  EXPECT_EQ(r->grid[0], std::uint32_t(h100.multiprocessors));

  // An odd leading dimension: no configuration, and the reason is TMA's.
  Status odd = t->can_serve(bf16(1000, 999, 1001), h100);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.message().find("LDA"), std::string::npos) << odd.message();
  // Not on an A100, nor on AMD.
  EXPECT_FALSE(t->can_serve(bf16(4096, 4096, 4096), nominal_facts_for_arch("sm_80")).ok());
  EXPECT_FALSE(t->can_serve(bf16(4096, 4096, 4096), nominal_facts_for_arch("gfx90a")).ok());
}

}  // namespace
}  // namespace tilesmith
