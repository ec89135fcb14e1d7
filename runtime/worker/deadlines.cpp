#include "runtime/worker/deadlines.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tilesmith::worker {
namespace {
std::chrono::milliseconds from_seconds(double s) {
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(std::max(0.0, s) * 1000.0)));
}
}  // namespace

std::chrono::milliseconds DeadlinePolicy::start() const { return from_seconds(options_.start_s); }

std::chrono::milliseconds DeadlinePolicy::compile() const {
  if (options_.compile_s > 0) return from_seconds(options_.compile_s);
  std::lock_guard<std::mutex> lock(mu_);
  return from_seconds(
      std::max(options_.min_compile_s, options_.compile_factor * slowest_compile_ms_ / 1000.0));
}

std::chrono::milliseconds DeadlinePolicy::run(const GemmProblem* problem, bool first_use) const {
  double seconds = 0;
  if (options_.run_s > 0) {
    seconds = options_.run_s;
  } else {
    const double t = problem ? expected_kernel_ms(*problem) : 0.0;
    const double phase_ms =
        timing_.warmup_ms + timing_.max_sampling_ms + (timing_.min_samples + 22) * t;
    seconds = std::max(options_.min_run_s, options_.run_factor * phase_ms / 1000.0);
  }
  if (problem && first_use && options_.reference_gflops > 0)
    seconds += problem->flops() / (options_.reference_gflops * 1e9) + 2.0;
  return from_seconds(seconds);
}

void DeadlinePolicy::note_compile_ms(double ms) {
  if (!(ms > 0)) return;
  std::lock_guard<std::mutex> lock(mu_);
  slowest_compile_ms_ = std::max(slowest_compile_ms_, ms);
}

void DeadlinePolicy::note_kernel_ms(const GemmProblem& problem, double median_ms) {
  if (!(median_ms > 0)) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = best_ms_.emplace(problem.key(), median_ms);
  if (!inserted) it->second = std::min(it->second, median_ms);
}

double DeadlinePolicy::expected_kernel_ms(const GemmProblem& problem) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = best_ms_.find(problem.key());
  return it == best_ms_.end() ? 0.0 : it->second;
}

std::string seconds_text(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", double(d.count()) / 1000.0);
  return buf;
}

}  // namespace tilesmith::worker
