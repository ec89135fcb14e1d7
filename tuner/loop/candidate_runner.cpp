#include "tuner/loop/candidate_runner.h"

#include "base/host_name.h"

namespace tilesmith {

std::string device_label(const DeviceFacts& device) {
  return device.backend + ":" + std::to_string(device.ordinal);
}

InlineRunner::InlineRunner(Evaluator& evaluator) : evaluator_(evaluator), device_(device_label(evaluator.device())) {}

void InlineRunner::submit(RunnerCandidate candidate, OnSend on_send) {
  queue_.emplace_back(std::move(candidate), std::move(on_send));
}

std::optional<RunnerResult> InlineRunner::next(std::chrono::milliseconds) {
  if (queue_.empty()) return std::nullopt;
  auto [candidate, on_send] = std::move(queue_.front());
  queue_.pop_front();
  if (on_send) on_send(candidate.tag, local_host_name(), device_);
  RunnerResult r;
  r.tag = candidate.tag;
  r.host = local_host_name();
  r.device = device_;
  const auto t0 = std::chrono::steady_clock::now();
  r.evaluation = evaluator_.evaluate_racing(*candidate.tmpl, candidate.problem, candidate.config, candidate.race_ms);
  r.eval_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::vector<std::uint64_t> InlineRunner::cancel_queued() {
  std::vector<std::uint64_t> tags;
  for (const auto& [c, on_send] : queue_) tags.push_back(c.tag);
  queue_.clear();
  return tags;
}

}  // namespace tilesmith
