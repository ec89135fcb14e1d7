#include "registry/dtype.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "registry/fp8.h"

namespace tilesmith {
namespace {

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

// The table's codecs, on raw bits held in a 32-bit word.
std::uint32_t enc_f32(float x) { return bits_of(x); }
float dec_f32(std::uint32_t b) { return float_of(b); }
std::uint32_t enc_f16(float x) { return float_to_f16(x); }
float dec_f16(std::uint32_t b) { return f16_to_float(std::uint16_t(b)); }
std::uint32_t enc_bf16(float x) { return float_to_bf16(x); }
float dec_bf16(std::uint32_t b) { return float_of((b & 0xffffu) << 16); }
// FP8 inputs are cast with saturation (a value past the largest finite one becomes it, not
// NaN or infinity), as cuBLASLt's and the FP8 GEMM libraries' quantisation does.
std::uint32_t enc_e4m3(float x) { return float_to_fp8(Fp8Format::kE4M3, x, Fp8Overflow::kSaturate); }
float dec_e4m3(std::uint32_t b) { return fp8_to_float(Fp8Format::kE4M3, std::uint8_t(b)); }
std::uint32_t enc_e5m2(float x) { return float_to_fp8(Fp8Format::kE5M2, x, Fp8Overflow::kSaturate); }
float dec_e5m2(std::uint32_t b) { return fp8_to_float(Fp8Format::kE5M2, std::uint8_t(b)); }

template <std::uint32_t (*Encode)(float)>
void encode_with(const float* src, std::size_t count, unsigned char* out) {
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint16_t b = std::uint16_t(Encode(src[i]));
    std::memcpy(out + 2 * i, &b, 2);
  }
}
template <float (*Decode)(std::uint32_t)>
void decode_with(const unsigned char* in, std::size_t count, float* dst) {
  for (std::size_t i = 0; i < count; ++i) {
    std::uint16_t b;
    std::memcpy(&b, in + 2 * i, 2);
    dst[i] = Decode(b);
  }
}

// type, name, bytes, significand bits, kernel code, NaN bits, output, matrix rate, largest
// finite value, codec.
constexpr DTypeInfo kTable[] = {
    {DType::kF32, "fp32", 4, 24, 0, 0, true, 0, 3.40282347e38f, enc_f32, dec_f32},
    {DType::kF16, "fp16", 2, 11, 1, 0x7e00, true, 1, 65504.0f, enc_f16, dec_f16},
    {DType::kBF16, "bf16", 2, 8, 2, 0x7fc0, true, 1, 3.38953139e38f, enc_bf16, dec_bf16},
    {DType::kE4M3, "e4m3", 1, 4, 3, 0x7f, false, 2, 448.0f, enc_e4m3, dec_e4m3},
    {DType::kE5M2, "e5m2", 1, 3, 4, 0x7f, false, 2, 57344.0f, enc_e5m2, dec_e5m2},
};

}  // namespace

const DTypeInfo& dtype_info(DType t) {
  for (const DTypeInfo& i : kTable)
    if (i.type == t) return i;
  // Every enumerator has a row (dtype_test checks it): reaching here is a programmer error.
  std::abort();
}
const char* dtype_name(DType t) { return dtype_info(t).name; }
std::vector<std::string> dtype_names() {
  std::vector<std::string> out;
  for (const DTypeInfo& i : kTable) out.push_back(i.name);
  return out;
}
int dtype_bytes(DType t) { return dtype_info(t).bytes; }
double unit_roundoff(DType t) { return std::ldexp(1.0, -dtype_info(t).significand_bits); }
bool dtype_is_fp8(DType t) { return dtype_info(t).bytes == 1; }
bool dtype_can_be_output(DType t) { return dtype_info(t).output; }

std::string output_dtype_list() {
  std::vector<std::string> names;
  for (const DTypeInfo& i : kTable)
    if (i.output) names.push_back(i.name);
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

DType default_c_dtype(DType input) { return dtype_can_be_output(input) ? input : DType::kBF16; }

std::uint32_t nan_fill_word(DType t) {
  const DTypeInfo& i = dtype_info(t);
  if (i.bytes == 4) return 0x7fc00000u;
  std::uint32_t word = 0;
  for (int at = 0; at < 4; at += i.bytes) word |= std::uint32_t(i.nan_bits) << (8 * at);
  return word;
}

Result<DType> parse_dtype(const std::string& s) {
  if (s == "f32" || s == "float") return DType::kF32;
  if (s == "f16" || s == "half") return DType::kF16;
  for (const DTypeInfo& i : kTable)
    if (s == i.name) return i.type;
  std::string names;
  for (const DTypeInfo& i : kTable) names += (names.empty() ? "" : ", ") + std::string(i.name);
  return Status::invalid("unknown data type '" + s + "' (expected one of " + names + ")");
}

std::uint32_t float_to_bits(DType t, float x) { return dtype_info(t).encode(x); }
float bits_to_float(DType t, std::uint32_t bits) { return dtype_info(t).decode(bits); }

std::uint16_t float_to_half_bits(DType t, float x) { return std::uint16_t(float_to_bits(t, x)); }
float half_bits_to_float(DType t, std::uint16_t b) { return bits_to_float(t, b); }

float round_to(DType t, float x) {
  if (t == DType::kF32) return x;
  return bits_to_float(t, float_to_bits(t, x));
}

// Raw bits are stored little-endian in dtype_bytes(t) bytes, as the GPUs read them.
void encode_elements(DType t, const float* src, std::size_t count, void* dst) {
  const DTypeInfo& info = dtype_info(t);
  auto* out = static_cast<unsigned char*>(dst);
  switch (info.bytes) {
    case 4: std::memcpy(dst, src, count * sizeof(float)); return;
    case 2:
      // The half types by name, so the conversion inlines: outputs of 16 M elements are
      // decoded for every candidate.
      if (t == DType::kBF16) return encode_with<enc_bf16>(src, count, out);
      return encode_with<enc_f16>(src, count, out);
    default:
      for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<unsigned char>(info.encode(src[i]));
      return;
  }
}

void decode_elements(DType t, const void* src, std::size_t count, float* dst) {
  const DTypeInfo& info = dtype_info(t);
  const auto* in = static_cast<const unsigned char*>(src);
  switch (info.bytes) {
    case 4: std::memcpy(dst, src, count * sizeof(float)); return;
    case 2:
      if (t == DType::kBF16) return decode_with<dec_bf16>(in, count, dst);
      return decode_with<dec_f16>(in, count, dst);
    default:
      for (std::size_t i = 0; i < count; ++i) dst[i] = info.decode(in[i]);
      return;
  }
}

}  // namespace tilesmith
