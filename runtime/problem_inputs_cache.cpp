#include "runtime/problem_inputs_cache.h"

namespace tilesmith {

std::size_t ProblemInputs::bytes() const {
  return (data.a.size() + data.b.size() + data.c0.size() + data.bias.size() + data.scale_a.size() +
          data.scale_b.size()) * sizeof(float) +
         (reference.value.size() + reference.tolerance.size()) * sizeof(double);
}

std::shared_ptr<const ProblemInputs> ProblemInputsCache::get(const GemmProblem& problem) {
  const std::string key = problem.key();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->first != key) continue;
    entries_.splice(entries_.begin(), entries_, it);
    return entries_.front().second;
  }
  auto inputs = std::make_shared<ProblemInputs>();
  inputs->data = make_problem_data(problem, seed_);
  inputs->reference = compute_reference(problem, inputs->data);
  ++computed_;
  bytes_ += inputs->bytes();
  entries_.emplace_front(key, std::move(inputs));
  while (bytes_ > max_bytes_ && entries_.size() > 1) {
    bytes_ -= entries_.back().second->bytes();
    entries_.pop_back();
  }
  return entries_.front().second;
}

}  // namespace tilesmith
