#include "runtime/cpu_reference.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "registry/dtype.h"
#include "runtime/detail/splitmix.h"
#include "runtime/detail/stretches.h"
#include "runtime/scaled_inputs.h"
#include "runtime/tolerance.h"

#include <limits>

namespace tilesmith {
namespace {

using detail::SplitMix;

// Seeded values of type t (rounded from the same fp32 draws for every type, so one seed
// gives the same problem in each precision, up to rounding).
void fill(std::vector<float>& v, std::size_t n, std::uint64_t seed, DType t) {
  v.resize(n);
  detail::for_each_stretch(n, detail::kStretch, detail::stretch_threads(),
                           [&](std::size_t, std::size_t first, std::size_t last) {
                             SplitMix rng = SplitMix::after(seed, first);
                             for (std::size_t i = first; i < last; ++i) v[i] = round_to(t, rng.uniform());
                           });
}

}  // namespace

ProblemData make_problem_data(const GemmProblem& p, std::uint64_t seed) {
  ProblemData d;
  d.seed = seed;
  ScaledOperand a = make_scaled_operand(p, Operand::kA, seed * 4 + 1);
  ScaledOperand b = make_scaled_operand(p, Operand::kB, seed * 4 + 2);
  d.a = std::move(a.values);
  d.scale_a = std::move(a.scales);
  d.b = std::move(b.values);
  d.scale_b = std::move(b.scales);
  if (p.beta != 0.0) fill(d.c0, std::size_t(p.m) * p.n, seed * 4 + 3, p.c_type);
  if (epilogue_has_bias(p.epilogue))
    fill(d.bias, std::size_t(epilogue_bias_per_column(p.epilogue) ? p.n : p.m), seed * 4 + 4, p.c_type);
  return d;
}

namespace {
// GELU's tanh form, as cuBLASLt's GELU epilogues compute it.
double gelu(double v) { return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }
}  // namespace

double apply_epilogue(const GemmProblem& p, const std::vector<float>& bias, double v, std::int64_t m,
                      std::int64_t n) {
  switch (p.epilogue) {
    case Epilogue::kNone: return v;
    case Epilogue::kBiasRow: return v + bias[m];
    case Epilogue::kBiasCol: return v + bias[n];
    case Epilogue::kRelu: return v > 0 ? v : 0;
    case Epilogue::kLeakyRelu: return v > 0 ? v : v * p.epilogue_slope;
    case Epilogue::kGelu: return gelu(v);
    case Epilogue::kBiasGelu: return gelu(v + bias[n]);
  }
  return v;
}

Reference compute_reference(const GemmProblem& p, const ProblemData& d) {
  const std::size_t mn = std::size_t(p.m) * p.n;
  const int threads = detail::stretch_threads();
  // The values A stands for: stored times scale, exact in double (no scale: stored).
  const std::vector<double> a = dequantize(p, Operand::kA, d.a, d.scale_a);
  std::vector<double> abs_a(a.size());
  detail::for_each_stretch(a.size(), detail::kStretch, threads, [&](std::size_t, std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) abs_a[i] = std::fabs(a[i]);
  });

  // Work in C's layout: with CblasRowMajor a row-major operand is NoTrans and a
  // column-major one is its transpose (and the reverse for CblasColMajor).
  const bool c_row = p.c_layout == Layout::kRowMajor;
  const CBLAS_ORDER order = c_row ? CblasRowMajor : CblasColMajor;
  const bool a_row = p.a_layout == Layout::kRowMajor, b_row = p.b_layout == Layout::kRowMajor;
  const CBLAS_TRANSPOSE ta = (a_row == c_row) ? CblasNoTrans : CblasTrans;
  const CBLAS_TRANSPOSE tb = (b_row == c_row) ? CblasNoTrans : CblasTrans;

  Reference r;
  r.value.assign(mn, 0.0);
  std::vector<double> magnitude(mn, 0.0);
  if (p.beta != 0.0)
    for (std::size_t i = 0; i < mn; ++i) {
      r.value[i] = d.c0[i];
      magnitude[i] = std::fabs(d.c0[i]);
    }
  // B in blocks of C's columns: each block's values (stored times scale) and magnitudes in
  // double go into two buffers used again for the next block, rather than two whole copies
  // of B (at a 5120 x 55296 weight, 4.5 GB of fresh pages that every worker start faulted
  // in). A block is packed in B's own layout: row-major K x w (ld w) or column-major (ld K).
  const std::optional<float> one_factor = single_scale(p, d.scale_b);
  const std::int64_t block_n = std::max<std::int64_t>(64, (std::int64_t(1) << 22) / std::max<std::int64_t>(1, p.k));
  std::vector<double> b, abs_b;
  for (std::int64_t n0 = 0; n0 < p.n; n0 += block_n) {
    const std::int64_t w = std::min(block_n, p.n - n0);
    const std::int64_t outer = b_row ? p.k : w, inner = b_row ? w : p.k;  // packed element (o, i) at o * inner + i
    b.resize(std::size_t(p.k) * w);
    abs_b.resize(b.size());
    detail::for_each_stretch(std::size_t(outer), std::max<std::size_t>(1, std::size_t(outer) / (4 * threads) + 1),
                             threads, [&](std::size_t, std::size_t o0, std::size_t o1) {
                               for (std::size_t o = o0; o < o1; ++o)
                                 for (std::int64_t i = 0; i < inner; ++i) {
                                   const std::int64_t k = b_row ? std::int64_t(o) : i;
                                   const std::int64_t n = n0 + (b_row ? i : std::int64_t(o));
                                   const float stored = d.b[b_row ? std::size_t(k) * p.n + n : std::size_t(n) * p.k + k];
                                   const double v = double(stored) * (one_factor ? double(*one_factor)
                                                                                 : double(scale_of(p, Operand::kB, d.scale_b, k, n)));
                                   b[o * inner + i] = v;
                                   abs_b[o * inner + i] = std::fabs(v);
                                 }
                             });
    const int ldb = int(b_row ? w : p.k);
    const std::size_t at = c_row ? std::size_t(n0) : std::size_t(n0) * p.m;  // column n0 of C
    cblas_dgemm(order, ta, tb, int(p.m), int(w), int(p.k), p.alpha, a.data(), int(p.lda()), b.data(), ldb, p.beta,
                r.value.data() + at, int(p.ldc()));
    cblas_dgemm(order, ta, tb, int(p.m), int(w), int(p.k), std::fabs(p.alpha), abs_a.data(), int(p.lda()),
                abs_b.data(), ldb, std::fabs(p.beta), magnitude.data() + at, int(p.ldc()));
  }

