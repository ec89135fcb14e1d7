// The CPU reference against a plain triple loop, in every layout, with alpha/beta and
// epilogues; and the tolerance: honest fp32 accumulation passes, a TF32 shortcut, a
// skipped K tile, a wrong element and an unwritten (NaN) element fail.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tests/problem_maker.h"
#include "runtime/cpu_reference.h"
#include "runtime/detail/splitmix.h"
#include "runtime/detail/stretches.h"
#include "runtime/problem_inputs_cache.h"
#include "runtime/scaled_inputs.h"
#include "runtime/tolerance.h"

namespace tilesmith {
namespace {

double elem(const std::vector<float>& v, Layout l, std::int64_t r, std::int64_t c, std::int64_t rows, std::int64_t cols) {
  return l == Layout::kRowMajor ? v[r * cols + c] : v[c * rows + r];
}

// fp32 accumulation in a chosen order, as a kernel would; `tf32` mimics TF32 inputs,
// `round_every` > 0 rounds the accumulator to bf16 every so many steps (a half-precision
// accumulator); the result is rounded once to C's type.
std::vector<float> simulate_kernel(const GemmProblem& p, const ProblemData& d, bool tf32, std::int64_t k_limit,
                                   int round_every = 0) {
  auto tf = [&](float x) {
    if (!tf32) return x;
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
    u = (u + 0x1000u) & ~0x1fffu;  // keep 10 mantissa bits, round to nearest
    std::memcpy(&x, &u, 4);
    return x;
  };
  std::vector<float> c(std::size_t(p.m) * p.n);
  for (std::int64_t m = 0; m < p.m; ++m)
    for (std::int64_t n = 0; n < p.n; ++n) {
      float acc = 0;
      for (std::int64_t k = 0; k < k_limit; ++k) {
        acc += tf(float(elem(d.a, p.a_layout, m, k, p.m, p.k))) * tf(float(elem(d.b, p.b_layout, k, n, p.k, p.n)));
        if (round_every > 0 && (k + 1) % round_every == 0) acc = round_to(DType::kBF16, acc);
      }
      std::size_t i = p.c_layout == Layout::kRowMajor ? std::size_t(m) * p.n + n : std::size_t(n) * p.m + m;
      float v = float(p.alpha) * acc;
      if (p.beta != 0) v += float(p.beta) * d.c0[i];
      c[i] = round_to(p.c_type, float(apply_epilogue(p, d.bias, v, m, n)));
    }
  return c;
}

GemmProblem make(std::int64_t m, std::int64_t n, std::int64_t k, const char* layout) {
  return testing::make_problem(m, n, k, layout);
}

TEST(CpuReference, InputsAreSeededNonZeroAndDeterministic) {
  GemmProblem p = make(33, 17, 65, "NN");
  auto d1 = make_problem_data(p, 5), d2 = make_problem_data(p, 5), d3 = make_problem_data(p, 6);
  EXPECT_EQ(d1.a, d2.a);
  EXPECT_NE(d1.a, d3.a);
  int zeros = 0;
  for (float x : d1.a) zeros += x == 0.0f;
  EXPECT_LT(zeros, 2);
  EXPECT_TRUE(d1.c0.empty());
}

// Inputs are drawn in stretches on threads: a stretch starts where the one stream is after
// the draws before it, so the values are those of one sequential stream, whatever the threads.
TEST(CpuReference, InputsDrawnInStretchesAreOneStream) {
  detail::SplitMix one{42};
  std::vector<float> sequential(detail::kStretch + 8);
  for (auto& x : sequential) x = one.uniform();
  for (std::size_t at : {std::size_t(0), std::size_t(1), detail::kStretch - 1, detail::kStretch, detail::kStretch + 7}) {
    detail::SplitMix jumped = detail::SplitMix::after(42, at);
    EXPECT_EQ(jumped.uniform(), sequential[at]) << at;
  }
  // A over two stretches: the second goes on from the first rather than starting again.
  GemmProblem p = make(2, 8, std::int64_t(detail::kStretch), "NN");
  const ProblemData d = make_problem_data(p, 5), again = make_problem_data(p, 5);
  EXPECT_EQ(d.a, again.a);
  int same = 0;
  for (std::size_t j = 0; j < 64; ++j) same += d.a[j] == d.a[detail::kStretch + j];
  EXPECT_LT(same, 4);
}

TEST(CpuReference, MatchesATripleLoopInEveryLayoutWithBetaAndEpilogues) {
  for (const char* layout : {"NN", "NT", "TN", "TT"})
    for (Layout cl : {Layout::kRowMajor, Layout::kColMajor})
      for (Epilogue epi : {Epilogue::kNone, Epilogue::kBiasRow, Epilogue::kBiasCol, Epilogue::kGelu, Epilogue::kLeakyRelu,
                           Epilogue::kBiasGelu}) {
        GemmProblem p = make(19, 23, 37, layout);
        p.c_layout = cl;
        p.alpha = 1.5;
        p.beta = -0.5;
        p.epilogue = epi;
        p.epilogue_slope = 0.1;
        auto d = make_problem_data(p, 3);
        Reference ref = compute_reference(p, d);
        auto c = simulate_kernel(p, d, false, p.k);
        AccuracyStats s = compare_with_reference(ref, c.data(), c.size());
        EXPECT_TRUE(accuracy_passes(s)) << layout << " epi " << epilogue_name(epi) << " rel " << s.rel_error_norm
                                        << " worst ratio " << s.worst_tolerance_ratio;
        EXPECT_LT(s.worst_tolerance_ratio, 0.2) << "the tolerance should have a wide margin over honest fp32";
      }
}

// K = 65536 puts B through the reference in blocks of 64 columns (4 M doubles a block): N =
// 197 is three whole blocks and a partial one. Every layout of A, B and C, with beta, and
// block-scaled FP8 (whose factors change along N every 128 columns, across blocks), against
// a plain loop in double over the values the inputs stand for: each block lands on its own
// columns of C with its own factors, and the tolerance's |A||B| on the same ones.
TEST(CpuReference, WeightsThroughTheReferenceInBlocksOfColumnsGiveThePlainLoopsResult) {
  std::vector<GemmProblem> problems;
  for (const char* layout : {"NN", "NT", "TN", "TT"})
    for (Layout cl : {Layout::kRowMajor, Layout::kColMajor}) {
      GemmProblem p = make(3, 197, 65536, layout);
      p.c_layout = cl;
      p.beta = 0.5;
      problems.push_back(p);
    }
  GemmProblem f8 = make(2, 197, 65536, "NT");
  f8.a_type = f8.b_type = DType::kE4M3;
  f8.c_type = DType::kBF16;
  f8.scaling = Scaling::kBlock;
  problems.push_back(f8);
  for (const GemmProblem& p : problems) {
    const ProblemData d = make_problem_data(p, 11);
    const Reference ref = compute_reference(p, d);
    const ToleranceModel model = tolerance_model(p);
    double worst_value = 0, worst_tolerance = 0;
    for (std::int64_t m = 0; m < p.m; ++m)
      for (std::int64_t n = 0; n < p.n; n += 7) {
        double sum = 0, magnitude = 0;
        for (std::int64_t k = 0; k < p.k; ++k) {
          const double a = elem(d.a, p.a_layout, m, k, p.m, p.k) * scale_of(p, Operand::kA, d.scale_a, m, k);
          const double b = elem(d.b, p.b_layout, k, n, p.k, p.n) * scale_of(p, Operand::kB, d.scale_b, k, n);
          sum += a * b;
          magnitude += std::fabs(a * b);
        }
        const std::size_t i = p.c_layout == Layout::kRowMajor ? std::size_t(m) * p.n + n : std::size_t(n) * p.m + m;
        const double c0 = p.beta != 0 ? p.beta * d.c0[i] : 0.0;
        const double expect = p.alpha * sum + c0;
        worst_value = std::max(worst_value, std::fabs(ref.value[i] - expect) / (std::fabs(p.alpha) * magnitude));
        // The tolerance's model (runtime/cpu_reference.h) from the plain loop's |A||B|.
        const double tolerance = 1.13 * model.magnitude * (std::fabs(p.alpha) * magnitude + std::fabs(c0)) +
                                 model.output * 2 * std::fabs(expect);
        worst_tolerance = std::max(worst_tolerance, std::fabs(ref.tolerance[i] / tolerance - 1));
      }
    const std::string what = p.layout_code() + (p.c_layout == Layout::kRowMajor ? " C row" : " C col");
    EXPECT_LT(worst_value, 1e-12) << what;
    EXPECT_LT(worst_tolerance, 1e-9) << what;
  }
}

// bias_gelu is GELU of the bias_col result: the bias has N entries, one per column, added first.
TEST(CpuReference, BiasGeluIsGeluOfTheColumnBias) {
  GemmProblem p = make(7, 9, 16, "NT");
  p.epilogue = Epilogue::kBiasCol;
  const auto d = make_problem_data(p, 4);
  const Reference biased = compute_reference(p, d);
  p.epilogue = Epilogue::kBiasGelu;
  const auto dg = make_problem_data(p, 4);
  ASSERT_EQ(dg.bias.size(), std::size_t(p.n));
  ASSERT_EQ(dg.bias, d.bias);
  const Reference fused = compute_reference(p, dg);
  ASSERT_EQ(fused.value.size(), biased.value.size());
  for (std::size_t i = 0; i < fused.value.size(); ++i) {
    const double v = biased.value[i];
    EXPECT_NEAR(fused.value[i], 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))), 1e-12) << i;
  }
}

