#include "runtime/worker/health.h"

#include <algorithm>
#include <cmath>

namespace tilesmith::worker {

void HealthTracker::on_check_failed(Clock::time_point now) {
  ++failed_checks_;
  // initial, 2x, 4x, ... capped; the exponent is bounded so it cannot overflow.
  const double grown = options_.backoff_initial_s * std::pow(2.0, std::min(failed_checks_ - 1, 30));
  last_backoff_s_ = std::min(options_.backoff_max_s, grown);
  next_attempt_ = now + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(last_backoff_s_));
}

}  // namespace tilesmith::worker
