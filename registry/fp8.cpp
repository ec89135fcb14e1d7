#include "registry/fp8.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tilesmith {
namespace {

// The format as numbers: exponent and mantissa widths, the bias, and the encodings the
// special values take.
struct Layout {
  int exponent_bits, mantissa_bits, bias;
  std::uint8_t max_finite;  // magnitude bits of the largest finite value
  std::uint8_t overflow;    // magnitude bits of a non-saturated overflow (NaN or infinity)
};

Layout layout(Fp8Format f) {
  return f == Fp8Format::kE4M3 ? Layout{4, 3, 7, 0x7E, 0x7F} : Layout{5, 2, 15, 0x7B, 0x7C};
}

// Magnitude bits that are not finite numbers (E4M3: 0x7F; E5M2: 0x7C..0x7F).
bool special(Fp8Format f, std::uint8_t magnitude) {
  return f == Fp8Format::kE4M3 ? magnitude == 0x7F : magnitude >= 0x7C;
}

}  // namespace

const char* fp8_format_name(Fp8Format f) { return f == Fp8Format::kE4M3 ? "e4m3" : "e5m2"; }

float fp8_max_finite(Fp8Format f) { return fp8_to_float(f, layout(f).max_finite); }

float fp8_to_float(Fp8Format f, std::uint8_t bits) {
  const Layout l = layout(f);
  const bool negative = bits & 0x80;
  const std::uint8_t magnitude = bits & 0x7F;
  if (special(f, magnitude)) {
    if (f == Fp8Format::kE5M2 && magnitude == 0x7C)
      return negative ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    return std::numeric_limits<float>::quiet_NaN();
  }
  const int e = magnitude >> l.mantissa_bits;
  const int m = magnitude & ((1 << l.mantissa_bits) - 1);
  // Subnormal: m x 2^(1 - bias - M); normal: (2^M + m) x 2^(e - bias - M). Both exact in fp32.
  const float v = e == 0 ? std::ldexp(float(m), 1 - l.bias - l.mantissa_bits)
                         : std::ldexp(float((1 << l.mantissa_bits) + m), e - l.bias - l.mantissa_bits);
  return negative ? -v : v;
}

std::uint8_t float_to_fp8(Fp8Format f, float x, Fp8Overflow overflow) {
  const Layout l = layout(f);
  if (std::isnan(x)) return 0x7F;
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const std::uint8_t too_big = overflow == Fp8Overflow::kSaturate ? l.max_finite : l.overflow;
  if (std::isinf(x)) return sign | too_big;
  const double a = std::fabs(double(x));
  if (a == 0) return sign;
  // The quantum at a's binade (or the subnormal one below the smallest normal): a / q is
  // exact in double, and nearbyint rounds it to nearest, ties to even, in the default mode.
  const int min_exponent = 1 - l.bias;  // of the smallest normal
  int exponent;
  std::frexp(a, &exponent);             // a = f x 2^exponent, f in [0.5, 1)
  const int binade = std::max(exponent - 1, min_exponent);
  const double n = std::nearbyint(std::ldexp(a, l.mantissa_bits - binade));
  // n counts quanta: below 2^M only in the subnormal binade, 2^(M+1) when rounding carried
  // into the next binade. The encoding is then (binade - min_exponent) x 2^M + n for both.
  const long code = long(binade - min_exponent) * (1L << l.mantissa_bits) + long(n);
  if (code > l.max_finite) return sign | too_big;
  return sign | std::uint8_t(code);
}

}  // namespace tilesmith