TEST(CpuReference, ToleranceCatchesTf32SkippedTilesAndUnwrittenOutput) {
  GemmProblem p = make(64, 48, 1024, "NN");
  auto d = make_problem_data(p, 11);
  Reference ref = compute_reference(p, d);
  auto honest = simulate_kernel(p, d, false, p.k);
  EXPECT_TRUE(accuracy_passes(compare_with_reference(ref, honest.data(), honest.size())));

  auto tf32 = simulate_kernel(p, d, true, p.k);
  AccuracyStats t = compare_with_reference(ref, tf32.data(), tf32.size());
  EXPECT_FALSE(accuracy_passes(t)) << "TF32 rounding passed: rel " << t.rel_error_norm << " limit " << t.norm_tolerance;

  auto skipped = simulate_kernel(p, d, false, p.k - 16);
  EXPECT_FALSE(accuracy_passes(compare_with_reference(ref, skipped.data(), skipped.size())));

  auto one_wrong = honest;
  one_wrong[777] += 1e-2f;
  AccuracyStats w = compare_with_reference(ref, one_wrong.data(), one_wrong.size());
  EXPECT_FALSE(accuracy_passes(w));
  EXPECT_EQ(w.over_tolerance, 1);

  auto unwritten = honest;
  unwritten[5] = std::nanf("");
  AccuracyStats u = compare_with_reference(ref, unwritten.data(), unwritten.size());
  EXPECT_FALSE(accuracy_passes(u));
  EXPECT_EQ(u.non_finite, 1);
}

