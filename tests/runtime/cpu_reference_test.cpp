// The CPU reference against a plain triple loop, in every layout, with alpha/beta and
// epilogues; and the tolerance: honest fp32 accumulation passes, a TF32 shortcut, a
// skipped K tile, a wrong element and an unwritten (NaN) element fail.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "runtime/cpu_reference.h"

namespace tilesmith {
namespace {

double elem(const std::vector<float>& v, Layout l, std::int64_t r, std::int64_t c, std::int64_t rows, std::int64_t cols) {
  return l == Layout::kRowMajor ? v[r * cols + c] : v[c * rows + r];
}

// fp32 accumulation in a chosen order, as a kernel would; `round_inputs` mimics TF32.
std::vector<float> simulate_kernel(const GemmProblem& p, const ProblemData& d, bool tf32, std::int64_t k_limit) {
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
      for (std::int64_t k = 0; k < k_limit; ++k)
        acc += tf(float(elem(d.a, p.a_layout, m, k, p.m, p.k))) * tf(float(elem(d.b, p.b_layout, k, n, p.k, p.n)));
      std::size_t i = p.c_layout == Layout::kRowMajor ? std::size_t(m) * p.n + n : std::size_t(n) * p.m + m;
      float v = float(p.alpha) * acc;
      if (p.beta != 0) v += float(p.beta) * d.c0[i];
      c[i] = float(apply_epilogue(p, d.bias, v, m, n));
    }
  return c;
}

GemmProblem make(std::int64_t m, std::int64_t n, std::int64_t k, const char* layout) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  EXPECT_TRUE(apply_layout_code(layout, p).ok());
  return p;
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

TEST(CpuReference, MatchesATripleLoopInEveryLayoutWithBetaAndEpilogues) {
  for (const char* layout : {"NN", "NT", "TN", "TT"})
    for (Layout cl : {Layout::kRowMajor, Layout::kColMajor})
      for (Epilogue epi : {Epilogue::kNone, Epilogue::kBiasRow, Epilogue::kBiasCol, Epilogue::kGelu, Epilogue::kLeakyRelu}) {
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

}  // namespace
}  // namespace tilesmith
