// The dtype table's host conversions against the compiler's own _Float16 (fp16) and a
// bit-exact bf16 definition: rounding to nearest even, ties, subnormals, overflow, NaN.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "registry/dtype.h"
#include "registry/fp8.h"

namespace tilesmith {
namespace {

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(DType, TableNamesSizesAndRoundoff) {
  EXPECT_STREQ(dtype_name(DType::kBF16), "bf16");
  EXPECT_EQ(dtype_bytes(DType::kF16), 2);
  EXPECT_EQ(dtype_bytes(DType::kF32), 4);
  EXPECT_EQ(unit_roundoff(DType::kBF16), std::ldexp(1.0, -8));
  EXPECT_EQ(unit_roundoff(DType::kF16), std::ldexp(1.0, -11));
  EXPECT_EQ(dtype_info(DType::kF16).kernel_code, 1);
  EXPECT_EQ(dtype_info(DType::kBF16).kernel_code, 2);
  EXPECT_TRUE(std::isnan(half_bits_to_float(DType::kF16, dtype_info(DType::kF16).nan_bits)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(DType::kBF16, dtype_info(DType::kBF16).nan_bits)));
  EXPECT_FALSE(parse_dtype("int8").ok());
}

#if defined(__FLT16_MAX__)
// Every fp32 bit pattern of a strided sweep, plus random ones, converted as the compiler
// converts to _Float16 (round to nearest even, IEEE), both ways.
TEST(DType, Fp16MatchesTheCompilersConversion) {
  std::mt19937 rng(1);
  auto check = [](std::uint32_t u) {
    const float x = from_bits(u);
    const _Float16 h = static_cast<_Float16>(x);
    std::uint16_t want;
    std::memcpy(&want, &h, 2);
    const std::uint16_t got = float_to_half_bits(DType::kF16, x);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(half_bits_to_float(DType::kF16, got)));
      return;
    }
    ASSERT_EQ(got, want) << "x = " << x << " (0x" << std::hex << u << ")";
    ASSERT_EQ(half_bits_to_float(DType::kF16, want), static_cast<float>(h));
  };
  for (std::uint64_t u = 0; u <= 0xffffffffull; u += 4093) check(std::uint32_t(u));
  for (int i = 0; i < 200000; ++i) check(rng());
  // Ties around the subnormal boundary and the largest finite value.
  for (float x : {65504.0f, 65519.99f, 65520.0f, 6.1035156e-05f, 5.9604645e-08f, 2.9802322e-08f, 2.98023259e-08f})
    check([&] { std::uint32_t u; std::memcpy(&u, &x, 4); return u; }());
}
#endif