TEST(CpuReference, HalfInputsAreRoundedFromTheSameDrawsAsFp32) {
  GemmProblem p32 = make(40, 24, 72, "NN");
  p32.beta = 0.5;
  p32.epilogue = Epilogue::kBiasCol;
  auto d32 = make_problem_data(p32, 9);
  for (DType t : {DType::kF16, DType::kBF16}) {
    GemmProblem p = p32;
    p.a_type = p.b_type = p.c_type = t;
    auto d = make_problem_data(p, 9);
    ASSERT_EQ(d.a.size(), d32.a.size());
    for (const auto* pair : {&d.a, &d.b, &d.c0, &d.bias}) {
      const auto& v = *pair;
      const auto& v32 = pair == &d.a ? d32.a : pair == &d.b ? d32.b : pair == &d.c0 ? d32.c0 : d32.bias;
      ASSERT_EQ(v.size(), v32.size());
      for (std::size_t i = 0; i < v.size(); ++i) {
        EXPECT_EQ(round_to(t, v[i]), v[i]) << dtype_name(t) << " value not representable";
        EXPECT_LE(std::fabs(v[i] - v32[i]), unit_roundoff(t) * std::fabs(v32[i]) + 1e-7) << dtype_name(t);
      }
    }
  }
}

// Half inputs, fp32 accumulation, the epilogue in fp32 and one rounding to C's type: passes
// with a margin in every layout, C type and epilogue; a skipped K tile, a bf16 accumulator
// (with C in fp32) and an unwritten element fail.
TEST(CpuReference, HalfPrecisionToleranceIsDerivedFromTheOutputTypeAndK) {
  for (DType in : {DType::kF16, DType::kBF16})
    for (DType out : {DType::kF32, DType::kF16, DType::kBF16})
      for (const char* layout : {"NN", "NT", "TN", "TT"})
        for (Epilogue epi : {Epilogue::kNone, Epilogue::kBiasRow, Epilogue::kGelu, Epilogue::kLeakyRelu}) {
          GemmProblem p = make(24, 20, 777, layout);
          p.a_type = p.b_type = in;
          p.c_type = out;
          p.beta = epi == Epilogue::kNone ? 0.75 : 0.0;
          p.epilogue = epi;
          auto d = make_problem_data(p, 4);
          Reference ref = compute_reference(p, d);
          auto honest = simulate_kernel(p, d, false, p.k);
          AccuracyStats s = compare_with_reference(ref, honest.data(), honest.size());
          EXPECT_TRUE(accuracy_passes(s)) << p.describe() << " rel " << s.rel_error_norm << " worst ratio "
                                          << s.worst_tolerance_ratio;
          EXPECT_LT(s.worst_tolerance_ratio, 0.3) << p.describe() << ": too little margin for honest rounding";
          auto skipped = simulate_kernel(p, d, false, p.k - 16);
          EXPECT_FALSE(accuracy_passes(compare_with_reference(ref, skipped.data(), skipped.size()))) << p.describe();
        }
  GemmProblem p = make(32, 32, 4096, "NN");
  p.a_type = p.b_type = DType::kBF16;
  p.c_type = DType::kF32;
  auto d = make_problem_data(p, 2);
  Reference ref = compute_reference(p, d);
  auto half_acc = simulate_kernel(p, d, false, p.k, 64);
  AccuracyStats h = compare_with_reference(ref, half_acc.data(), half_acc.size());
  EXPECT_FALSE(accuracy_passes(h)) << "a bf16 accumulator passed an fp32 C: rel " << h.rel_error_norm;
  auto unwritten = simulate_kernel(p, d, false, p.k);
  unwritten[9] = std::nanf("");
  EXPECT_FALSE(accuracy_passes(compare_with_reference(ref, unwritten.data(), unwritten.size())));
}

}  // namespace
}  // namespace tilesmith

