#pragma once
// Work over [0, n) in fixed stretches, spread over threads: what the CPU side of a
// measurement does to whole operands (drawing the inputs, converting them for the
// reference, comparing an output). Fixed stretches keep anything summed per stretch
// independent of the thread count. A worker computes a problem's inputs and reference
// every time it starts, and the re-timing starts a fresh worker every few rounds
// (tuner/loop/retime.h): at 128x55296x5120 that was ~20 s of a GPU waiting, each time.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace tilesmith::detail {

inline constexpr std::size_t kStretch = std::size_t(1) << 20;

// The threads worth using here: the machine's, at most 16.
inline int stretch_threads() {
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
}

// Calls f(k, first, last) for each stretch k of [0, n) (last - first <= stretch), on up to
// `threads` threads (this one among them); returns when all are done.
template <class F>
void for_each_stretch(std::size_t n, std::size_t stretch, int threads, F&& f) {
  const std::size_t stretches = (n + stretch - 1) / stretch;
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t k = next++; k < stretches; k = next++) f(k, k * stretch, std::min(n, (k + 1) * stretch));
  };
  const int helpers = static_cast<int>(std::min<std::size_t>(stretches, std::size_t(std::max(1, threads)))) - 1;
  std::vector<std::thread> pool;
  for (int t = 0; t < helpers; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

}  // namespace tilesmith::detail
