#pragma once
// The inputs of an FP8 problem with its scaling (registry/problem.h, Scaling): the values an
// operand stores and the scale factors they are multiplied by, drawn so that the scaling
// matters, and the exact values the reference multiplies (runtime/cpu_reference.h).
//
//   none:       stored = uniform [-1, 1) rounded to the type, as for every type.
//   per_tensor: stored = x / scale rounded (saturating) to the type, x uniform in [-1, 1);
//               the problem's scale_a / scale_b (e.g. 2^-8 for e4m3 puts x at +-256, inside
//               448; a scale that is too large leaves small values as subnormals or zero, one
//               too small saturates: the reference uses what is stored either way).
//   block:      x = uniform [-1, 1) * 2^e, e drawn per scale block from -12..0 (|x| < 1, as
//               for every type, so C stays in range), the blocks' magnitudes differing by up
//               to 2^12: one scale for the tensor would leave the small blocks a few
//               significant bits or none (e4m3's normals span 2^15, its subnormals fewer
//               bits). Each block's scale is its largest |x| / the type's largest finite
//               value (an fp32), stored = x / scale rounded to the type, so every block's
//               largest value sits at the top of the range. Scales of A: M x ceil(K/128) row-major, scale_a[m * kb + k / 128];
//               of B: ceil(K/128) x ceil(N/128) row-major, scale_b[(k / 128) * nb + n / 128].
// Deterministic for (problem, seed). Pure functions; thread-safe.

#include <cstdint>
#include <optional>
#include <vector>

#include "registry/problem.h"

namespace tilesmith {

enum class Operand { kA, kB };

struct ScaledOperand {
  std::vector<float> values;  // stored, in the operand's layout, exact in its element type
  std::vector<float> scales;  // empty (none), one factor (per_tensor) or the block grid
};

ScaledOperand make_scaled_operand(const GemmProblem& p, Operand which, std::uint64_t seed);

// The factor every element of an operand shares: 1 without scales, the one factor per-tensor;
// nullopt for block scales (scale_of per element).
std::optional<float> single_scale(const GemmProblem& p, const std::vector<float>& scales);

// The scale of element (row, col) of operand `which` (A: M x K, B: K x N): 1 without scales.
float scale_of(const GemmProblem& p, Operand which, const std::vector<float>& scales, std::int64_t row,
               std::int64_t col);

// What each stored element stands for, stored * scale, in double (exact: the product of an
// FP8 value and an fp32 scale has at most 28 significant bits), in the operand's layout.
std::vector<double> dequantize(const GemmProblem& p, Operand which, const std::vector<float>& values,
                               const std::vector<float>& scales);

}  // namespace tilesmith