// A problem set comes back to its problems slice after slice: a worker computes each
// problem's inputs and reference once, while they fit the byte bound.
TEST(ProblemInputsCache, ComputesEachProblemOnceWhileItFits) {
  using tilesmith::GemmProblem;
  using tilesmith::ProblemInputsCache;
  GemmProblem p1, p2;
  p1.m = p1.n = p1.k = 48;
  p2.m = 32;
  p2.n = 64;
  p2.k = 16;
  ProblemInputsCache cache(7);
  auto a = cache.get(p1);
  auto b = cache.get(p2);
  auto a_again = cache.get(p1);
  EXPECT_EQ(cache.computed(), 2u);
  EXPECT_EQ(a_again.get(), a.get()) << "the kept inputs, not a copy";
  EXPECT_EQ(cache.kept(), 2u);
  EXPECT_EQ(b->reference.value.size(), 32u * 64u);
  // The same as a fresh computation: inputs depend on (problem, seed) only.
  const auto fresh = tilesmith::make_problem_data(p1, 7);
  EXPECT_EQ(a->data.a, fresh.a);
  EXPECT_EQ(a->reference.value, tilesmith::compute_reference(p1, fresh).value);

  // Room for one problem only: the least recently used goes, the newest always stays.
  ProblemInputsCache small(7, a->bytes());
  small.get(p1);
  small.get(p2);
  EXPECT_EQ(small.kept(), 1u);
  small.get(p2);
  EXPECT_EQ(small.computed(), 2u) << "the newest is kept";
  small.get(p1);
  EXPECT_EQ(small.computed(), 3u) << "p1 went to make room for p2";
  EXPECT_LE(small.kept_bytes(), a->bytes());
}

