#pragma once
// When to doubt the device rather than the candidate: after `losses_before_check`
// candidates in a row that cost the worker (crash, timeout, lost context), the next
// candidate waits for a known-good health check; when that fails too (or a worker
// cannot even start), the device backs off - exponentially, capped - before the next
// check, instead of burning candidates on a broken machine.
//
// Not thread-safe: the owner serialises calls.

#include <chrono>

namespace tilesmith::worker {

struct HealthOptions {
  int losses_before_check = 3;
  double backoff_initial_s = 5;
  double backoff_max_s = 300;
};

class HealthTracker {
 public:
  using Clock = std::chrono::steady_clock;
  explicit HealthTracker(HealthOptions options) : options_(options) {}

  // A candidate finished and its worker lived.
  void on_candidate_completed() { consecutive_losses_ = 0; }
  // A candidate cost its worker.
  void on_worker_lost() { ++consecutive_losses_; }
  // The next candidate must wait for a passing health check.
  bool check_due() const {
    return consecutive_losses_ >= options_.losses_before_check || failed_checks_ > 0;
  }
  void on_check_passed() {
    consecutive_losses_ = 0;
    failed_checks_ = 0;
  }
  // A health check failed or a worker did not start: wait before the next check.
  void on_check_failed(Clock::time_point now);
  bool backing_off(Clock::time_point now) const {
    return failed_checks_ > 0 && now < next_attempt_;
  }
  Clock::time_point next_attempt() const { return next_attempt_; }
  int consecutive_losses() const { return consecutive_losses_; }
  int failed_checks() const { return failed_checks_; }
  // The wait after the latest failure.
  double last_backoff_s() const { return last_backoff_s_; }

 private:
  HealthOptions options_;
  int consecutive_losses_ = 0;
  int failed_checks_ = 0;
  double last_backoff_s_ = 0;
  Clock::time_point next_attempt_{};
};

}  // namespace tilesmith::worker
