#pragma once
// The LLM proposer: builds the prompt from the request (space, constraints, history) plus
// what it was constructed with (device facts, template, problem), asks the provider for a
// schema-constrained reply, and keeps only candidates that are JSON integers from the
// declared domains, pass ParamSpace::validate, are distinct within the reply and are not
// in the history. Everything else comes back as RejectedProposal with the reason, and the
// reasons of the last reply are also shown to the model in the next prompt.
//
// Status: non-ok when the endpoint failed after its retries (unavailable, 401, ...) or the
// prompt cannot fit the token budget; ok otherwise, even with zero proposals (a refusal,
// an unusable reply: see `rejected`).
//
// Latency: propose() blocks for the whole exchange, bounded by the provider's
// RetryPolicy::total_deadline. Not thread-safe (one propose() at a time), but it may run
// on a thread other than the evaluation loop's; see FallbackProposer and docs/llm.md.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llm/provider.h"
#include "registry/device_facts.h"
#include "registry/problem.h"
#include "tuner/records/objective.h"
#include "tuner/search/proposer.h"

namespace tilesmith {

struct LlmProposerOptions {
  DeviceFacts device;
  std::string template_name;
  std::string template_description;
  GemmProblem problem;
  // What the history's scores are (Trial::score): the prompt names it and asks for its lowest.
  Objective objective = Objective::kTime;
  int prompt_token_budget = 12000;  // system + user prompt (estimated at 4 bytes a token)
  int max_output_tokens = 16384;    // reply cap, reasoning included
  std::optional<double> temperature;  // sent only when set
  int max_candidates_read = 64;  // of one reply (at least 2 x count); the rest are ignored
  int max_rejections_remembered = 16;  // shown in the next prompt
};

class LlmProposer final : public Proposer {
 public:
  // `provider` is shared so that the caller can keep using it (e.g. for a status line).
  LlmProposer(std::shared_ptr<llm::LlmProvider> provider, LlmProposerOptions options);

  std::string name() const override;  // "llm:<model>"
  ProposalBatch propose(const ProposalRequest& request) override;

  // The last call's token usage and HTTP attempts (zero before the first call).
  const llm::TokenUsage& last_usage() const { return last_usage_; }
  int last_http_attempts() const { return last_http_attempts_; }

 private:
  std::shared_ptr<llm::LlmProvider> provider_;
  LlmProposerOptions options_;
  std::vector<std::string> previous_rejections_;
  llm::TokenUsage last_usage_;
  int last_http_attempts_ = 0;
};

}  // namespace tilesmith
