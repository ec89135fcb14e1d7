#pragma once
// The accuracy a correct kernel must reach for a problem, as three factors the reference
// turns into each element's tolerance and the norm limit (runtime/cpu_reference.h; the
// derivation is in docs/timing-and-tolerances.md):
//   |C - ref| <= 1.13 * magnitude * (|alpha| (|A||B|) + |beta| |C0| + |bias|)
//                + output * (|ref| + |pre-epilogue value|)
//   ||C - ref||_F / ||ref||_F <= norm
// Pure functions; thread-safe.

#include <cstdint>

#include "registry/problem.h"

namespace tilesmith {

// What an FP8 kernel may do and still be correct, as the tolerance assumes it (the promise an
// FP8 template makes; docs/timing-and-tolerances.md): Hopper's FP8 matrix instructions add
// their k32 products into the accumulator keeping about 14 significant bits (the DeepSeek-V3
// report measured it on H800); a kernel moves that partial sum into ordinary fp32 registers at
// least every kFp8PromotionK elements of K. The tolerance takes 13 bits, one fewer, and a
// truncation (not rounding) at every instruction.
constexpr int kFp8MmaK = 32;
constexpr int kFp8PromotionK = 256;
constexpr int kFp8MmaSignificandBits = 13;

struct ToleranceModel {
  double magnitude = 0;  // times the element's magnitude sum (before the 1.13 epilogue slope)
  double output = 0;     // times |ref| + |pre|
  double norm = 0;       // limit of the relative error norm
};

ToleranceModel tolerance_model(const GemmProblem& p);

}  // namespace tilesmith