  const ToleranceModel tol = tolerance_model(p);
  r.tolerance.resize(mn);
  double norm2 = 0;
  for (std::int64_t m = 0; m < p.m; ++m)
    for (std::int64_t n = 0; n < p.n; ++n) {
      const std::size_t i = c_row ? std::size_t(m) * p.n + n : std::size_t(n) * p.m + m;
      const double pre = r.value[i];
      double mag = magnitude[i];
      if (!d.bias.empty()) mag += std::fabs(d.bias[epilogue_bias_per_column(p.epilogue) ? n : m]);
      const double out = apply_epilogue(p, d.bias, pre, m, n);
      r.value[i] = out;
      // GELU's slope stays below 1.13, the others' below 1: the pre-epilogue bound carries over.
      r.tolerance[i] = 1.13 * tol.magnitude * mag + tol.output * (std::fabs(out) + std::fabs(pre)) +
                       std::numeric_limits<double>::min();
      norm2 += out * out;
    }
  r.norm = std::sqrt(norm2);
  r.norm_tolerance = tol.norm;
  return r;
}

namespace {
// What a stretch of C contributes to AccuracyStats; stretches are merged in order.
struct PartialAccuracy {
  std::int64_t non_finite = 0, over_tolerance = 0;
  double max_abs_error = 0, worst_tolerance_ratio = 0, diff2 = 0;
};

// Elements [first, first + n) of C, given as `c` (c[0] is element `first`).
void compare_range(const Reference& ref, const float* c, std::size_t first, std::size_t n, PartialAccuracy& p) {
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t i = first + j;
    const double v = c[j];
    if (!std::isfinite(v)) {
      ++p.non_finite;
      continue;
    }
    const double err = std::fabs(v - ref.value[i]);
    p.diff2 += err * err;
    p.max_abs_error = std::max(p.max_abs_error, err);
    const double ratio = err / ref.tolerance[i];
    p.worst_tolerance_ratio = std::max(p.worst_tolerance_ratio, ratio);
    if (ratio > 1.0) ++p.over_tolerance;
  }
}

AccuracyStats finish(const Reference& ref, const std::vector<PartialAccuracy>& parts, std::size_t count) {
  AccuracyStats s;
  s.checked = true;
  s.norm_tolerance = ref.norm_tolerance;
  double diff2 = 0;
  for (const auto& p : parts) {
    s.non_finite += p.non_finite;
    s.over_tolerance += p.over_tolerance;
    s.max_abs_error = std::max(s.max_abs_error, p.max_abs_error);
    s.worst_tolerance_ratio = std::max(s.worst_tolerance_ratio, p.worst_tolerance_ratio);
    diff2 += p.diff2;
  }
  if (count != ref.value.size()) s.non_finite += std::int64_t(ref.value.size()) - std::int64_t(count);
  s.rel_error_norm = ref.norm > 0 ? std::sqrt(diff2) / ref.norm : std::sqrt(diff2);
  if (s.non_finite > 0) {
    s.max_abs_error = std::numeric_limits<double>::infinity();
    s.rel_error_norm = std::numeric_limits<double>::infinity();
  }
  return s;
}
}  // namespace

AccuracyStats compare_with_reference(const Reference& ref, const float* c, std::size_t count) {
  std::vector<PartialAccuracy> parts(1);
  compare_range(ref, c, 0, std::min(count, ref.value.size()), parts[0]);
  return finish(ref, parts, count);
}

AccuracyStats compare_encoded_with_reference(const Reference& ref, DType type, const void* bytes,
                                             std::size_t count, int threads) {
  const std::size_t n = std::min(count, ref.value.size());
  // Fixed stretches, so the sums (and the figures) do not depend on the thread count.
  std::vector<PartialAccuracy> parts(std::max<std::size_t>(1, (n + detail::kStretch - 1) / detail::kStretch));
  const std::size_t elem = dtype_bytes(type);
  detail::for_each_stretch(n, detail::kStretch, threads, [&](std::size_t k, std::size_t first, std::size_t last) {
    thread_local std::vector<float> decoded;  // one buffer a thread: no fresh pages per stretch
    decoded.resize(last - first);
    decode_elements(type, static_cast<const unsigned char*>(bytes) + first * elem, last - first, decoded.data());
    compare_range(ref, decoded.data(), first, last - first, parts[k]);
  });
  return finish(ref, parts, count);
}

bool accuracy_passes(const AccuracyStats& a) {
  return a.checked && a.non_finite == 0 && a.over_tolerance == 0 && a.rel_error_norm <= a.norm_tolerance;
}

}  // namespace tilesmith
