#include "registry/space.h"

#include <chrono>
#include <cstdio>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tilesmith {
namespace {

using nlohmann::json;

const char* kTiledSpace = R"js({
  "parameters": [
    {"name": "BLOCK_M", "values": [32, 64, 128], "description": "rows of C per block"},
    {"name": "BLOCK_N", "values": [32, 64, 128]},
    {"name": "THREAD_M", "values": [1, 2, 4, 8]},
    {"name": "THREAD_N", "values": [1, 2, 4, 8]},
    {"name": "BLOCK_K", "values": [8, 16, 32]}
  ],
  "derived": [
    {"name": "THREADS", "expr": "(BLOCK_M // THREAD_M) * (BLOCK_N // THREAD_N)"},
    {"name": "SHARED_BYTES", "expr": "(BLOCK_M + BLOCK_N) * BLOCK_K * DTYPE_BYTES"},
    {"name": "GRID", "expr": "ceil_div(M, BLOCK_M) * ceil_div(N, BLOCK_N)"}
  ],
  "constraints": [
    "BLOCK_M % THREAD_M == 0",
    "THREADS >= WARP_SIZE",
    "THREADS % WARP_SIZE == 0"
  ]
})js";

ParamSpace tiled() {
  auto s = ParamSpace::from_json(json::parse(kTiledSpace));
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return *s;
}

SpaceContext context(bool with_device) {
  SpaceContext ctx;
  ctx.constants = {{"M", 1000}, {"N", 512}, {"K", 256}, {"WARP_SIZE", 32}, {"DTYPE_BYTES", 4}};
  if (with_device) {
    DeviceFacts d;
    d.max_threads_per_block = 1024;
    d.shared_per_block_optin = 16 * 1024;
    ctx.device = d;
  }
  return ctx;
}

Config cfg(std::int64_t bm, std::int64_t bn, std::int64_t tm, std::int64_t tn, std::int64_t bk) {
  return {{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"THREAD_M", tm}, {"THREAD_N", tn}, {"BLOCK_K", bk}};
}

// A brute-force reference: every point of the product, checked through validate().
std::vector<PointValues> brute_force(const ParamSpace& s, const SpaceContext& ctx) {
  std::vector<PointValues> out;
  const auto& ps = s.parameters();
  std::vector<size_t> idx(ps.size(), 0);
  while (true) {
    PointValues p(ps.size());
    for (size_t i = 0; i < ps.size(); ++i) p[i] = ps[i].values[idx[i]];
    if (s.validate(s.to_config(p), ctx).ok()) out.push_back(p);
    size_t k = ps.size();
    while (k > 0) {
      --k;
      if (++idx[k] < ps[k].values.size()) break;
      idx[k] = 0;
      if (k == 0) return out;
    }
  }
}

TEST(Space, JsonRoundTrip) {
  ParamSpace s = tiled();
  json j = s.to_json();
  auto again = ParamSpace::from_json(j);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->to_json(), j);
  EXPECT_EQ(s.parameters().size(), 5u);
  EXPECT_EQ(s.parameters()[0].description, "rows of C per block");
  EXPECT_EQ(s.constraint_texts().size(), 3u);
  ASSERT_EQ(s.derived_texts().size(), 3u);
  EXPECT_EQ(s.derived_texts()[0].first, "THREADS");
  EXPECT_EQ(s.cartesian_size(), 3u * 3 * 4 * 4 * 3);
  ASSERT_NE(s.find("BLOCK_K"), nullptr);
  EXPECT_EQ(s.find("BLOCK_K")->values, (std::vector<std::int64_t>{8, 16, 32}));
  EXPECT_EQ(s.find("NOPE"), nullptr);
  EXPECT_EQ(s.context_names(), (std::vector<std::string>{"DTYPE_BYTES", "M", "N", "WARP_SIZE"}));
}

