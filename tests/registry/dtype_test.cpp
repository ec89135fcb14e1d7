// The dtype table's host conversions against the compiler's own _Float16 (fp16) and a
// bit-exact bf16 definition: rounding to nearest even, ties, subnormals, overflow, NaN.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "registry/dtype.h"

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

}  // namespace
}  // namespace tilesmith
