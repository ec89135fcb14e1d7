#include "registry/dtype.h"

#include <cmath>
#include <cstring>

namespace tilesmith {
namespace {

constexpr DTypeInfo kTable[] = {
    {DType::kF32, "fp32", 4, 24, 0, 0},
    {DType::kF16, "fp16", 2, 11, 1, 0x7e00},
    {DType::kBF16, "bf16", 2, 8, 2, 0x7fc0},
};

std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float float_of(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

std::uint16_t float_to_bf16(float x) {
  std::uint32_t u = bits_of(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN stays a quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                      // round to nearest even
  return std::uint16_t(u >> 16);
}

// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits.
std::uint16_t float_to_f16(float x) {
  const std::uint32_t u = bits_of(x);
  const std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return 0x7e00;                 // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00;         // rounds to >= 65520: infinity
  if (abs < 0x33000001u) return sign;                   // below half the smallest subnormal: zero
  const int exp = int(abs >> 23) - 127;
  std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;   // 24-bit significand
  int shift;                                            // bits dropped from the 24-bit significand
  std::uint32_t base;
  if (exp < -14) {                                      // subnormal half: value = m * 2^-24
    shift = -exp - 1;                                   // 13 + (-14 - exp)
    base = 0;
  } else {
    shift = 13;
    base = std::uint32_t(exp + 15) << 10;
    mant &= 0x7fffffu;                                  // the implicit bit comes from base
  }
  const std::uint32_t kept = mant >> shift;
  const std::uint32_t rest = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
  std::uint32_t h = base + kept;                        // a carry into the exponent is correct
  if (rest > half || (rest == half && (kept & 1u))) ++h;
  return std::uint16_t(sign | h);
}

float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const int exp = (h >> 10) & 0x1f;
  const std::uint32_t frac = h & 0x3ffu;
  if (exp == 0) return float_of(sign) + (sign ? -1.0f : 1.0f) * std::ldexp(float(frac), -24);
  if (exp == 31) return float_of(sign | 0x7f800000u | (frac << 13));
  return float_of(sign | (std::uint32_t(exp - 15 + 127) << 23) | (frac << 13));
}

}  // namespace

const DTypeInfo& dtype_info(DType t) {
  for (const DTypeInfo& i : kTable)
    if (i.type == t) return i;
  return kTable[0];
}
const char* dtype_name(DType t) { return dtype_info(t).name; }
std::vector<std::string> dtype_names() {
  std::vector<std::string> out;
  for (const DTypeInfo& i : kTable) out.push_back(i.name);
  return out;
}
int dtype_bytes(DType t) { return dtype_info(t).bytes; }
double unit_roundoff(DType t) { return std::ldexp(1.0, -dtype_info(t).significand_bits); }

Result<DType> parse_dtype(const std::string& s) {
  if (s == "fp32" || s == "f32" || s == "float") return DType::kF32;
  if (s == "fp16" || s == "f16" || s == "half") return DType::kF16;
  if (s == "bf16") return DType::kBF16;
  return Status::invalid("unknown data type '" + s + "' (expected fp32, fp16 or bf16)");
}

std::uint16_t float_to_half_bits(DType t, float x) { return t == DType::kBF16 ? float_to_bf16(x) : float_to_f16(x); }
float half_bits_to_float(DType t, std::uint16_t b) {
  return t == DType::kBF16 ? float_of(std::uint32_t(b) << 16) : f16_to_float(b);
}

float round_to(DType t, float x) {
  if (t == DType::kF32) return x;
  return half_bits_to_float(t, float_to_half_bits(t, x));
}

void encode_elements(DType t, const float* src, std::size_t count, void* dst) {
  if (t == DType::kF32) {
    std::memcpy(dst, src, count * sizeof(float));
    return;
  }
  auto* out = static_cast<std::uint16_t*>(dst);
  for (std::size_t i = 0; i < count; ++i) out[i] = float_to_half_bits(t, src[i]);
}

void decode_elements(DType t, const void* src, std::size_t count, float* dst) {
  if (t == DType::kF32) {
    std::memcpy(dst, src, count * sizeof(float));
    return;
  }
  const auto* in = static_cast<const std::uint16_t*>(src);
  for (std::size_t i = 0; i < count; ++i) dst[i] = half_bits_to_float(t, in[i]);
}

}  // namespace tilesmith
