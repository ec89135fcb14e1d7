#pragma once
// Stable content hashes for cache keys and config identities. FNV-1a with a 128-bit
// state: not cryptographic, but stable across runs, platforms and versions, which is
// what keys in history.csv and the compile cache need.

#include <cstdint>
#include <string>
#include <string_view>

namespace tilesmith {

// __extension__ keeps -Wpedantic quiet about the GCC/Clang 128-bit integer.
__extension__ typedef unsigned __int128 HashState;

class Hasher {
 public:
  Hasher();
  Hasher& add(std::string_view bytes);
  // Adds a length prefix first, so ("ab","c") and ("a","bc") differ.
  Hasher& add_field(std::string_view bytes);
  // 32 lowercase hex digits.
  std::string hex() const;
  // The low 64 bits, for in-memory tables.
  std::uint64_t low64() const { return static_cast<std::uint64_t>(state_); }

 private:
  HashState state_;
};

// hex digest of one string
std::string hash_hex(std::string_view bytes);
// First 16 hex digits of hash_hex: short enough for a CSV column, long enough to be unique.
std::string short_hash(std::string_view bytes);

}  // namespace tilesmith
