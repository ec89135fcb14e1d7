#include "base/hash.h"

#include <cstdio>

namespace tilesmith {
namespace {
// FNV-1a 128-bit parameters (offset basis and prime from the FNV specification).
constexpr HashState kOffset =
    (static_cast<HashState>(0x6c62272e07bb0142ULL) << 64) | 0x62b821756295c58dULL;
constexpr HashState kPrime = (static_cast<HashState>(0x0000000001000000ULL) << 64) |
                                     0x000000000000013BULL;
}  // namespace

Hasher::Hasher() : state_(kOffset) {}

Hasher& Hasher::add(std::string_view bytes) {
  for (unsigned char c : bytes) {
    state_ ^= c;
    state_ *= kPrime;
  }
  return *this;
}

Hasher& Hasher::add_field(std::string_view bytes) {
  add(std::to_string(bytes.size()));
  add(":");
  return add(bytes);
}

std::string Hasher::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(state_ >> 64),
                static_cast<unsigned long long>(state_));
  return buf;
}

std::string hash_hex(std::string_view bytes) { return Hasher().add(bytes).hex(); }
std::string short_hash(std::string_view bytes) { return hash_hex(bytes).substr(0, 16); }

}  // namespace tilesmith
