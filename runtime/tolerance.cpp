#include "runtime/tolerance.h"

#include <algorithm>
#include <cmath>

namespace tilesmith {

ToleranceModel tolerance_model(const GemmProblem& p) {
  const double u_acc = unit_roundoff(p.accumulate), u_out = unit_roundoff(p.c_type);
  const double sqrt_k = std::sqrt(double(p.k));
  ToleranceModel t;
  // A length-K dot product accumulated in fp32 (probabilistic bound, factor 16 of margin),
  // one rounding to C's type (factor 8), and the norm of both.
  t.magnitude = 16.0 * u_acc * sqrt_k;
  t.output = 8.0 * u_out;
  t.norm = 8.0 * u_acc * sqrt_k + 4.0 * u_out;
  if (dtype_is_fp8(p.a_type)) {
    // Products of FP8 values are exact (8 or 6 significant bits). Between two promotions the
    // tensor core truncates its sum to kFp8MmaSignificandBits once per instruction: at most
    // `steps` truncations, each below u_mma times the sum of |a||b| of the stretch so far, so
    // over all stretches at most steps * u_mma * sum |a||b| (a worst case, not a random walk:
    // truncation has one sign). Factor 2 of margin. The norm sees the typical error, half an
    // ulp per truncation with signs that vary between stretches and elements: steps * u_mma / 2,
    // with factor 8 of margin. Scale factors are applied in fp32 (per stretch for block
    // scaling), two roundings of a partial sum, inside the fp32 term above.
    const double u_mma = std::ldexp(1.0, -kFp8MmaSignificandBits);
    const double steps = std::ceil(double(std::min<std::int64_t>(p.k, kFp8PromotionK)) / kFp8MmaK);
    t.magnitude += 2.0 * steps * u_mma;
    t.norm += 4.0 * steps * u_mma;
  }
  return t;
}

}  // namespace tilesmith
