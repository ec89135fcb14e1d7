#pragma once
// splitmix64: fast, seedable, and good enough for test inputs. Shared by the input makers so
// one seed gives the same draws everywhere.

#include <cstdint>

namespace tilesmith::detail {

struct SplitMix {
  static constexpr std::uint64_t kGamma = 0x9e3779b97f4a7c15ULL;
  std::uint64_t s;
  // The generator seeded with `seed` after `draws` draws: the state only adds kGamma per
  // draw, so stretches of one stream can be drawn apart (and on threads), the same values.
  static SplitMix after(std::uint64_t seed, std::uint64_t draws) { return SplitMix{seed + draws * kGamma}; }
  std::uint64_t next() {
    std::uint64_t z = (s += kGamma);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1), 24 random bits: exactly representable in fp32.
  float uniform() { return float(std::int64_t(next() >> 40) - (1 << 23)) / float(1 << 23); }
};

}  // namespace tilesmith::detail