TEST(Space, RejectsMalformedSpaces) {
  struct Case {
    const char* text;
    const char* what;
  };
  const Case cases[] = {
      {R"js([])js", "JSON object"},
      {R"js({})js", "\"parameters\" array"},
      {R"js({"parameters": [{"name": "A", "values": []}]})js", "non-empty"},
      {R"js({"parameters": [{"name": "A", "values": [1, 1]}]})js", "listed twice"},
      {R"js({"parameters": [{"name": "A", "values": [1.5]}]})js", "integers"},
      {R"js({"parameters": [{"name": "A", "values": [true]}]})js", "integers"},
      {R"js({"parameters": [{"name": "A", "values": [1]}, {"name": "A", "values": [2]}]})js",
       "declared twice"},
      {R"js({"parameters": [{"name": "9A", "values": [1]}]})js", "not an identifier"},
      {R"js({"parameters": [{"name": "A", "values": [1]}], "constraints": ["A %% 2"]})js",
       "column"},
      {R"js({"parameters": [{"name": "A", "values": [1]}], "constraints": [3]})js",
       "must be strings"},
      {R"js({"parameters": [{"name": "A", "values": [1]}], "derived": [{"name": "A", "expr": "1"}]})js",
       "reuses"},
      {R"js({"parameters": [{"name": "A", "values": [1]}],
           "derived": [{"name": "X", "expr": "Y + 1"}, {"name": "Y", "expr": "A"}]})js",
       "not defined before"},
      {R"js({"parameters": [{"name": "A", "values": [1]}], "derived": [{"name": "X", "expr": "X + 1"}]})js",
       "not defined before"},
  };
  for (const Case& c : cases) {
    auto s = ParamSpace::from_json(json::parse(c.text));
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_NE(s.status().message().find(c.what), std::string::npos)
        << c.text << " -> " << s.status().message();
  }
}

