// The OCP FP8 formats (registry/fp8.h): every one of the 256 patterns of each decoded against
// the specification's formula written out here, every finite pattern encoded back to itself,
// rounding to nearest even at every midpoint between neighbours (subnormal, normal, the
// binade steps, the overflow boundary), saturation and non-saturation, NaN, signed zero;
// and, where the CUDA headers are installed, fp32 -> FP8 against CUDA's own host conversion
// (__nv_cvt_float_to_fp8) over a sweep of fp32 bit patterns and every midpoint.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "registry/fp8.h"

#if TILESMITH_TEST_CUDA_FP8
#include <cuda_fp8.h>
#endif

namespace tilesmith {
namespace {

constexpr Fp8Format kFormats[] = {Fp8Format::kE4M3, Fp8Format::kE5M2};
constexpr Fp8Overflow kModes[] = {Fp8Overflow::kSaturate, Fp8Overflow::kNonSaturating};

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The specification's value of a pattern, computed from the fields with pow(), independently
// of the code under test. nullopt-like NaN as std::nan.
double spec_value(Fp8Format f, int bits) {
  const int E = f == Fp8Format::kE4M3 ? 4 : 5, M = f == Fp8Format::kE4M3 ? 3 : 2, bias = f == Fp8Format::kE4M3 ? 7 : 15;
  const double sign = (bits & 0x80) ? -1.0 : 1.0;
  const int e = (bits >> M) & ((1 << E) - 1), m = bits & ((1 << M) - 1);
  if (f == Fp8Format::kE4M3 && e == 15 && m == 7) return std::nan("");
  if (f == Fp8Format::kE5M2 && e == 31) return m == 0 ? sign * INFINITY : std::nan("");
  if (e == 0) return sign * std::pow(2.0, 1 - bias) * (m / std::pow(2.0, M));
  return sign * std::pow(2.0, e - bias) * (1.0 + m / std::pow(2.0, M));
}

TEST(Fp8, EveryPatternDecodesAsTheSpecificationSays) {
  for (Fp8Format f : kFormats) {
    int nans = 0, infs = 0;
    for (int b = 0; b < 256; ++b) {
      const double want = spec_value(f, b);
      const float got = fp8_to_float(f, std::uint8_t(b));
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << fp8_format_name(f) << " " << b;
        ++nans;
        continue;
      }
      infs += std::isinf(want);
      EXPECT_EQ(double(got), want) << fp8_format_name(f) << " pattern " << b;
      EXPECT_EQ(std::signbit(got), (b & 0x80) != 0) << b;  // -0 included
    }
    EXPECT_EQ(nans, f == Fp8Format::kE4M3 ? 2 : 6);
    EXPECT_EQ(infs, f == Fp8Format::kE4M3 ? 0 : 2);
  }
  EXPECT_EQ(fp8_max_finite(Fp8Format::kE4M3), 448.0f);
  EXPECT_EQ(fp8_max_finite(Fp8Format::kE5M2), 57344.0f);
  EXPECT_EQ(fp8_to_float(Fp8Format::kE4M3, 0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8_to_float(Fp8Format::kE4M3, 0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(fp8_to_float(Fp8Format::kE5M2, 0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(fp8_to_float(Fp8Format::kE5M2, 0x04), std::ldexp(1.0f, -14));
  EXPECT_TRUE(std::isinf(fp8_to_float(Fp8Format::kE5M2, 0xFC)) && fp8_to_float(Fp8Format::kE5M2, 0xFC) < 0);
}

TEST(Fp8, EveryFinitePatternEncodesBackToItself) {
  for (Fp8Format f : kFormats)
    for (Fp8Overflow o : kModes)
      for (int b = 0; b < 256; ++b) {
        const float v = fp8_to_float(f, std::uint8_t(b));
        if (!std::isfinite(v)) continue;
        EXPECT_EQ(float_to_fp8(f, v, o), b) << fp8_format_name(f) << " " << v;
      }
}

// Positive finite values in order, with their patterns.
std::vector<std::pair<float, int>> ladder(Fp8Format f) {
  std::vector<std::pair<float, int>> out;
  for (int b = 0; b < 0x80; ++b) {
    const float v = fp8_to_float(f, std::uint8_t(b));
    if (std::isfinite(v)) out.push_back({v, b});
  }
  return out;
}

TEST(Fp8, MidpointsTieToEvenAndTheirNeighboursRoundToTheNearer) {
  for (Fp8Format f : kFormats) {
    const auto l = ladder(f);
    for (std::size_t i = 0; i + 1 < l.size(); ++i) {
      const auto [lo, lo_bits] = l[i];
      const auto [hi, hi_bits] = l[i + 1];
      ASSERT_LT(lo, hi);
      const float mid = lo + (hi - lo) / 2;  // exact: both have few significant bits
      const int even = (lo_bits % 2 == 0) ? lo_bits : hi_bits;
      for (float s : {1.0f, -1.0f}) {
        const int neg = s < 0 ? 0x80 : 0;
        EXPECT_EQ(float_to_fp8(f, s * mid), even | neg) << fp8_format_name(f) << " between " << lo << " and " << hi;
        EXPECT_EQ(float_to_fp8(f, s * std::nextafter(mid, 0.0f)), lo_bits | neg) << lo;
        EXPECT_EQ(float_to_fp8(f, s * std::nextafter(mid, INFINITY)), hi_bits | neg) << hi;
      }
    }
  }
}

TEST(Fp8, OverflowSaturatesOrBecomesNanOrInfinity) {
  const float big = 1e6f, inf = std::numeric_limits<float>::infinity();
  // E4M3: 448 is the largest; 464 is the midpoint to the missing 480 and ties to 448 (even).
  EXPECT_EQ(float_to_fp8(Fp8Format::kE4M3, 464.0f, Fp8Overflow::kNonSaturating), 0x7E);
  EXPECT_EQ(float_to_fp8(Fp8Format::kE4M3, std::nextafter(464.0f, INFINITY), Fp8Overflow::kNonSaturating), 0x7F);
  EXPECT_EQ(float_to_fp8(Fp8Format::kE4M3, 470.0f, Fp8Overflow::kSaturate), 0x7E);
  EXPECT_EQ(float_to_fp8(Fp8Format::kE4M3, -big, Fp8Overflow::kSaturate), 0xFE);
  EXPECT_EQ(float_to_fp8(Fp8Format::kE4M3, -big, Fp8Overflow::kNonSaturating), 0xFF);
  EXPECT_EQ(float_to_fp8(Fp8Format::kE4M3, inf, Fp8Overflow::kSaturate), 0x7E);
  EXPECT_EQ(float_to_fp8(Fp8Format::kE4M3, inf, Fp8Overflow::kNonSaturating), 0x7F);
  // E5M2: 61440, the midpoint between 57344 (mantissa 11) and 65536, ties up to overflow.
  EXPECT_EQ(float_to_fp8(Fp8Format::kE5M2, 61440.0f, Fp8Overflow::kNonSaturating), 0x7C);
  EXPECT_EQ(float_to_fp8(Fp8Format::kE5M2, std::nextafter(61440.0f, 0.0f), Fp8Overflow::kNonSaturating), 0x7B);
  EXPECT_EQ(float_to_fp8(Fp8Format::kE5M2, 61440.0f, Fp8Overflow::kSaturate), 0x7B);
  EXPECT_EQ(float_to_fp8(Fp8Format::kE5M2, -inf, Fp8Overflow::kNonSaturating), 0xFC);
  EXPECT_EQ(float_to_fp8(Fp8Format::kE5M2, -inf, Fp8Overflow::kSaturate), 0xFB);
}

TEST(Fp8, NanZerosAndUnderflow) {
  for (Fp8Format f : kFormats)
    for (Fp8Overflow o : kModes) {
      EXPECT_EQ(float_to_fp8(f, std::numeric_limits<float>::quiet_NaN(), o), 0x7F);
      EXPECT_EQ(float_to_fp8(f, -std::numeric_limits<float>::quiet_NaN(), o), 0x7F);
      EXPECT_EQ(float_to_fp8(f, 0.0f, o), 0x00);
      EXPECT_EQ(float_to_fp8(f, -0.0f, o), 0x80);
      const float tiny = fp8_to_float(f, 0x01);
      EXPECT_EQ(float_to_fp8(f, tiny / 2, o), 0x00) << "half the smallest subnormal ties to zero (even)";
      EXPECT_EQ(float_to_fp8(f, -tiny / 4, o), 0x80);
      EXPECT_EQ(float_to_fp8(f, std::nextafter(tiny / 2, 1.0f), o), 0x01);
      EXPECT_EQ(float_to_fp8(f, std::numeric_limits<float>::denorm_min(), o), 0x00);
    }
}

#if TILESMITH_TEST_CUDA_FP8
// CUDA's host-side conversion as the oracle: a sweep over fp32 bit patterns (every 97th, both
// signs, NaN and infinity included) and every midpoint and its neighbours.
TEST(Fp8, AgreesWithCudasConversion) {
  auto cuda = [](Fp8Format f, Fp8Overflow o, float x) {
    return std::uint8_t(__nv_cvt_float_to_fp8(x, o == Fp8Overflow::kSaturate ? __NV_SATFINITE : __NV_NOSAT,
                                              f == Fp8Format::kE4M3 ? __NV_E4M3 : __NV_E5M2));
  };
  long checked = 0, differ = 0;
  auto check = [&](Fp8Format f, Fp8Overflow o, float x) {
    ++checked;
    const std::uint8_t ours = float_to_fp8(f, x, o), theirs = cuda(f, o, x);
    // Both say NaN, perhaps with another sign bit: the same value.
    const bool both_nan = std::isnan(fp8_to_float(f, ours)) && std::isnan(fp8_to_float(f, theirs));
    if (ours != theirs && !both_nan && ++differ <= 10)
      ADD_FAILURE() << fp8_format_name(f) << (o == Fp8Overflow::kSaturate ? " sat " : " nosat ") << x << ": ours 0x"
                    << std::hex << int(ours) << ", CUDA 0x" << int(theirs);
  };
  for (Fp8Format f : kFormats)
    for (Fp8Overflow o : kModes) {
      for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; u += 97) check(f, o, from_bits(std::uint32_t(u)));
      const auto l = ladder(f);
      for (std::size_t i = 0; i + 1 < l.size(); ++i) {
        const float mid = l[i].first + (l[i + 1].first - l[i].first) / 2;
        for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
          check(f, o, x);
          check(f, o, -x);
        }
      }
    }
  EXPECT_EQ(differ, 0) << "of " << checked;
}
#endif

}  // namespace
}  // namespace tilesmith
