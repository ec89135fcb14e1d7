#include "runtime/scaled_inputs.h"

#include <algorithm>
#include <cmath>

#include "runtime/detail/splitmix.h"
#include "runtime/detail/stretches.h"

namespace tilesmith {
namespace {

struct Shape {
  std::int64_t rows, cols;
  bool row_major;
  DType type;
  std::size_t index(std::int64_t r, std::int64_t c) const {
    return row_major ? std::size_t(r) * cols + c : std::size_t(c) * rows + r;
  }
};

Shape shape_of(const GemmProblem& p, Operand which) {
  return which == Operand::kA ? Shape{p.m, p.k, p.a_layout == Layout::kRowMajor, p.a_type}
                              : Shape{p.k, p.n, p.b_layout == Layout::kRowMajor, p.b_type};
}

std::int64_t blocks(std::int64_t n) { return (n + kScaleBlock - 1) / kScaleBlock; }

// Which block scale element (r, c) uses: A's run 1 x 128 along K (its columns), B's are
// 128 x 128. The grid is row-major.
struct BlockGrid {
  std::int64_t rows, cols;
  bool a;
  std::size_t of(std::int64_t r, std::int64_t c) const {
    return a ? std::size_t(r) * cols + c / kScaleBlock
             : std::size_t(r / kScaleBlock) * cols + c / kScaleBlock;
  }
};

BlockGrid grid_of(const GemmProblem& p, Operand which) {
  return which == Operand::kA ? BlockGrid{p.m, blocks(p.k), true} : BlockGrid{blocks(p.k), blocks(p.n), false};
}

}  // namespace

ScaledOperand make_scaled_operand(const GemmProblem& p, Operand which, std::uint64_t seed) {
  const Shape s = shape_of(p, which);
  ScaledOperand out;
  out.values.resize(std::size_t(s.rows) * s.cols);
  if (p.scaling != Scaling::kBlock) {
    // One stream in storage order, drawn in stretches on threads (the same values; without
    // scaling the factor is 1, and a draw divided by 1 is the draw).
    const float scale = p.scaling == Scaling::kNone ? 1.0f : float(which == Operand::kA ? p.scale_a : p.scale_b);
    if (p.scaling == Scaling::kPerTensor) out.scales = {scale};
    detail::for_each_stretch(out.values.size(), detail::kStretch, detail::stretch_threads(),
                             [&](std::size_t, std::size_t first, std::size_t last) {
                               detail::SplitMix rng = detail::SplitMix::after(seed, first);
                               for (std::size_t i = first; i < last; ++i)
                                 out.values[i] = round_to(s.type, rng.uniform() / scale);
                             });
    return out;
  }
  detail::SplitMix rng{seed};
  // Block: a magnitude per block (its own stream, so the uniform draws are those of the other
  // modes), the values, each block's largest magnitude, then the scales and stored values.
  const BlockGrid g = grid_of(p, which);
  std::vector<float> magnitude(std::size_t(g.rows) * g.cols);
  detail::SplitMix exponents{seed ^ 0x5ca1ab1e5ca1ab1eULL};
  for (auto& m : magnitude) m = std::ldexp(1.0f, int(exponents.next() % 13) - 12);
  std::vector<float> amax(magnitude.size(), 0.0f);
  for (std::size_t i = 0; i < out.values.size(); ++i) {
    // Element i of the storage order: its row and column.
    const std::int64_t r = s.row_major ? std::int64_t(i) / s.cols : std::int64_t(i) % s.rows;
    const std::int64_t c = s.row_major ? std::int64_t(i) % s.cols : std::int64_t(i) / s.rows;
    const std::size_t b = g.of(r, c);
    out.values[i] = rng.uniform() * magnitude[b];
    amax[b] = std::max(amax[b], std::fabs(out.values[i]));
  }
  const float top = dtype_info(s.type).max_finite;
  out.scales.resize(amax.size());
  for (std::size_t b = 0; b < amax.size(); ++b) out.scales[b] = amax[b] > 0 ? amax[b] / top : 1.0f;
  for (std::size_t i = 0; i < out.values.size(); ++i) {
    const std::int64_t r = s.row_major ? std::int64_t(i) / s.cols : std::int64_t(i) % s.rows;
    const std::int64_t c = s.row_major ? std::int64_t(i) % s.cols : std::int64_t(i) / s.rows;
    out.values[i] = round_to(s.type, out.values[i] / out.scales[g.of(r, c)]);
  }
  return out;
}

std::optional<float> single_scale(const GemmProblem& p, const std::vector<float>& scales) {
  if (scales.empty()) return 1.0f;
  if (scales.size() == 1 && p.scaling == Scaling::kPerTensor) return scales[0];
  return std::nullopt;
}

float scale_of(const GemmProblem& p, Operand which, const std::vector<float>& scales, std::int64_t row,
               std::int64_t col) {
  if (auto one = single_scale(p, scales)) return *one;
  return scales[grid_of(p, which).of(row, col)];
}

std::vector<double> dequantize(const GemmProblem& p, Operand which, const std::vector<float>& values,
                               const std::vector<float>& scales) {
  const Shape s = shape_of(p, which);
  std::vector<double> out(values.size());
  if (const std::optional<float> one = single_scale(p, scales)) {
    // One factor for every element: a flat pass, on threads.
    const double factor = *one;
    detail::for_each_stretch(values.size(), detail::kStretch, detail::stretch_threads(),
                             [&](std::size_t, std::size_t first, std::size_t last) {
                               for (std::size_t i = first; i < last; ++i) out[i] = double(values[i]) * factor;
                             });
    return out;
  }
  for (std::int64_t r = 0; r < s.rows; ++r)
    for (std::int64_t c = 0; c < s.cols; ++c) {
      const std::size_t i = s.index(r, c);
      out[i] = double(values[i]) * double(scale_of(p, which, scales, r, c));
    }
  return out;
}

}  // namespace tilesmith