TEST(Space, ValidationMessagesNameTheRule) {
  ParamSpace s = tiled();
  SpaceContext ctx = context(true);
  EXPECT_TRUE(s.validate(cfg(64, 64, 4, 4, 8), ctx).ok())
      << s.validate(cfg(64, 64, 4, 4, 8), ctx).to_string();

  Status st = s.validate(cfg(96, 64, 4, 4, 8), ctx);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("BLOCK_M=96 is not one of [32, 64, 128]"), std::string::npos)
      << st.message();

  Config missing = cfg(64, 64, 4, 4, 8);
  missing.erase("BLOCK_K");
  missing["BOGUS"] = 1;
  st = s.validate(missing, ctx);
  EXPECT_NE(st.message().find("missing parameter 'BLOCK_K'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("unknown parameter 'BOGUS'"), std::string::npos) << st.message();

  // 32 / 1 * 32 / 8 = 128 threads, but THREADS >= WARP_SIZE holds; pick one that breaks it:
  // (32 // 8) * (32 // 8) = 16 threads < 32.
  st = s.validate(cfg(32, 32, 8, 8, 8), ctx);
  EXPECT_NE(st.message().find("breaks constraint 'THREADS >= WARP_SIZE'"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("THREADS=16"), std::string::npos) << st.message();
}

TEST(Space, DeviceLimits) {
  ParamSpace s = tiled();
  SpaceContext ctx = context(true);
  // 128 * 128 threads with THREAD 1x1 ... 128/1 * 128/1 = 16384 threads.
  Status st = s.validate(cfg(128, 128, 1, 1, 8), ctx);
  EXPECT_NE(st.message().find("THREADS=16384 exceeds the device's 1024 threads per block"),
            std::string::npos)
      << st.message();
  // 64x64 threads/4x4 = 256 threads fine; shared (64 + 64) * 32 * 4 = 16384 fits 16 KiB exactly.
  EXPECT_TRUE(s.validate(cfg(64, 64, 4, 4, 32), ctx).ok());
  // (128 + 64) * 32 * 4 = 24576 bytes > 16384.
  st = s.validate(cfg(128, 64, 4, 4, 32), ctx);
  EXPECT_NE(st.message().find("SHARED_BYTES=24576 exceeds the device's 16384 bytes"),
            std::string::npos)
      << st.message();
  // Without a device there are no limit checks.
  EXPECT_TRUE(s.validate(cfg(128, 64, 4, 4, 32), context(false)).ok());
  EXPECT_FALSE(s.is_valid(*s.from_config(cfg(128, 64, 4, 4, 32)), ctx));
  EXPECT_TRUE(s.is_valid(*s.from_config(cfg(128, 64, 4, 4, 32)), context(false)));
}

TEST(Space, DerivedValues) {
  ParamSpace s = tiled();
  auto d = s.derive(cfg(64, 128, 2, 4, 16), context(true));
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->at("THREADS"), 32 * 32);
  EXPECT_EQ(d->at("SHARED_BYTES"), (64 + 128) * 16 * 4);
  EXPECT_EQ(d->at("GRID"), 16 * 4);  // ceil(1000/64) * 512/128
  EXPECT_EQ(d->at("BLOCK_N"), 128);
  EXPECT_EQ(d->count("M"), 0u);
  EXPECT_FALSE(s.derive(cfg(32, 32, 8, 8, 8), context(true)).ok());
}

TEST(Space, MissingContextConstant) {
  ParamSpace s = tiled();
  SpaceContext ctx = context(true);
  ctx.constants.erase("WARP_SIZE");
  Status st = s.check_context(ctx);
  EXPECT_NE(st.message().find("'WARP_SIZE'"), std::string::npos) << st.message();
  st = s.validate(cfg(64, 64, 4, 4, 8), ctx);
  EXPECT_NE(st.message().find("reads 'WARP_SIZE'"), std::string::npos) << st.message();
  EXPECT_TRUE(s.enumerate_valid(ctx).empty());
  EXPECT_TRUE(s.check_context(context(false)).ok());
}

TEST(Space, EvaluationErrorsMakePointsInvalid) {
  auto s = ParamSpace::from_json(json::parse(R"js({
    "parameters": [{"name": "A", "values": [0, 1, 2]}, {"name": "B", "values": [4, 6]}],
    "derived": [{"name": "Q", "expr": "B // A"}],
    "constraints": ["Q > 1"]
  })js"));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Status st = s->validate({{"A", 0}, {"B", 4}}, {});
  EXPECT_NE(st.message().find("cannot evaluate derived value 'Q'"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("division by zero"), std::string::npos) << st.message();
  auto all = s->enumerate_valid({});
  EXPECT_EQ(all, (std::vector<PointValues>{{1, 4}, {1, 6}, {2, 4}, {2, 6}}));
  EXPECT_FALSE(s->is_valid({0, 4}, {}));
  EXPECT_FALSE(s->is_valid({3, 4}, {}));  // off the domain
  EXPECT_FALSE(s->is_valid({1}, {}));     // wrong arity
}

TEST(Space, EnumerationMatchesBruteForce) {
  ParamSpace s = tiled();
  for (bool device : {false, true}) {
    SpaceContext ctx = context(device);
    auto fast = s.enumerate_valid(ctx);
    auto slow = brute_force(s, ctx);
    EXPECT_EQ(fast, slow) << "device " << device;
    EXPECT_FALSE(fast.empty());
    for (const auto& p : fast) EXPECT_TRUE(s.is_valid(p, ctx));
  }
  EXPECT_LT(s.enumerate_valid(context(true)).size(), s.enumerate_valid(context(false)).size());
}

TEST(Space, ForEachValidStopsEarly) {
  ParamSpace s = tiled();
  int seen = 0;
  s.for_each_valid(context(false), [&](const PointValues&) { return ++seen < 3; });
  EXPECT_EQ(seen, 3);
  auto all = s.enumerate_valid(context(false));
  std::vector<PointValues> first;
  s.for_each_valid(context(false), [&](const PointValues& p) {
    first.push_back(p);
    return first.size() < 5;
  });
  EXPECT_EQ(first, std::vector<PointValues>(all.begin(), all.begin() + 5));
}

TEST(Space, ConfigConversions) {
  ParamSpace s = tiled();
  Config c = cfg(64, 32, 2, 1, 16);
  auto p = s.from_config(c);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (PointValues{64, 32, 2, 1, 16}));
  EXPECT_EQ(s.to_config(*p), c);
}

TEST(Space, EnumerationSpeed) {
  // 7 parameters of 8 values: 2,097,152 points, about 1 in 8 valid. Reports points
  // visited per second; not a timed assertion.
  json j = json::parse(
      R"js({"parameters": [], "constraints": ["(A + B + C + D + E + F + G) % 8 == 0"]})js");
  for (const char* n : {"A", "B", "C", "D", "E", "F", "G"})
    j["parameters"].push_back({{"name", n}, {"values", {1, 2, 3, 4, 5, 6, 7, 8}}});
  auto s = ParamSpace::from_json(j);
  ASSERT_TRUE(s.ok());
  auto t0 = std::chrono::steady_clock::now();
  std::uint64_t valid = 0;
  s->for_each_valid({}, [&](const PointValues&) {
    ++valid;
    return true;
  });
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(valid, 2097152u / 8);
  std::printf("[ speed ] %llu cartesian points (%llu valid) in %.3f s: %.2f M points/s\n",
              static_cast<unsigned long long>(s->cartesian_size()),
              static_cast<unsigned long long>(valid), secs,
              double(s->cartesian_size()) / secs / 1e6);
}

TEST(Space, SampleValid) {
  ParamSpace s = tiled();
  SpaceContext ctx = context(true);
  auto all = s.enumerate_valid(ctx);
  std::set<PointValues> valid(all.begin(), all.end()), seen;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    auto p = s.sample_valid(ctx, seed);
    ASSERT_TRUE(p.has_value());
    EXPECT_TRUE(valid.count(*p));
    seen.insert(*p);
    EXPECT_EQ(*s.sample_valid(ctx, seed), *p) << "deterministic for a seed";
  }
  EXPECT_GT(seen.size(), 50u) << "draws spread over the space";
  // No valid point at all, and a step budget too small to reach one.
  auto none =
      ParamSpace::from_json(json::parse(R"js({"parameters": [{"name": "A", "values": [1, 2]}],
                                                     "constraints": ["A > 5"]})js"));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->sample_valid({}, 1).has_value());
  EXPECT_FALSE(s.sample_valid(ctx, 1, 2).has_value());
}