// The check of C's bytes in stretches on several threads gives what the plain check of the
// decoded values gives, for any thread count: a wrong element, a NaN, and C in bf16.
TEST(CpuReference, EncodedCheckInStretchesMatchesThePlainCheck) {
  using namespace tilesmith;
  // 2.5 stretches of 2^20 elements, so the last one is partial.
  const std::size_t n = (std::size_t(5) << 20) / 2;
  Reference ref;
  ref.value.resize(n);
  ref.tolerance.assign(n, 1e-2);
  for (std::size_t i = 0; i < n; ++i) ref.value[i] = std::sin(double(i) * 1e-3);
  ref.norm = 1000;
  ref.norm_tolerance = 1e-3;
  for (DType t : {DType::kF32, DType::kBF16}) {
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = round_to(t, float(ref.value[i]));
    values[123] += 0.5f;          // over its tolerance, in the first stretch
    values[(3u << 20) / 2] = NAN;  // in the second
    values[n - 1] += 0.25f;        // in the last, partial one
    std::vector<unsigned char> bytes(n * dtype_bytes(t));
    encode_elements(t, values.data(), n, bytes.data());
    std::vector<float> decoded(n);
    decode_elements(t, bytes.data(), n, decoded.data());
    const AccuracyStats plain = compare_with_reference(ref, decoded.data(), n);
    for (int threads : {1, 3, 8}) {
      const AccuracyStats s = compare_encoded_with_reference(ref, t, bytes.data(), n, threads);
      EXPECT_EQ(s.non_finite, plain.non_finite) << threads;
      EXPECT_EQ(s.over_tolerance, plain.over_tolerance) << threads;
      EXPECT_EQ(s.over_tolerance, 2);
      EXPECT_EQ(s.max_abs_error, plain.max_abs_error);
      EXPECT_EQ(s.worst_tolerance_ratio, plain.worst_tolerance_ratio);
      EXPECT_FALSE(accuracy_passes(s));
    }
    // Without the NaN the norm is finite and agrees up to the order of summation.
    values[(3u << 20) / 2] = float(ref.value[(3u << 20) / 2]);
    encode_elements(t, values.data(), n, bytes.data());
    decode_elements(t, bytes.data(), n, decoded.data());
    const AccuracyStats p2 = compare_with_reference(ref, decoded.data(), n);
    const AccuracyStats s2 = compare_encoded_with_reference(ref, t, bytes.data(), n, 4);
    EXPECT_EQ(s2.non_finite, 0);
    EXPECT_NEAR(s2.rel_error_norm, p2.rel_error_norm, 1e-9 * p2.rel_error_norm);
    EXPECT_EQ(s2.rel_error_norm, compare_encoded_with_reference(ref, t, bytes.data(), n, 1).rel_error_norm)
        << "the thread count does not change the sum";
  }
}
