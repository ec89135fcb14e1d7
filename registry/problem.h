#pragma once
// A GEMM problem: C = alpha * op(A) * op(B) + beta * C, then an epilogue, with
// A of shape M x K, B of shape K x N and C of shape M x N, each stored row- or
// column-major. Plain value type; thread-compatible.

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "registry/dtype.h"

namespace tilesmith {

enum class Layout { kRowMajor, kColMajor };
// kBiasGelu: GELU(v + bias[n]), a Linear layer's bias (one per output column) and its activation.
// New kinds go at the end: the numbers are the C API's TS_EPILOGUE_* and the kernels' TS_EPILOGUE.
enum class Epilogue { kNone, kBiasRow, kBiasCol, kRelu, kLeakyRelu, kGelu, kBiasGelu };

const char* epilogue_name(Epilogue e);  // "none", "bias_row", ...
// Whether the epilogue reads a bias vector, and whether that has one entry per column of C (N
// entries) rather than per row (M).
bool epilogue_has_bias(Epilogue e);
bool epilogue_bias_per_column(Epilogue e);
Result<Epilogue> parse_epilogue(const std::string& s);

// How FP8 inputs are scaled: a stored element q of A (or B) stands for q * its scale, an fp32
// factor, so D = alpha * sum_k (a * sa)(b * sb) + beta * C.
//   kNone: no scale (every input type).
//   kPerTensor: one factor for all of A (GemmProblem::scale_a) and one for B (scale_b): the
//     form cuBLASLt takes on Hopper.
//   kBlock: one factor per 1 x kScaleBlock stretch of a row of A along K and one per
//     kScaleBlock x kScaleBlock block of B, generated with the inputs
//     (runtime/cpu_reference.h, ProblemData::scale_a / scale_b).
// Scaling needs FP8 inputs. New kinds go at the end.
enum class Scaling { kNone, kPerTensor, kBlock };
constexpr std::int64_t kScaleBlock = 128;
const char* scaling_name(Scaling s);  // "none", "per_tensor", "block"
Result<Scaling> parse_scaling(const std::string& s);

struct GemmProblem {
  std::int64_t m = 0, n = 0, k = 0;
  DType a_type = DType::kF32;    // element type of A and B
  DType b_type = DType::kF32;
  DType c_type = DType::kF32;    // element type of C (input when beta != 0, and output)
  DType accumulate = DType::kF32;
  Layout a_layout = Layout::kRowMajor;
  Layout b_layout = Layout::kRowMajor;
  Layout c_layout = Layout::kRowMajor;
  double alpha = 1.0;
  double beta = 0.0;
  Epilogue epilogue = Epilogue::kNone;
  double epilogue_slope = 0.01;  // LeakyReLU only
  // FP8 scaling. scale_a and scale_b are per-tensor factors (kPerTensor; 1 otherwise), used as
  // fp32 values: positive, finite, normal.
  Scaling scaling = Scaling::kNone;
  double scale_a = 1.0;
  double scale_b = 1.0;

  // "NN", "NT", "TN", "TT": N = A (or B) row-major as written, T = column-major
  // (i.e. stored transposed). C is described separately.
  std::string layout_code() const;
  // Leading dimensions of densely packed storage.
  std::int64_t lda() const { return a_layout == Layout::kRowMajor ? k : m; }
  std::int64_t ldb() const { return b_layout == Layout::kRowMajor ? n : k; }
  std::int64_t ldc() const { return c_layout == Layout::kRowMajor ? n : m; }
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
  // The fewest bytes a GEMM must move: A and B once, C written once (and read when beta != 0).
  double min_bytes() const;
  // "4096x4096x4096 fp32 NN" plus C's type where it differs ("C:fp32"), C's layout and
  // non-default alpha/beta/epilogue/scaling.
  std::string describe() const;
  // Stable key over every field that changes the answer or the kernel (for caches, best_config).
  // The scaling fields are appended only where scaling is not kNone, so the keys of problems
  // recorded before FP8 stay what they were.
  std::string key() const;
  Status validate() const;
};

// The factor per-tensor FP8 scales put on alpha: scale_a * scale_b, each rounded to fp32 as the
// library and the kernels take them (D = alpha sum (sa a)(sb b) = (alpha sa sb) sum a b); 1 for
// every other scaling.
double per_tensor_alpha_scale(const GemmProblem& p);

// Sets a_layout/b_layout from "NN", "NT", "TN" or "TT".
Status apply_layout_code(const std::string& code, GemmProblem& p);

// The JSON form: "dtype", "c_dtype" (default: the input type, bf16 for FP8 inputs), ...,
// and "scaling", "scale_a", "scale_b" only where scaling is not none, so files written before
// FP8 read as unscaled problems and unscaled problems are written as before.
void to_json(nlohmann::json& j, const GemmProblem& p);
Result<GemmProblem> problem_from_json(const nlohmann::json& j);
// The scaling fields of a key() ("scaling=per_tensor,scale_a=...,scale_b=..."), applied to p;
// a key without them leaves p unscaled. For rows that keep the key but no scaling columns.
Status apply_scaling_from_key(const std::string& key, GemmProblem& p);

}  // namespace tilesmith