TEST(DType, Bf16RoundsToNearestEvenAndWidensExactly) {
  EXPECT_EQ(float_to_half_bits(DType::kBF16, 1.0f), 0x3f80);
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even (1.0) wins; 1 + 3*2^-8 rounds up.
  EXPECT_EQ(float_to_half_bits(DType::kBF16, 1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(float_to_half_bits(DType::kBF16, 1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(float_to_half_bits(DType::kBF16, -2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(DType::kBF16, std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(float_to_half_bits(DType::kBF16, std::numeric_limits<float>::max()), 0x7f80);  // overflows to inf
  EXPECT_TRUE(std::isnan(half_bits_to_float(DType::kBF16, float_to_half_bits(DType::kBF16, std::nanf("")))));
  std::mt19937 rng(3);
  for (int i = 0; i < 100000; ++i) {
    const float x = from_bits(rng() & 0xbfffffffu);  // finite, |x| < 2
    const float r = round_to(DType::kBF16, x);
    EXPECT_LE(std::fabs(double(r) - x), std::ldexp(std::fabs(double(x)), -8) + 1e-40);
    EXPECT_EQ(round_to(DType::kBF16, r), r);
  }
}

TEST(DType, EncodeAndDecodeRoundTripStorage) {
  const float values[] = {0.5f, -0.25f, 3.0f, 1.0f / 3.0f, 0.0f};
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    unsigned char bytes[5 * 4];
    float back[5];
    encode_elements(t, values, 5, bytes);
    decode_elements(t, bytes, 5, back);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(back[i], round_to(t, values[i])) << dtype_name(t) << " " << i;
  }
}

// FP8 rows of the table: sizes, names, what may be C, and the codec the table holds is the
// exact one of registry/fp8.h, for every one of the 256 patterns of each format.
TEST(DType, Fp8RowsOfTheTable) {
  EXPECT_EQ(dtype_bytes(DType::kE4M3), 1);
  EXPECT_EQ(dtype_bytes(DType::kE5M2), 1);
  EXPECT_EQ(dtype_info(DType::kE4M3).significand_bits, 4);
  EXPECT_EQ(dtype_info(DType::kE5M2).significand_bits, 3);
  EXPECT_EQ(dtype_info(DType::kE4M3).kernel_code, 3);
  EXPECT_EQ(dtype_info(DType::kE5M2).kernel_code, 4);
  EXPECT_EQ(dtype_info(DType::kE4M3).max_finite, 448.0f);
  EXPECT_EQ(dtype_info(DType::kE5M2).max_finite, 57344.0f);
  EXPECT_EQ(*parse_dtype("e4m3"), DType::kE4M3);
  EXPECT_EQ(*parse_dtype("e5m2"), DType::kE5M2);
  const std::vector<std::string> names = dtype_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "e4m3"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "e5m2"), names.end());
  EXPECT_NE(parse_dtype("fp8").status().message().find("e4m3"), std::string::npos);
  for (DType t : {DType::kE4M3, DType::kE5M2}) {
    EXPECT_TRUE(dtype_is_fp8(t));
    EXPECT_FALSE(dtype_can_be_output(t));
    EXPECT_EQ(default_c_dtype(t), DType::kBF16);
    EXPECT_TRUE(std::isnan(bits_to_float(t, dtype_info(t).nan_bits)));
  }
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    EXPECT_FALSE(dtype_is_fp8(t));
    EXPECT_TRUE(dtype_can_be_output(t));
    EXPECT_EQ(default_c_dtype(t), t);
  }
  EXPECT_EQ(output_dtype_list(), "fp32, fp16 or bf16");
}

TEST(DType, EveryFp8PatternRoundTripsThroughTheTable) {
  for (DType t : {DType::kE4M3, DType::kE5M2}) {
    const Fp8Format f = t == DType::kE4M3 ? Fp8Format::kE4M3 : Fp8Format::kE5M2;
    unsigned char bytes[256], again[256];
    for (int b = 0; b < 256; ++b) bytes[b] = static_cast<unsigned char>(b);
    float values[256];
    decode_elements(t, bytes, 256, values);
    encode_elements(t, values, 256, again);
    for (int b = 0; b < 256; ++b) {
      const float want = fp8_to_float(f, std::uint8_t(b));
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(values[b])) << dtype_name(t) << " " << b;
        EXPECT_TRUE(std::isnan(bits_to_float(t, std::uint32_t(b)))) << dtype_name(t) << " " << b;
        EXPECT_EQ(again[b], 0x7f) << dtype_name(t) << " NaN " << b;  // every NaN encodes as 0x7F
        continue;
      }
      EXPECT_EQ(std::memcmp(&values[b], &want, 4), 0) << dtype_name(t) << " " << b;  // bit-exact, -0 too
      EXPECT_EQ(bits_to_float(t, std::uint32_t(b)), values[b]) << dtype_name(t) << " " << b;
      if (std::isinf(want)) {
        // E5M2's infinities saturate on the way back: inputs are cast with saturation.
        EXPECT_EQ(again[b], (b & 0x80) | 0x7b) << dtype_name(t) << " " << b;
        continue;
      }
      EXPECT_EQ(again[b], b) << dtype_name(t) << " pattern " << b;
      EXPECT_EQ(float_to_bits(t, values[b]), std::uint32_t(b));
      EXPECT_EQ(round_to(t, values[b]), values[b]);
    }
  }
}

TEST(DType, Fp8EncodingSaturatesAndRoundsToNearestEven) {
  EXPECT_EQ(round_to(DType::kE4M3, 1000.0f), 448.0f);
  EXPECT_EQ(round_to(DType::kE4M3, -1e30f), -448.0f);
  EXPECT_EQ(round_to(DType::kE5M2, 1e9f), 57344.0f);
  EXPECT_EQ(round_to(DType::kE4M3, std::numeric_limits<float>::infinity()), 448.0f);
  // 1 + 1/16 lies halfway between 1 and 1.125 (3 mantissa bits): even is 1.
  EXPECT_EQ(round_to(DType::kE4M3, 1.0625f), 1.0f);
  EXPECT_EQ(round_to(DType::kE4M3, 1.1875f), 1.25f);  // halfway between 1.125 and 1.25: even is 1.25
  EXPECT_EQ(round_to(DType::kE5M2, 1.125f), 1.0f);    // 2 mantissa bits: halfway between 1 and 1.25
}

TEST(DType, NanFillWordIsNanInEveryLane) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kE4M3, DType::kE5M2}) {
    const std::uint32_t w = nan_fill_word(t);
    float lanes[4];
    const int n = 4 / dtype_bytes(t);
    decode_elements(t, &w, std::size_t(n), lanes);
    for (int i = 0; i < n; ++i) EXPECT_TRUE(std::isnan(lanes[i])) << dtype_name(t) << " lane " << i;
  }
}

}  // namespace
}  // namespace tilesmith
