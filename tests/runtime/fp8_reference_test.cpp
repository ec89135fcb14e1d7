// FP8 problems on the CPU: the inputs and their scales (runtime/scaled_inputs.h), the reference
// against a direct double-precision sum written out here, and the derived tolerance
// (runtime/tolerance.h): a kernel that accumulates as Hopper's FP8 tensor cores do (13-bit
// truncated partial sums, promoted to fp32 every 256 of K) passes; a wrong scale or a skipped
// K block fails.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "runtime/cpu_reference.h"
#include "runtime/scaled_inputs.h"
#include "runtime/tolerance.h"
#include "tests/problem_maker.h"

namespace tilesmith {
namespace {

GemmProblem fp8_problem(std::int64_t m, std::int64_t n, std::int64_t k, const char* layout, DType t, Scaling s,
                        DType c = DType::kF32) {
  GemmProblem p = testing::make_problem(m, n, k, layout);
  p.a_type = p.b_type = t;
  p.c_type = c;
  p.scaling = s;
  if (s == Scaling::kPerTensor) {
    // Not powers of two, so applying them is a real fp32 multiplication.
    p.scale_a = t == DType::kE4M3 ? 1.0 / 300 : 1.0 / 30000;
    p.scale_b = t == DType::kE4M3 ? 0.0037 : 3.1e-5;
  }
  EXPECT_TRUE(p.validate().ok()) << p.validate().message();
  return p;
}

double stored(const std::vector<float>& v, Layout l, std::int64_t r, std::int64_t c, std::int64_t rows,
              std::int64_t cols) {
  return l == Layout::kRowMajor ? v[std::size_t(r) * cols + c] : v[std::size_t(c) * rows + r];
}

// The scale of A(m, k) and B(k, n), from the layout the header promises, written out again.
double sa(const GemmProblem& p, const ProblemData& d, std::int64_t m, std::int64_t k) {
  if (p.scaling == Scaling::kNone) return 1;
  if (p.scaling == Scaling::kPerTensor) return float(p.scale_a);
  return d.scale_a[std::size_t(m) * ((p.k + 127) / 128) + k / 128];
}
double sb(const GemmProblem& p, const ProblemData& d, std::int64_t k, std::int64_t n) {
  if (p.scaling == Scaling::kNone) return 1;
  if (p.scaling == Scaling::kPerTensor) return float(p.scale_b);
  return d.scale_b[std::size_t(k / 128) * ((p.n + 127) / 128) + n / 128];
}

std::size_t c_index(const GemmProblem& p, std::int64_t m, std::int64_t n) {
  return p.c_layout == Layout::kRowMajor ? std::size_t(m) * p.n + n : std::size_t(n) * p.m + m;
}

// Truncation (toward zero) of an fp32 value to `bits` significant bits.
float truncate_to(float x, int bits) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  u &= ~((1u << (24 - bits)) - 1u);
  std::memcpy(&x, &u, 4);
  return x;
}

// What an FP8 kernel computes, with choices a wrong kernel makes: the tensor core's partial sum
// of each stretch of K (kFp8PromotionK, the most the tolerance allows; 128, the scale block, for
// block scaling), truncated to 13 bits after every 32 products, promoted into fp32, scaled in
// fp32 (per stretch for block scaling, once at the end per tensor); then alpha and beta in fp32,
// rounded to C's type. `skip_block` leaves one 128-block of K out; `a_scale_factor` multiplies
// A's scales (a wrong scale).
struct KernelModel {
  std::int64_t skip_block = -1;
  float a_scale_factor = 1;
  int mma_bits = kFp8MmaSignificandBits;
};

std::vector<float> fp8_kernel(const GemmProblem& p, const ProblemData& d, const KernelModel& km = {}) {
  const std::int64_t stretch = p.scaling == Scaling::kBlock ? 128 : kFp8PromotionK;
  std::vector<float> c(std::size_t(p.m) * p.n);
  for (std::int64_t m = 0; m < p.m; ++m)
    for (std::int64_t n = 0; n < p.n; ++n) {
      float acc = 0;
      for (std::int64_t k0 = 0; k0 < p.k; k0 += stretch) {
        float partial = 0;
        const std::int64_t k1 = std::min(p.k, k0 + stretch);
        for (std::int64_t s = k0; s < k1; s += kFp8MmaK) {
          if (s / 128 == km.skip_block) continue;
          double sum = partial;  // the instruction adds its exact products to the partial sum
          for (std::int64_t k = s; k < std::min(k1, s + kFp8MmaK); ++k)
            sum += stored(d.a, p.a_layout, m, k, p.m, p.k) * stored(d.b, p.b_layout, k, n, p.k, p.n);
          partial = truncate_to(float(sum), km.mma_bits);
        }
        if (p.scaling == Scaling::kBlock)
          partial *= float(sa(p, d, m, k0)) * km.a_scale_factor * float(sb(p, d, k0, n));
        acc += partial;
      }
      if (p.scaling == Scaling::kPerTensor) acc *= float(p.scale_a) * km.a_scale_factor * float(p.scale_b);
      float v = float(p.alpha) * acc;
      if (p.beta != 0) v += float(p.beta) * d.c0[c_index(p, m, n)];
      c[c_index(p, m, n)] = round_to(p.c_type, v);
    }
  return c;
}

AccuracyStats check(const Reference& r, const std::vector<float>& c) { return compare_with_reference(r, c.data(), c.size()); }

TEST(Fp8Reference, MatchesADirectDoubleSumWithPerTensorAndBlockScales) {
  for (DType t : {DType::kE4M3, DType::kE5M2})
    for (Scaling s : {Scaling::kNone, Scaling::kPerTensor, Scaling::kBlock})
      for (const char* layout : {"NN", "TN", "NT", "TT"}) {
        GemmProblem p = fp8_problem(37, 150, 300, layout, t, s);  // K and N end in a part block
        p.alpha = 0.75;
        p.beta = 0.5;
        p.c_layout = layout[0] == 'T' ? Layout::kColMajor : Layout::kRowMajor;
        const ProblemData d = make_problem_data(p, 3);
        const Reference r = compute_reference(p, d);
        for (std::int64_t m = 0; m < p.m; ++m)
          for (std::int64_t n = 0; n < p.n; ++n) {
            double want = 0;
            for (std::int64_t k = 0; k < p.k; ++k)
              want += stored(d.a, p.a_layout, m, k, p.m, p.k) * sa(p, d, m, k) *
                      (stored(d.b, p.b_layout, k, n, p.k, p.n) * sb(p, d, k, n));
            want = p.alpha * want + p.beta * d.c0[c_index(p, m, n)];
            ASSERT_NEAR(r.value[c_index(p, m, n)], want, 1e-12 * (1 + std::fabs(want)))
                << dtype_name(t) << " " << scaling_name(s) << " " << layout << " at " << m << "," << n;
          }
      }
}

TEST(Fp8Reference, StoredValuesAreFp8AndTheScalesMatter) {
  for (DType t : {DType::kE4M3, DType::kE5M2}) {
    const float top = dtype_info(t).max_finite;
    const GemmProblem p = fp8_problem(64, 256, 512, "NT", t, Scaling::kBlock);
    const ProblemData d = make_problem_data(p, 1);
    ASSERT_EQ(d.scale_a.size(), std::size_t(64 * 4));
    ASSERT_EQ(d.scale_b.size(), std::size_t(4 * 2));
    for (float x : d.a) ASSERT_EQ(round_to(t, x), x);
    for (float x : d.b) ASSERT_LE(std::fabs(x), top);
    // Each block of A holds its largest value at the top of the format's range.
    for (std::int64_t m = 0; m < p.m; ++m)
      for (std::int64_t kb = 0; kb < 4; ++kb) {
        float amax = 0;
        for (std::int64_t k = kb * 128; k < kb * 128 + 128; ++k) amax = std::max(amax, std::fabs(d.a[m * p.k + k]));
        ASSERT_GE(amax, 0.8f * top) << dtype_name(t) << " A block " << m << "," << kb;
      }
    // The blocks' magnitudes span far more than one FP8 scale could hold at full precision.
    const auto [lo, hi] = std::minmax_element(d.scale_a.begin(), d.scale_a.end());
    EXPECT_GE(*hi / *lo, 1024.0f) << dtype_name(t);
    // Per tensor: values are x / scale, spread over the range the scale puts them in.
    const GemmProblem q = fp8_problem(16, 16, 256, "NN", t, Scaling::kPerTensor);
    const ProblemData e = make_problem_data(q, 1);
    float amax = 0;
    for (float x : e.a) amax = std::max(amax, std::fabs(x));
    EXPECT_GT(amax, 0.9 / q.scale_a * 0.9) << dtype_name(t);
    EXPECT_LE(amax, top);
  }
}

TEST(Fp8Reference, AKernelAccumulatingAsTheTensorCoresDoPasses) {
  for (DType t : {DType::kE4M3, DType::kE5M2})
    for (Scaling s : {Scaling::kNone, Scaling::kPerTensor, Scaling::kBlock})
      for (DType c : {DType::kF32, DType::kBF16, DType::kF16}) {
        GemmProblem p = fp8_problem(48, 40, 1100, "TN", t, s, c);
        p.beta = c == DType::kF32 ? 0.0 : -0.5;
        const ProblemData d = make_problem_data(p, 7);
        const Reference r = compute_reference(p, d);
        const AccuracyStats a = check(r, fp8_kernel(p, d));
        EXPECT_TRUE(accuracy_passes(a)) << dtype_name(t) << " " << scaling_name(s) << " C " << dtype_name(c)
                                        << ": worst ratio " << a.worst_tolerance_ratio << ", norm "
                                        << a.rel_error_norm << " / " << a.norm_tolerance;
        // With a margin: the model is the worst reported precision, and it stays well inside.
        EXPECT_LT(a.worst_tolerance_ratio, 0.5) << dtype_name(t) << " " << scaling_name(s) << " " << dtype_name(c);
        EXPECT_LT(a.rel_error_norm, 0.5 * a.norm_tolerance) << dtype_name(t) << " " << scaling_name(s);
      }
}

TEST(Fp8Reference, AWrongScaleFails) {
  for (DType t : {DType::kE4M3, DType::kE5M2})
    for (Scaling s : {Scaling::kPerTensor, Scaling::kBlock})
      for (DType c : {DType::kF32, DType::kBF16}) {
        const GemmProblem p = fp8_problem(32, 48, 512, "NT", t, s, c);
        const ProblemData d = make_problem_data(p, 2);
        const Reference r = compute_reference(p, d);
        KernelModel wrong;
        wrong.a_scale_factor = 1.25f;  // a scale 25% off
        const AccuracyStats a = check(r, fp8_kernel(p, d, wrong));
        EXPECT_FALSE(accuracy_passes(a)) << dtype_name(t) << " " << scaling_name(s) << " C " << dtype_name(c);
        EXPECT_GT(a.over_tolerance, p.m * p.n / 2);
        // The scales left out altogether (a kernel that ignores them).
        std::vector<float> unscaled = fp8_kernel(p, d);
        GemmProblem plain = p;
        plain.scaling = Scaling::kNone;
        plain.scale_a = plain.scale_b = 1;
        unscaled = fp8_kernel(plain, d);
        EXPECT_FALSE(accuracy_passes(check(r, unscaled))) << dtype_name(t) << " " << scaling_name(s);
      }
  // Block scales taken from the wrong block: A's scales of the next row.
  GemmProblem p = fp8_problem(32, 48, 512, "NN", DType::kE4M3, Scaling::kBlock);
  ProblemData d = make_problem_data(p, 4);
  const Reference r = compute_reference(p, d);
  ProblemData shifted = d;
  std::rotate(shifted.scale_a.begin(), shifted.scale_a.begin() + 4, shifted.scale_a.end());
  EXPECT_FALSE(accuracy_passes(check(r, fp8_kernel(p, shifted))));
  EXPECT_TRUE(accuracy_passes(check(r, fp8_kernel(p, d))));
}

TEST(Fp8Reference, ASkippedKBlockFails) {
  for (DType t : {DType::kE4M3, DType::kE5M2})
    for (Scaling s : {Scaling::kNone, Scaling::kPerTensor, Scaling::kBlock})
      for (DType c : {DType::kF32, DType::kBF16})
        for (std::int64_t k : {std::int64_t(256), std::int64_t(4096)}) {
          const GemmProblem p = fp8_problem(16, 24, k, "NN", t, s, c);
          const ProblemData d = make_problem_data(p, 5);
          const Reference r = compute_reference(p, d);
          KernelModel skip;
          skip.skip_block = k / 128 - 1;  // the last block of K
          if (s == Scaling::kBlock) {
            // Block magnitudes differ by up to 2^12: a block far below the others is below the
            // output rounding of bf16 C too. Skip the heaviest one, the size of missing work
            // the check must see whatever the data.
            double heaviest = 0;
            for (std::int64_t kb = 0; kb < k / 128; ++kb) {
              double wa = 0, wb = 0;
              for (std::int64_t m = 0; m < p.m; ++m) wa += sa(p, d, m, kb * 128);
              for (std::int64_t n = 0; n < p.n; n += 128) wb += sb(p, d, kb * 128, n);
              if (wa * wb > heaviest) heaviest = wa * wb, skip.skip_block = kb;
            }
          }
          const AccuracyStats a = check(r, fp8_kernel(p, d, skip));
          EXPECT_FALSE(accuracy_passes(a)) << dtype_name(t) << " " << scaling_name(s) << " C " << dtype_name(c)
                                           << " K " << k << ": norm " << a.rel_error_norm << " / "
                                           << a.norm_tolerance;
          EXPECT_GT(a.rel_error_norm, 5 * a.norm_tolerance);
          EXPECT_TRUE(accuracy_passes(check(r, fp8_kernel(p, d))));
        }
}

TEST(Fp8Reference, ToleranceAddsTheTensorCorePartialSumsOnlyForFp8) {
  GemmProblem bf = testing::make_problem(64, 64, 4096);
  bf.a_type = bf.b_type = DType::kBF16;
  bf.c_type = DType::kF32;
  GemmProblem f8 = bf;
  f8.a_type = f8.b_type = DType::kE4M3;
  const ToleranceModel a = tolerance_model(bf), b = tolerance_model(f8);
  EXPECT_EQ(a.output, b.output);
  // 8 instructions of k32 between promotions, 2^-13 each: factor 2 on the element, 4 on the norm.
  EXPECT_DOUBLE_EQ(b.magnitude - a.magnitude, 2.0 * 8 * std::ldexp(1.0, -13));
  EXPECT_DOUBLE_EQ(b.norm - a.norm, 4.0 * 8 * std::ldexp(1.0, -13));
  // A short K has fewer instructions per stretch.
  f8.k = 40;
  bf.k = 40;
  EXPECT_DOUBLE_EQ(tolerance_model(f8).magnitude - tolerance_model(bf).magnitude, 2.0 * 2 * std::ldexp(1.0, -13));
}

}  // namespace
}  // namespace tilesmith
