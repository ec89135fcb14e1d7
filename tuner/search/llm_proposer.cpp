#include "tuner/search/llm_proposer.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>

#include "llm/prompt_builder.h"
#include "llm/reply_parser.h"
#include "llm/schema.h"

namespace tilesmith {
namespace {

std::string describe_trial(const Trial& t, Objective objective) {
  std::string s = outcome_name(t.outcome);
  if (t.outcome == Outcome::kOk && t.score) {
    char buf[48];
    std::snprintf(buf, sizeof buf, ", %.4g %s", *t.score, objective_unit(objective));
    s += buf;
  }
  return s;
}

}  // namespace

LlmProposer::LlmProposer(std::shared_ptr<llm::LlmProvider> provider, LlmProposerOptions options)
    : provider_(std::move(provider)), options_(std::move(options)) {}

std::string LlmProposer::name() const { return "llm:" + provider_->model(); }

ProposalBatch LlmProposer::propose(const ProposalRequest& request) {
  ProposalBatch batch;
  batch.proposer = name();
  last_usage_ = {};
  last_http_attempts_ = 0;
  if (!request.space) {
    batch.status = Status::invalid("LlmProposer: the request has no parameter space");
    return batch;
  }
  const ParamSpace& space = *request.space;
  static const std::vector<Trial> kNoHistory;
  const std::vector<Trial>& history = request.history ? *request.history : kNoHistory;

  // Views, not copies: the history can be 100k trials long.
  std::vector<llm::TrialView> views;
  views.reserve(history.size());
  std::map<std::reference_wrapper<const Config>, std::size_t, std::less<Config>> tried;
  for (std::size_t i = 0; i < history.size(); ++i) {
    const Trial& t = history[i];
    views.push_back({&t.config, t.outcome, t.score, t.message, t.median_ms});
    tried.emplace(std::cref(t.config), i);  // keeps the first trial of a config
  }

  const std::string schema = llm::candidates_schema_json(space);
  llm::PromptInputs inputs;
  inputs.device = options_.device;
  inputs.template_name = options_.template_name;
  inputs.template_description = options_.template_description;
  inputs.space = &space;
  inputs.problem = options_.problem;
  inputs.history = views;
  inputs.previous_rejections = previous_rejections_;
  if (request.pending) inputs.pending = *request.pending;
  if (options_.objective != Objective::kTime) {
    inputs.objective = objective_description(options_.objective);
    inputs.objective_unit = objective_unit(options_.objective);
  }
  if (request.related)
    for (const auto& r : *request.related)
      inputs.related.push_back({r.name, r.problem, r.template_name, r.config, r.ms, r.vendor_ratio});
  inputs.count = request.count;
  inputs.token_budget = options_.prompt_token_budget;
  // In json_object and text modes the provider adds the schema to the system message.
  inputs.reserved_tokens = llm::estimate_tokens(schema) + 32;
  auto prompt = llm::build_prompt(inputs);
  if (!prompt.ok()) {
    batch.status = prompt.status();
    return batch;
  }

  llm::CompletionRequest completion;
  completion.system = prompt->system;
  completion.user = prompt->user;
  completion.schema_name = llm::kCandidatesSchemaName;
  completion.schema_json = schema;
  completion.max_output_tokens = options_.max_output_tokens;
  completion.temperature = options_.temperature;
  auto reply = provider_->complete(completion);
  if (!reply.ok()) {
    batch.status = reply.status().with_context("LLM endpoint " + provider_->endpoint());
    return batch;
  }
  last_usage_ = reply->usage;
  last_http_attempts_ = reply->http_attempts;

  std::vector<std::string> reasons;
  if (reply->refusal) {
    std::string said = llm::sanitize_text(*reply->refusal, 300);
    batch.rejected.push_back({said, "the model refused: " + said, batch.proposer});
    reasons.push_back("you refused to answer; please propose configurations");
  } else {
    llm::ParseLimits limits;
    limits.max_candidates = std::max(options_.max_candidates_read, 2 * request.count);
    auto lookup = [&](const Config& c) -> std::optional<std::string> {
      auto it = tried.find(std::cref(c));
      if (it == tried.end()) return std::nullopt;
      return describe_trial(history[it->second], options_.objective);
    };
    llm::ParsedReply parsed = llm::parse_candidates(reply->text, space, request.context, lookup, limits);
    if (reply->truncated) {
      std::string note = "the reply was cut off at the output token limit";
      if (parsed.accepted.empty()) {
        batch.rejected.push_back({llm::sanitize_text(reply->text, 240), note, batch.proposer});
        reasons.push_back(note + "; keep the rationales short");
      }
    }
    for (auto& c : parsed.accepted) {
      // Extra valid candidates beyond the count are dropped, not rejected: nothing is
      // wrong with them, and the next generation may ask again.
      if (static_cast<int>(batch.proposals.size()) >= request.count) break;
      batch.proposals.push_back({std::move(c.config), std::move(c.rationale), batch.proposer});
    }
    for (auto& r : parsed.rejected) {
      reasons.push_back(r.reason);
      batch.rejected.push_back({std::move(r.raw), std::move(r.reason), batch.proposer});
    }
    if (parsed.candidates_seen > 0 && parsed.candidates_seen < request.count)
      reasons.push_back("you sent " + std::to_string(parsed.candidates_seen) + " candidates; " +
                        std::to_string(request.count) + " were asked for");
  }
  if (static_cast<int>(reasons.size()) > options_.max_rejections_remembered)
    reasons.erase(reasons.begin(), reasons.end() - options_.max_rejections_remembered);
  previous_rejections_ = std::move(reasons);
  return batch;
}

}  // namespace tilesmith
