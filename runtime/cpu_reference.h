#pragma once
// Inputs and the CPU reference for one GEMM problem. Inputs are seeded uniform random
// values in [-1, 1) (never all zeros, so unwritten or skipped work shows), rounded to the
// operand's type (A, B: a_type; C0 and bias: c_type); FP8 operands with scaling are drawn and
// quantised as runtime/scaled_inputs.h says, with their scales. The reference is computed from
// the values the inputs stand for (stored times scale, exact) in double precision with
// OpenBLAS, once per problem, together with a per-element tolerance (runtime/tolerance.h,
// docs/timing-and-tolerances.md):
//   |C - ref| <= 16 * u_acc * sqrt(K) * (|alpha| (|A||B|) + |beta| |C0| + |bias|)
//                + 8 * u_out * (|ref| + |pre-epilogue value|)
// and a norm check ||C - ref||_F / ||ref||_F <= 8 * u_acc * sqrt(K) + 4 * u_out, where
// u is the unit roundoff of the accumulator (u_acc) and output (u_out) types, plus the FP8
// tensor cores' reduced-precision partial sums for FP8 inputs. A TF32 shortcut, a skipped
// tile, a skipped K block, a wrong scale or a wrong index fails; honest rounding passes.

#include <cstdint>
#include <vector>

#include "registry/problem.h"
#include "runtime/evaluation.h"

namespace tilesmith {

struct ProblemData {
  // Stored in the problem's layouts, densely packed (leading dimensions from GemmProblem).
  // Held as fp32 values that the element type represents exactly; encode_elements
  // (registry/dtype.h) gives the bytes a kernel reads.
  std::vector<float> a, b, c0, bias;  // c0: C before the GEMM (read when beta != 0)
  // FP8 scales (runtime/scaled_inputs.h): empty without scaling, one factor per tensor, or
  // the block grids (A: M x ceil(K/128), B: ceil(K/128) x ceil(N/128), row-major).
  std::vector<float> scale_a, scale_b;
  std::uint64_t seed = 0;
};

// bias has M entries (bias_row) or N (bias_col), else is empty. c0 is filled only when
// beta != 0. Deterministic for (problem, seed).
ProblemData make_problem_data(const GemmProblem& problem, std::uint64_t seed);

struct Reference {
  std::vector<double> value;      // expected C, in C's layout
  std::vector<double> tolerance;  // per element, as above
  double norm = 0;                // ||ref||_F
  double norm_tolerance = 0;
};

// Uses OpenBLAS (dgemm) with its own threads.
Reference compute_reference(const GemmProblem& problem, const ProblemData& data);

// Compares a computed C (in C's layout) with the reference.
AccuracyStats compare_with_reference(const Reference& ref, const float* c, std::size_t count);
// The same from C's bytes in its element type (registry/dtype.h), decoded and compared in
// stretches of 2^20 elements on up to `threads` threads: the check of a large output
// (16 M elements at 4096 x 4096) takes a few milliseconds instead of tens. The figures
// do not depend on `threads`.
AccuracyStats compare_encoded_with_reference(const Reference& ref, DType type, const void* bytes,
                                             std::size_t count, int threads);
// true when nothing is non-finite, no element is over its tolerance and the norm passes.
bool accuracy_passes(const AccuracyStats& a);

// The epilogue applied to one pre-epilogue value (m, n index the bias).
double apply_epilogue(const GemmProblem& p, const std::vector<float>& bias, double v, std::int64_t m,
                      std::int64_t n);

}  // namespace tilesmith