TEST(Space, RestrictedToAllowedPoints) {
  ParamSpace s = tiled();
  SpaceContext ctx = context(false);
  auto all = s.enumerate_valid(ctx);
  ASSERT_GT(all.size(), 10u);
  // Every third valid point, plus one point that breaks a constraint (stays invalid).
  std::vector<PointValues> keep;
  for (size_t i = 0; i < all.size(); i += 3) keep.push_back(all[i]);
  PointValues breaking = *s.from_config(cfg(32, 32, 8, 8, 8));
  ASSERT_FALSE(s.is_valid(breaking, ctx));
  std::vector<PointValues> given = keep;
  given.push_back(breaking);
  given.push_back(keep.front());  // duplicate
  auto r = s.restrict_to(given);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->is_restricted());
  EXPECT_FALSE(s.is_restricted());
  EXPECT_EQ(r->enumerate_valid(ctx), keep);
  EXPECT_TRUE(r->is_valid(all[0], ctx));
  EXPECT_FALSE(r->is_valid(all[1], ctx));
  Status st = r->validate(s.to_config(all[1]), ctx);
  EXPECT_NE(st.message().find("not among the"), std::string::npos) << st.message();
  EXPECT_NE(r->validate(s.to_config(breaking), ctx).message().find("breaks constraint"),
            std::string::npos);
  // Round trip through JSON keeps the restriction.
  auto again = ParamSpace::from_json(r->to_json());
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->enumerate_valid(ctx), keep);
  EXPECT_EQ(again->to_json(), r->to_json());
  // Off-domain or wrong-arity points are refused.
  EXPECT_FALSE(s.restrict_to({{96, 32, 1, 1, 8}}).ok());
  EXPECT_FALSE(s.restrict_to({{32, 32}}).ok());
}

}  // namespace
}  // namespace tilesmith
